"""A customer-managed KMS key with rotation that CloudWatch Logs in this account may use."""

from __future__ import annotations

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms

from constructs import Construct


def service_key(scope: Construct, id: str, *, description: str) -> kms.Key:
    key = kms.Key(scope, id, enable_key_rotation=True, description=description)
    # Encrypted log groups need the regional Logs service on the key policy, scoped to our groups.
    key.add_to_resource_policy(
        iam.PolicyStatement(
            principals=[iam.ServicePrincipal(f"logs.{Aws.REGION}.amazonaws.com")],
            actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
            resources=["*"],  # in a key policy, "*" is this key
            conditions={
                "ArnLike": {
                    "kms:EncryptionContext:aws:logs:arn": f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:*"
                }
            },
        )
    )
    return key
