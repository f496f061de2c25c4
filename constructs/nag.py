"""Acknowledge a cdk-nag finding next to the code that causes it, always with the reason."""

from __future__ import annotations

import aws_cdk as cdk

from constructs import IConstruct


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """rule_id as cdk-nag prints it, e.g. 'AwsSolutions::AwsSolutions-IAM5[Resource::*]'."""
    cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=rule_id, reason=reason))


def arn_in_finding(scope: IConstruct, service: str, resource: str) -> str:
    """An ARN as cdk-nag prints it: literal where the stack's environment is known, else pseudo-params."""
    stack = cdk.Stack.of(scope)
    known = not cdk.Token.is_unresolved(stack.region)
    partition = stack.partition if known else "<AWS::Partition>"
    if service == "s3":  # S3 ARNs carry no region or account
        return f"arn:{partition}:s3:::{resource}"
    region, account = (stack.region, stack.account) if known else ("<AWS::Region>", "<AWS::AccountId>")
    return f"arn:{partition}:{service}:{region}:{account}:{resource}"


INLINE_POLICY_REASON = (
    "CDK grants write this role's DefaultPolicy, an inline policy scoped to this stack's resources; "
    "a managed policy could be attached to other principals, which we do not want"
)
