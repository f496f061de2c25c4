"""`MangaAssist-<env>-CaptureReader`: the break-glass role, the only principal the capture key lets decrypt
(issues 38, 51).

Reading captured objects means assuming it, which CloudTrail records as an `AssumeRole` event naming who
did, before each object's `Decrypt` event names the session. It is the access stack's (stacks/ci_access_stack.py),
deployed by an administrator: a deploy can neither give it a policy nor change its trust (the execution
policy denies writing `role/MangaAssist-*-CaptureReader`: constructs/execution_policy_iam.py). It wears the
CaptureReader policy only (list and read under `capture/`, Decrypt through S3): reading chats grants no
change to production (issue 51). Its boundary is every stack role's (constructs/stack_role_boundary.py).

The capture key's policy names it by ARN in an `aws:PrincipalArn` condition (`capture_key_reader`), not as
a principal: a key policy's principals must exist when it is written (KMS API reference, PutKeyPolicy),
and the serving stack, which holds the key, deploys before this role exists. For a role session,
aws:PrincipalArn is the role's ARN (IAM User Guide, "AWS global condition context keys").

Trust: the account, narrowed by `aws:PrincipalArn` (ArnLike) to the principals `data_capture.readers`
names, exact ARNs or patterns such as an IAM Identity Center permission set's role (IAM Identity Center
User Guide, "Referencing permission sets in resource policies"); the reader's own policy must allow
sts:AssumeRole on this role, as for any role trusting its account. With `data_capture.reader_mfa`, MFA too
(`aws:MultiFactorAuthPresent`, which IAM sees only for IAM users and root signing in or calling STS with
MFA; config.checks.capture refuses it with Identity Center readers). The session lasts at most an hour.
"""

from __future__ import annotations

from aws_cdk import Aws, CfnOutput, Duration
from aws_cdk import aws_iam as iam

from config.access import CAPTURE_READER, policy_name
from config.schema import DataCapture
from constructs import Construct

OUTPUT_CAPTURE_READER_ROLE_ARN = "CaptureReaderRoleArn"
MAX_SESSION = Duration.hours(1)


def reader_role_name(env_name: str) -> str:
    return policy_name(env_name, CAPTURE_READER)  # `MangaAssist-<env>-CaptureReader`: a role of that name


def reader_role_arn(env_name: str, partition: str = Aws.PARTITION, account: str = Aws.ACCOUNT_ID) -> str:
    return f"arn:{partition}:iam::{account}:role/{reader_role_name(env_name)}"


def reader_principal(capture: DataCapture) -> iam.IPrincipal:
    """The account, narrowed to the named readers; with MFA when configured."""
    conditions: dict = {}
    if capture.readers:
        conditions["ArnLike"] = {"aws:PrincipalArn": list(capture.readers)}
    if capture.reader_mfa:
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

    def __init__(self, scope: Construct, id: str, *, env_name: str, config: DataCapture) -> None:
        super().__init__(scope, id)
        self.role = iam.Role(
            self,
            "Role",
            role_name=reader_role_name(env_name),
            assumed_by=reader_principal(config),
            description=f"Break-glass: read {env_name}'s data capture (users' prompts); each read is a KMS Decrypt",
            max_session_duration=MAX_SESSION,
        )
        CfnOutput(scope, OUTPUT_CAPTURE_READER_ROLE_ARN, value=self.role.role_arn)
