"""Customer-managed KMS keys with rotation.

`service_key`: a stack's logs and alarm topics share one key, which the regional CloudWatch Logs service
may use for this account's log groups only (`kms:EncryptionContext:aws:logs:arn`: CloudWatch Logs User
Guide, "Encrypt log data in CloudWatch Logs using AWS KMS"). CloudWatch alarms and AWS Budgets publish to
the encrypted topics through grants without a condition (constructs/alarm_topic.py): no AWS page says they
send aws:SourceAccount/SourceArn to KMS, and an unsent condition would drop every notification silently.

`data_key`: a key of its own for personal data (data capture), whose policy admits no service principal
and does not hand its use to IAM (issue 38). CDK's default policy, `kms:*` for the account root, lets IAM
policies allow every KMS operation, Decrypt included (AWS KMS Developer Guide, "Default key policy"). A
given `policy` replaces it (aws-cdk-lib KeyProps `policy`), so the account keeps the key administrators'
actions without CreateGrant or any cryptographic operation, and kms:PutKeyPolicy, which the policy lockout
safety check requires (KMS API reference, PutKeyPolicy). Only principals `allow_use` names may use it.
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


# The key administrators' actions (AWS KMS Developer Guide, "Default key policy": kms:Create*, Describe*,
# Enable*, List*, Put*, Update*, Revoke*, Disable*, Get*, Delete*, TagResource, UntagResource,
# ScheduleKeyDeletion, CancelKeyDeletion, RotateKeyOnDemand), spelt out for a symmetric key so that
# neither CreateGrant nor any cryptographic operation hides behind a wildcard.
KEY_ADMIN_ACTIONS = (
    "kms:CancelKeyDeletion",
    "kms:CreateAlias",
    "kms:DeleteAlias",
    "kms:DescribeKey",
    "kms:DisableKey",
    "kms:DisableKeyRotation",
    "kms:EnableKey",
    "kms:EnableKeyRotation",
    "kms:GetKeyPolicy",
    "kms:GetKeyRotationStatus",
    "kms:ListGrants",
    "kms:ListKeyPolicies",
    "kms:ListKeyRotations",
    "kms:ListResourceTags",
    "kms:PutKeyPolicy",
    "kms:RevokeGrant",
    "kms:RotateKeyOnDemand",
    "kms:ScheduleKeyDeletion",
    "kms:TagResource",
    "kms:UntagResource",
    "kms:UpdateAlias",
    "kms:UpdateKeyDescription",
)


def data_key(scope: Construct, id: str, *, description: str) -> kms.Key:
    """A key for one set of personal data, shared with nothing else, administered by the account and
    used only by the principals `allow_use` names; every Decrypt is a CloudTrail management event.
    Retained on stack deletion (CDK's default for keys), like the data."""
    administration = iam.PolicyStatement(
        sid="KeyAdministrationWithoutUse",
        principals=[iam.AccountRootPrincipal()],
        actions=list(KEY_ADMIN_ACTIONS),
        resources=["*"],  # in a key policy, "*" is this key
    )
    policy = iam.PolicyDocument(statements=[administration])
    return kms.Key(scope, id, enable_key_rotation=True, description=description, policy=policy)


def allow_use(key: kms.Key, sid: str, role: iam.IRole, actions: list[str], conditions: dict | None = None) -> None:
    """Let one role use the key for these cryptographic actions (the key policy alone decides). The role is
    named by `aws:PrincipalArn` with the account as principal, not as the principal: KMS requires a key
    policy's principals to exist and be visible (KMS API reference, CreateKey/PutKeyPolicy), and a role
    created seconds earlier may not be yet (MalformedPolicyDocumentException, issue 50 §4). For a role
    session aws:PrincipalArn is the role's ARN (IAM User Guide, "AWS global condition context keys"), and no
    other principal matches it."""
    matches_role = {"ArnEquals": {"aws:PrincipalArn": role.role_arn}}
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid=sid,
            principals=[iam.AccountRootPrincipal()],
            actions=actions,
            resources=["*"],
            conditions={**matches_role, **(conditions or {})},
        )
    )
