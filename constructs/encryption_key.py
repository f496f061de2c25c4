"""Customer-managed KMS keys with rotation.

`service_key`: a stack's logs (and the alarm topic) share one key, which the regional CloudWatch Logs
service may use for this account's log groups only. `data_key`: a key of its own for one set of users'
personal data (data capture), whose policy admits no service principal: SageMaker writes captured
data with the model's execution role, S3 calls KMS as whoever reads or writes, and IAM policies
(the account root statement CDK writes by default) decide who that may be.

CloudWatch Logs may use the service key only for this account's log groups
(`kms:EncryptionContext:aws:logs:arn`, the condition its guide gives: CloudWatch Logs User Guide,
"Encrypt log data in CloudWatch Logs using AWS KMS"; the confused-deputy problem, IAM User Guide).
CloudWatch alarms and AWS Budgets publish to the encrypted topics through grants without a condition
(constructs/alarm_topic.py): the SNS guide's key policy for them has none, and no AWS page says they
send aws:SourceAccount/aws:SourceArn on their KMS calls, so a condition they do not send would drop
every notification without an error.
"""

from __future__ import annotations

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms

from constructs import Construct


def service_key(scope: Construct, id: str, *, description: str) -> kms.Key:
    key = kms.Key(scope, id, enable_key_rotation=True, description=description)
    # Encrypted log groups need the regional Logs service on the key policy, scoped to our log groups:
    # CloudWatch Logs passes the log group's ARN as encryption context on every call.
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="CloudWatchLogsForThisAccountsLogGroups",
            principals=[iam.ServicePrincipal(f"logs.{Aws.REGION}.amazonaws.com")],
            actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
            resources=["*"],  # in a key policy, "*" is this key
            conditions={
                "ArnLike": {
                    "kms:EncryptionContext:aws:logs:arn": (
                        f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:*"
                    )
                }
            },
        )
    )
    return key


def data_key(scope: Construct, id: str, *, description: str) -> kms.Key:
    """A key for one set of personal data, shared with nothing else: reading the data needs
    kms:Decrypt on this key, which only an IAM policy that names it grants, and every Decrypt is a
    CloudTrail management event. Retained on stack deletion (CDK's default for keys), like the data."""
    return kms.Key(scope, id, enable_key_rotation=True, description=description)
