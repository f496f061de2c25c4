"""`MangaAssist-<env>-CaptureReader`: the break-glass role, the only principal the capture key lets decrypt
(issues 38, 51). Assuming it is a CloudTrail `AssumeRole` event naming who, before each object's `Decrypt`.

The access stack's (stacks/ci_access_stack.py), deployed by an administrator: a deploy can neither give it a
policy nor change its trust (constructs/execution_policy_iam.py). It wears the CaptureReader policy only, so
reading chats grants no change to production; its boundary is every stack role's.

The capture key names it by `aws:PrincipalArn` (`capture_key_reader`), not as a principal: a key policy's
principals must exist when written (KMS API reference, PutKeyPolicy), and the key deploys first; for a role
session aws:PrincipalArn is the role's ARN (IAM User Guide, "AWS global condition context keys").

Trust: the account, narrowed by `aws:PrincipalArn` (ArnLike) to `data_capture.readers`, exact ARNs or
patterns such as an Identity Center permission set's role (IAM Identity Center User Guide, "Referencing
permission sets in resource policies"); the reader's own policy must allow sts:AssumeRole on it. With
`data_capture.reader_mfa`, `aws:MultiFactorAuthPresent` too (config.checks.capture refuses it with Identity
Center readers). Sessions last at most an hour.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Aws, CfnOutput, Duration
from aws_cdk import aws_iam as iam

from config.access import CAPTURE_READER, policy_name
from constructs import Construct

OUTPUT_CAPTURE_READER_ROLE_ARN = "CaptureReaderRoleArn"
MAX_SESSION = Duration.hours(1)


def reader_role_name(env_name: str) -> str:
    return policy_name(env_name, CAPTURE_READER)  # `MangaAssist-<env>-CaptureReader`: a role of that name


def reader_role_arn(env_name: str, partition: str = Aws.PARTITION, account: str = Aws.ACCOUNT_ID) -> str:
    return f"arn:{partition}:iam::{account}:role/{reader_role_name(env_name)}"


@dataclass(frozen=True)
class CaptureReaderRoleProps:
    """Who may assume the break-glass reader role (config `data_capture.readers`, `reader_mfa`)."""

    env_name: str  # names the role (`MangaAssist-<env>-CaptureReader`) and its description
    # aws:PrincipalArn patterns (an exact role, an Identity Center permission set's role). Empty: the account.
    readers: Sequence[str] = ()
    # Identity Center sessions never carry aws:MultiFactorAuthPresent: turn it off for such readers.
    require_mfa: bool = True


def reader_principal(props: CaptureReaderRoleProps) -> iam.IPrincipal:
    """The account, narrowed to the named readers; with MFA when required."""
    conditions: dict = {}
    if props.readers:
        conditions["ArnLike"] = {"aws:PrincipalArn": list(props.readers)}
    if props.require_mfa:
        conditions["Bool"] = {"aws:MultiFactorAuthPresent": "true"}
    account = iam.AccountRootPrincipal()
    return account.with_conditions(conditions) if conditions else account


def capture_key_reader(env_name: str) -> iam.PolicyStatement:
    """The capture key policy's statement for the reader: Decrypt, through S3 only, by this role's sessions."""
    return iam.PolicyStatement(
        sid="CaptureReaderRoleDecryptsThroughS3",
        principals=[iam.AccountRootPrincipal()],
        actions=["kms:Decrypt"],
        resources=["*"],  # in a key policy, "*" is this key
        conditions={
            "ArnEquals": {"aws:PrincipalArn": reader_role_arn(env_name)},
            "StringEquals": {"kms:ViaService": f"s3.{Aws.REGION}.amazonaws.com"},
        },
    )


class CaptureReaderRole(Construct):
    """The role, named for the environment, and a stack output with its ARN."""

    def __init__(self, scope: Construct, id: str, props: CaptureReaderRoleProps) -> None:
        super().__init__(scope, id)
        env_name = props.env_name
        self.role = iam.Role(
            self,
            "Role",
            role_name=reader_role_name(env_name),
            assumed_by=reader_principal(props),
            description=f"Break-glass: read {env_name}'s data capture (users' prompts); each read is a KMS Decrypt",
            max_session_duration=MAX_SESSION,
        )
        CfnOutput(scope, OUTPUT_CAPTURE_READER_ROLE_ARN, value=self.role.role_arn)
