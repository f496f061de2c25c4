"""`bin/ops preflight`'s model data: each S3 prefix exists, holds objects, is in the region, and its key is the config's.

For SSE-KMS objects S3 decrypts with the caller's credentials, so a customer-managed default key
(GetBucketEncryption) needs `model_data_kms_key_arn` (constructs/serving_model.py). Objects are not read.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from config import EnvironmentConfig, environment_label
from ops.operations.errors import error_code
from ops.operations.preflight_finding import Finding

AWS_MANAGED_S3_KEY = "alias/aws/s3"
KMS_ALGORITHMS = ("aws:kms", "aws:kms:dsse")


def model_data_findings(s3: Any, cfg: EnvironmentConfig, region: str) -> list[Finding]:
    findings = []
    for uri in sorted({v.model_data_s3_uri for v in cfg.variants}):
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        try:
            location = s3.get_bucket_location(Bucket=bucket).get("LocationConstraint") or "us-east-1"
            listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1).get("KeyCount", 0)
        except ClientError as error:
            fix = "upload the model data there, or correct variants[].model_data_s3_uri"
            found = error_code(error) or str(error)
            findings.append(Finding(f"model data {uri}", found, "an existing bucket and prefix", fix))
            continue
        if location != region:
            fix = "copy the model data to a bucket in the endpoint's region"
            findings.append(
                Finding(f"model data {uri}", f"bucket in {location}", f"the endpoint's region {region}", fix)
            )
        if not listed:
            fix = "upload the model data (base/ and lora/<adapter>/) under it"
            findings.append(Finding(f"model data {uri}", "no object under the prefix", "the model's files", fix))
        findings += _key_findings(s3, cfg, bucket)
    return findings


def default_key(s3: Any, bucket: str) -> str | None:
    """The bucket's default customer-managed KMS key (id, ARN or alias), None for SSE-S3 or aws/s3."""
    try:
        rules = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    except ClientError as error:
        if error_code(error) == "ServerSideEncryptionConfigurationNotFoundError":
            return None
        raise
    for rule in rules:
        default = rule.get("ApplyServerSideEncryptionByDefault", {})
        key = default.get("KMSMasterKeyID")
        if default.get("SSEAlgorithm") in KMS_ALGORITHMS and key and not key.endswith(AWS_MANAGED_S3_KEY):
            return key
    return None


def _key_findings(s3: Any, cfg: EnvironmentConfig, bucket: str) -> list[Finding]:
    key = default_key(s3, bucket)
    configured = cfg.model_data_kms_key_arn
    if key is None or (configured and (key == configured or configured.endswith(f"/{key.rsplit('/', 1)[-1]}"))):
        return []
    field = f"model_data_kms_key_arn in {environment_label(cfg.name)}"
    found = f"bucket {bucket} encrypts with customer-managed key {key}, the config names {configured or 'none'}"
    return [Finding(field, found, "the key's ARN", f"set {field.split(' ')[0]} to the key's ARN")]
