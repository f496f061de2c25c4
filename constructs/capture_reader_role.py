"""The break-glass CaptureReader role: the only principal the capture key lets decrypt (issue 38).

Before, `MangaAssist-<env>-CaptureReader` was a policy anyone could attach, and the capture key's policy
(CDK's default, `kms:*` for the account) let any principal with broad IAM rights decrypt users' prompts.
Now the key policy names this role, and only it, for `kms:Decrypt` (through S3 only: `kms:ViaService`),
so reading captured objects means assuming it, which CloudTrail records as an `AssumeRole` event naming
who did, before each object's `Decrypt` event names the session.

Trust: `sts:AssumeRole` for the principals `data_capture.readers` names (else the account: then IAM
policies decide who, as for any role trusting its account), with MFA where IAM can see it
(`aws:MultiFactorAuthPresent`, IAM User Guide, "AWS global condition context keys" and "Configuring
MFA-protected API access"; `data_capture.reader_mfa`). Permissions: the CaptureReader policy (list and
read under `capture/`, Decrypt through S3) and the Operator policy, because the one command that reads
captures, `bin/loadtest ENV --variant V --workload capture`, needs both in one session. Its boundary
is every stack role's (constructs/stack_role_boundary.py). The session lasts at most an hour.
"""

from __future__ import annotations

from aws_cdk import Aws, CfnOutput, Duration
from aws_cdk import aws_iam as iam

from config.schema import DataCapture
from constructs import Construct
from constructs.capture_bucket import CaptureBucket
from constructs.encryption_key import allow_use

OUTPUT_CAPTURE_READER_ROLE_ARN = "CaptureReaderRoleArn"
MAX_SESSION = Duration.hours(1)


def reader_principal(capture: DataCapture) -> iam.IPrincipal:
    """Who may assume the role: the named readers, or the account; with MFA when configured."""
    readers = [iam.ArnPrincipal(arn) for arn in capture.readers] or [iam.AccountRootPrincipal()]
    principal: iam.IPrincipal = readers[0] if len(readers) == 1 else iam.CompositePrincipal(*readers)
    if capture.reader_mfa:
        principal = principal.with_conditions({"Bool": {"aws:MultiFactorAuthPresent": "true"}})
    return principal


class CaptureReaderRole(Construct):
    """The role, its Decrypt statement in the capture key's policy, and a stack output with its ARN."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        env_name: str,
        config: DataCapture,
        capture: CaptureBucket,
        policies: list[iam.ManagedPolicy],
    ) -> None:
        super().__init__(scope, id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=reader_principal(config),
            description=f"Break-glass: read {env_name}'s data capture (users' prompts); each read is a KMS Decrypt",
            max_session_duration=MAX_SESSION,
        )
        # Attached from the policies' side (their `Roles`): the key policy names the role, and the reader
        # policy names the bucket, which names the key; a role that listed the policies would close a cycle.
        for policy in policies:
            policy.attach_to_role(self.role)
        allow_use(
            capture.encryption_key,
            "CaptureReaderRoleDecryptsThroughS3",
            self.role,
            ["kms:Decrypt"],
            {"StringEquals": {"kms:ViaService": f"s3.{Aws.REGION}.amazonaws.com"}},
        )
        CfnOutput(scope, OUTPUT_CAPTURE_READER_ROLE_ARN, value=self.role.role_arn)
