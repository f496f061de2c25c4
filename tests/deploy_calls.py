"""What CloudFormation asks IAM to authorise, as the execution role, to create, update, read and delete
every resource of a synthesised template: for each resource, each permission its type's handlers
declare (constructs/execution_policy.py reads the same registry schema), on the resource's ARN and with
the condition keys IAM sees for that request.

The ARNs are the ones CloudFormation gives the resources: an explicit name where the template sets one,
else `<stack name>-<logical id>-<suffix>` (CloudFormation's generated names for roles and functions,
observed; tests/stacks/test_execution_policy.py relies on the same prefix). Condition keys (Service
Authorization Reference, IAM and KMS): `iam:PermissionsBoundary`, the boundary the role has or is given;
`iam:PolicyARN`, the policy attached; `iam:PassedToService`, the service the resource hands its role to;
`iam:AWSServiceName`, the service-linked role's service.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from constructs.execution_policy import as_iam_action, handler_permissions, needed
from constructs.execution_policy_iam import SERVICE_LINKED
from tests.iam_lint import Resolver, Stack

# The property of each type that names a role it hands to a service, and that service.
PASSES_ROLE = {
    "AWS::Lambda::Function": ("Role", "lambda.amazonaws.com"),
    "AWS::SageMaker::Model": ("ExecutionRoleArn", "sagemaker.amazonaws.com"),
    "AWS::CodeBuild::Project": ("ServiceRole", "codebuild.amazonaws.com"),
    "AWS::StepFunctions::StateMachine": ("RoleArn", "states.amazonaws.com"),
    "AWS::ApplicationAutoScaling::ScalableTarget": ("RoleARN", "application-autoscaling.amazonaws.com"),
}
SUFFIX = "ABCDEFGH1234Z"  # CloudFormation's random suffix: 12 or 13 characters, the longer here
MAX_NAME = 64  # IAM role and Lambda function names
# Public generated names cut the stack part to 25 characters when both parts are long
# (`DataSagemakerAutomationSt-LambdaSagemakerServiceRol-…`, DESIGN.md 3.2d): observed, not documented.
STACK_PART = 25


def generated_name(stack_name: str, logical_id: str) -> str:
    """The worst case of the name CloudFormation gives a resource without one: `<stack>-<logical id>-<suffix>`,
    the stack part cut to 25 and the logical id to what is left when the whole exceeds 64 characters."""
    full = f"{stack_name}-{logical_id}-{SUFFIX}"
    if len(full) <= MAX_NAME:
        return full
    return f"{stack_name[:STACK_PART]}-{logical_id}"[: MAX_NAME - len(SUFFIX) - 1] + f"-{SUFFIX}"


@dataclass(frozen=True)
class Request:
    resource: str  # the template's logical ID
    action: str
    arn: str
    context: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        keys = ", ".join(f"{k}={v}" for k, v in self.context)
        return f"{self.resource}: {self.action} on {self.arn}" + (f" if {keys}" if keys else "")


class DeployResolver(Resolver):
    """Names as CloudFormation gives them, at their worst (`generated_name`); a role's ARN has its path."""

    NAMED = {
        "AWS::IAM::Role": "RoleName",
        "AWS::Lambda::Function": "FunctionName",
        "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
    }

    def physical_name(self, stack: Stack, logical_id: str) -> str:
        resource = stack.template["Resources"][logical_id]
        explicit = resource.get("Properties", {}).get(self.NAMED.get(resource["Type"], ""))
        return explicit if isinstance(explicit, str) else generated_name(stack.name, logical_id)

    def _arn(self, stack: Stack, name: str, resource_type: str) -> str:
        if resource_type == "AWS::IAM::Role":
            path = stack.template["Resources"][name].get("Properties", {}).get("Path", "/")
            return f"arn:{stack.partition}:iam::{stack.account}:role{path}{self.physical_name(stack, name)}"
        if resource_type == "AWS::Lambda::Function":
            function = self.physical_name(stack, name)
            return f"arn:{stack.partition}:lambda:{stack.region}:{stack.account}:function:{function}"
        if resource_type == "AWS::IAM::ManagedPolicy":
            return f"arn:{stack.partition}:iam::{stack.account}:policy/{self.physical_name(stack, name)}"
        return super()._arn(stack, name, resource_type)

    def _ref(self, stack: Stack, name: str) -> str:
        kind = stack.template.get("Resources", {}).get(name, {}).get("Type")
        named = kind in ("AWS::IAM::Role", "AWS::Lambda::Function")
        return self.physical_name(stack, name) if named else super()._ref(stack, name)


def deploy_requests(stacks: list[Stack]) -> Iterator[Request]:
    """Every request of every resource of the stacks (of one environment: imports resolve across them)."""
    resolver = DeployResolver(stacks)
    for stack in stacks:
        for logical_id, resource in stack.template["Resources"].items():
            for permission in sorted(handler_permissions(resource["Type"])):
                action = as_iam_action(permission) if needed(permission) else None
                if action is not None:
                    yield from _requests(resolver, stack, logical_id, resource, action)


def _requests(
    resolver: DeployResolver, stack: Stack, logical_id: str, resource: dict, action: str
) -> Iterator[Request]:
    kind, properties = resource["Type"], resource.get("Properties", {})
    arn = lambda value: resolver.resolve(stack, value)  # noqa: E731
    if action.startswith("iam:"):
        yield from _iam(resolver, stack, logical_id, kind, properties, action)
    elif action.startswith("lambda:"):
        target = _lambda_target(stack, logical_id, kind, properties)
        if target is not None:
            yield Request(logical_id, action, arn(target))
    else:
        yield Request(logical_id, action, "*")


def _lambda_target(stack: Stack, logical_id: str, kind: str, properties: dict) -> Any:
    if kind == "AWS::Lambda::Function":
        return {"Fn::GetAtt": [logical_id, "Arn"]}
    return properties.get("FunctionName") or properties.get("ServiceToken")


def _iam(resolver: DeployResolver, stack: Stack, logical_id: str, kind: str, properties: dict, action: str):
    arn = lambda value: resolver.resolve(stack, value)  # noqa: E731
    if kind == "AWS::IAM::Role":
        role = arn({"Fn::GetAtt": [logical_id, "Arn"]})
        boundary = _context(iam_boundary=arn(properties.get("PermissionsBoundary")))
        if action == "iam:AttachRolePolicy":
            for policy in properties.get("ManagedPolicyArns", []):
                yield Request(logical_id, action, role, boundary + _context(iam_policy=arn(policy)))
        else:
            yield Request(logical_id, action, role, boundary)
    elif kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        yield from _policy(resolver, stack, logical_id, kind, properties, action)
    elif action == "iam:PassRole" and kind in PASSES_ROLE:
        key, service = PASSES_ROLE[kind]
        if key in properties:
            yield Request(logical_id, action, arn(properties[key]), _context(passed_to=service))
    elif action == "iam:CreateServiceLinkedRole":
        role = f"arn:{stack.partition}:iam::{stack.account}:role/aws-service-role/{SERVICE_LINKED}/AWSServiceRole"
        yield Request(logical_id, action, role, _context(service_name=SERVICE_LINKED))
    # any other IAM permission of a non-IAM type (SNS's GetRole for delivery logging roles) names a role
    # only when the resource has one: these templates give none


def _policy(resolver: DeployResolver, stack: Stack, logical_id: str, kind: str, properties: dict, action: str):
    """An inline policy is put on its roles; a managed policy is written, then attached to its roles."""
    arn = lambda value: resolver.resolve(stack, value)  # noqa: E731
    on_role = action.endswith(("RolePolicy", "RolePolicies"))
    if kind == "AWS::IAM::ManagedPolicy" and not on_role:
        if action.startswith("iam:") and "Policy" in action and "Group" not in action and "User" not in action:
            yield Request(logical_id, action, arn({"Ref": logical_id}))
        return
    for ref in properties.get("Roles", []):
        role_id = ref["Ref"]
        role = stack.template["Resources"][role_id]
        role_arn = arn({"Fn::GetAtt": [role_id, "Arn"]})
        context = _context(iam_boundary=arn(role.get("Properties", {}).get("PermissionsBoundary")))
        if action in ("iam:AttachRolePolicy", "iam:DetachRolePolicy"):
            context += _context(iam_policy=arn({"Ref": logical_id}))
        yield Request(logical_id, action, role_arn, context)


def _context(
    *, iam_boundary: str | None = None, iam_policy: str | None = None, passed_to: str = "", service_name: str = ""
) -> tuple[tuple[str, str], ...]:
    keys = {
        "iam:PermissionsBoundary": iam_boundary,
        "iam:PolicyARN": iam_policy,
        "iam:PassedToService": passed_to,
        "iam:AWSServiceName": service_name,
    }
    return tuple((k, v) for k, v in keys.items() if v)
