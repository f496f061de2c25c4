"""The S3 bucket that receives endpoint data capture: users' prompts (and answers, if configured).

Personal data, so: a KMS key of its own (shared with no log group or topic), an S3 lifecycle expiry
on every captured object, SSL only, server access logs, and no S3 Bucket Key. Without a Bucket Key,
S3 asks KMS for every object it writes or reads, so each read of a captured object is a KMS Decrypt
in CloudTrail (a management event, in the 90-day event history even without a trail) naming the
reader and, as encryption context, the object's ARN. With a Bucket Key, KMS would see the bucket's
ARN instead and far fewer calls (Amazon S3 User Guide, "Reducing the cost of SSE-KMS with Amazon S3
Bucket Keys"). The price is one KMS request per captured file written or read ($0.03 per 10,000).
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from constructs import Construct
from constructs.encryption_key import allow_use, data_key
from constructs.nag import acknowledge

CAPTURE_PREFIX = "capture/"
# A captured object overwritten or expired stays as a noncurrent version this long (versioning is on
# against overwrite); the reader policy grants no s3:GetObjectVersion, so it cannot read those.
NONCURRENT_DAYS = 1
# What the model's execution role needs to write captured objects, and nothing more (no GetObject, no
# Decrypt): PutObject and AbortMultipartUpload under the capture prefix; on the key, GenerateDataKey (S3
# asks KMS for a data key per object, as the writer) and Encrypt, which the SageMaker API reference asks
# of the execution role for a KmsKeyId of its S3 outputs ("the SageMaker execution role must include
# permissions to call kms:Encrypt ... The KMS key policy must grant permission to the IAM role",
# ProductionVariantCoreDumpConfig.KmsKeyId). Both in its IAM policy and in the key policy (the key
# policy grants the account no use: constructs/encryption_key.py). No Decrypt (issue 38: Decrypt only for
# the CaptureReader role): S3 needs it for a multipart upload ("Amazon S3 must decrypt and read data
# from the encrypted file parts", CreateMultipartUpload); SageMaker writes capture files of a few records
# each and documents no multipart upload. If it ever used one, capture files would stop arriving
# (AccessDenied on CompleteMultipartUpload), never be readable by the model role.
WRITE_OBJECT_ACTIONS = ["s3:PutObject", "s3:AbortMultipartUpload"]
WRITE_KEY_ACTIONS = ["kms:Encrypt", "kms:GenerateDataKey"]


class CaptureBucket(Construct):
    """`retention_days` is the lifecycle expiry of captured objects (config.checks.capture refuses
    capture without one); `description` names the key after the endpoint."""

    def __init__(self, scope: Construct, id: str, *, retention_days: int, description: str) -> None:
        super().__init__(scope, id)
        self.encryption_key = data_key(self, "Key", description=description)
        self.access_logs = self._access_logs()
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.encryption_key,
            bucket_key_enabled=False,  # one KMS call, one CloudTrail event, per object read (module docstring)
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="capture-bucket/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    prefix=CAPTURE_PREFIX,
                    expiration=Duration.days(retention_days),
                    noncurrent_version_expiration=Duration.days(NONCURRENT_DAYS),
                )
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        replication = (
            "Data capture is a sample kept for analysis and model monitoring, not a record of business data; "
            "versioning protects it against overwrite and a second-region copy is not warranted"
        )
        acknowledge(self.bucket, "NIST.800.53.R5::NIST.800.53.R5-S3BucketReplicationEnabled", replication)
        acknowledge(self.access_logs, "NIST.800.53.R5::NIST.800.53.R5-S3BucketReplicationEnabled", replication)

    def _access_logs(self) -> s3.Bucket:
        """S3 server access logs: who requested which captured object (best effort, delivered within hours)."""
        # S3 server access logs can only be delivered to an SSE-S3 bucket. They hold object keys and
        # requesters, never payloads.
        logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[
                s3.LifecycleRule(expiration=Duration.days(365), noncurrent_version_expiration=Duration.days(30))
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            logs,
            "NIST.800.53.R5::NIST.800.53.R5-S3DefaultEncryptionKMS",
            "S3 server access logs can only be delivered to a bucket encrypted with SSE-S3 (AES-256)",
        )
        acknowledge(
            logs,
            "AwsSolutions::AwsSolutions-S1",
            "This is the access-log bucket itself; logging it to itself would loop",
        )
        return logs

    @property
    def destination_uri(self) -> str:
        return f"s3://{self.bucket.bucket_name}/{CAPTURE_PREFIX}"

    @property
    def objects_arn(self) -> str:
        """The ARN pattern of every captured object."""
        return self.bucket.arn_for_objects(f"{CAPTURE_PREFIX}*")

    def grant_capture(self, role: iam.IRole) -> None:
        """SageMaker writes captured requests and responses with the model's execution role
        (DataCaptureConfig.KmsKeyId: "the key SageMaker uses to encrypt the captured data at rest
        using Amazon S3 server-side encryption")."""
        iam.Grant.add_to_principal(grantee=role, actions=WRITE_OBJECT_ACTIONS, resource_arns=[self.objects_arn])
        iam.Grant.add_to_principal(grantee=role, actions=WRITE_KEY_ACTIONS, resource_arns=[self.encryption_key.key_arn])
        allow_use(self.encryption_key, "ModelRoleWritesCapture", role, WRITE_KEY_ACTIONS)
        acknowledge(
            role,
            f"AwsSolutions::AwsSolutions-IAM5[Resource::<{self.bucket_logical_id}.Arn>/{CAPTURE_PREFIX}*]",
            "data capture writes one object per batch under keys SageMaker generates, all under the capture prefix",
        )

    @property
    def bucket_logical_id(self) -> str:
        stack = Stack.of(self)
        return stack.resolve(stack.get_logical_id(self.bucket.node.default_child))
