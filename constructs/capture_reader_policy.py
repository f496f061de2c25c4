"""`MangaAssist-<env>-CaptureReader`: break-glass read of what data capture stored (users' prompts, and
answers where configured). The operator policy cannot read them; this policy, on the CaptureReader role
(constructs/capture_reader_role.py), the only principal the capture key lets decrypt, can (issues 38, 51).

What a read leaves behind (docs/reference/configuration.md "Data capture"):
- a `kms:Decrypt` per object (the bucket has no S3 Bucket Key): a CloudTrail management event, in the
  90-day event history without any trail (CloudTrail User Guide, "Logging management events"), naming
  the reader and the object;
- `s3:GetObject`/`s3:ListBucket` are data events, logged only by a trail with a data-event selector
  (CloudTrail User Guide, "Logging data events"), which this stack does not create;
- S3 server access logs record each request with its requester, best effort, within hours.
"""

from __future__ import annotations

from aws_cdk import Aws, CfnOutput, Fn
from aws_cdk import aws_iam as iam

from config.access import CAPTURE_READER, policy_name
from constructs import Construct
from constructs.capture_bucket import CAPTURE_PREFIX
from constructs.nag import acknowledge

OUTPUT_CAPTURE_READER_POLICY_ARN = "CaptureReaderPolicyArn"


def capture_reader_statements(bucket_arn: str, key_arn: str, region: str) -> list[dict]:
    """The policy's statements, IAM JSON: CDK tokens in the stack, concrete ARNs in the policy proof
    (tests/operator_policy_check.py)."""
    return [
        _allow("CaptureList", ["s3:ListBucket"], [bucket_arn], {"StringLike": {"s3:prefix": f"{CAPTURE_PREFIX}*"}}),
        _allow("CaptureRead", ["s3:GetObject"], [f"{bucket_arn}/{CAPTURE_PREFIX}*"]),
        # Decrypt only as S3 does for a GetObject, never on a ciphertext taken elsewhere.
        _allow(
            "CaptureDecrypt",
            ["kms:Decrypt"],
            [key_arn],
            {"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}},
        ),
    ]


def _allow(sid: str, actions: list[str], resources: list[str], condition: dict | None = None) -> dict:
    statement = {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources}
    return {**statement, "Condition": condition} if condition else statement


class CaptureReaderPolicy(Construct):
    """The managed policy, named for the environment, and a stack output with its ARN. The bucket and key
    ARNs are imports of the serving stack's exports (`bucket_export`, `key_export`: config.naming.export_name)."""

    def __init__(self, scope: Construct, id: str, *, env_name: str, bucket_export: str, key_export: str) -> None:
        super().__init__(scope, id)
        bucket_arn, key_arn = Fn.import_value(bucket_export), Fn.import_value(key_export)
        statements = capture_reader_statements(bucket_arn, key_arn, Aws.REGION)
        self.policy = iam.ManagedPolicy(
            self,
            "Policy",
            managed_policy_name=policy_name(env_name, CAPTURE_READER),
            description=(
                f"Break-glass: read {env_name}'s data capture (users' prompts), worn by its CaptureReader role only; "
                "each read is a KMS Decrypt in CloudTrail"
            ),
            document=iam.PolicyDocument.from_json({"Version": "2012-10-17", "Statement": statements}),
        )
        CfnOutput(scope, OUTPUT_CAPTURE_READER_POLICY_ARN, value=self.policy.managed_policy_arn)
        acknowledge(
            self.policy,
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{bucket_export}/{CAPTURE_PREFIX}*]",
            "data capture writes one object per batch under keys it generates; the reader reads them all, "
            "and only under the capture prefix",
        )
