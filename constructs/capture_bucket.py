"""The S3 bucket that receives endpoint data capture: KMS-encrypted, SSL-only, access-logged."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3

from constructs import Construct
from constructs.nag import acknowledge

CAPTURE_PREFIX = "capture/"


class CaptureBucket(Construct):
    def __init__(self, scope: Construct, id: str, *, encryption_key: kms.IKey, retention_days: int) -> None:
        super().__init__(scope, id)
        # S3 server access logs can only be delivered to an SSE-S3 bucket.
        self.access_logs = s3.Bucket(
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
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=encryption_key,
            bucket_key_enabled=True,
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
                    noncurrent_version_expiration=Duration.days(1),
                )
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.encryption_key = encryption_key
        replication = (
            "Data capture is a sample kept for analysis and model monitoring, not a record of business data; "
            "versioning protects it against overwrite and a second-region copy is not warranted"
        )
        acknowledge(self.bucket, "NIST.800.53.R5::NIST.800.53.R5-S3BucketReplicationEnabled", replication)
        acknowledge(self.access_logs, "NIST.800.53.R5::NIST.800.53.R5-S3BucketReplicationEnabled", replication)
        acknowledge(
            self.access_logs,
            "NIST.800.53.R5::NIST.800.53.R5-S3DefaultEncryptionKMS",
            "S3 server access logs can only be delivered to a bucket encrypted with SSE-S3 (AES-256)",
        )
        acknowledge(
            self.access_logs,
            "AwsSolutions::AwsSolutions-S1",
            "This is the access-log bucket itself; logging it to itself would loop",
        )

    @property
    def destination_uri(self) -> str:
        return f"s3://{self.bucket.bucket_name}/{CAPTURE_PREFIX}"

    def grant_capture(self, grantee: iam.IGrantable) -> None:
        """SageMaker writes captured requests and responses with the model's execution role."""
        self.bucket.grant_put(grantee, f"{CAPTURE_PREFIX}*")
        self.encryption_key.grant_encrypt(grantee)
        for finding, reason in (
            ("Action::s3:Abort*", "multipart uploads of large captured payloads may need aborting"),
            (f"Resource::<{self._bucket_id()}.Arn>/{CAPTURE_PREFIX}*", "one object per captured request"),
            ("Action::kms:GenerateDataKey*", "writes objects encrypted with this stack's key only"),
            ("Action::kms:ReEncrypt*", "writes objects encrypted with this stack's key only"),
        ):
            acknowledge(grantee, f"AwsSolutions::AwsSolutions-IAM5[{finding}]", reason)

    def _bucket_id(self) -> str:
        stack = Stack.of(self)
        return stack.resolve(stack.get_logical_id(self.bucket.node.default_child))
