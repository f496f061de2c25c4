"""Customer-managed KMS keys with rotation.

`service_key`: a stack's logs (and the alarm topic) share one key, which the regional CloudWatch Logs
service may use for this account's log groups only. `data_key`: a key of its own for one set of users'
personal data (data capture), whose policy admits no service principal and does not hand the key's use
to IAM (issue 38): the account (its IAM policies) may administer the key but not use it; only the
principals the key policy names may encrypt or decrypt (`allow_use`; the break-glass reader by
`aws:PrincipalArn`, constructs/capture_reader_role.py `capture_key_reader`, issue 51).

Why not CDK's default key policy for personal data: it is one statement, `kms:*` for the account root
(aws-cdk-lib aws_kms.KeyProps `policy`: "A policy document with permissions for the account root to
administer the key"), which "gives the AWS account that owns the KMS key permission to use IAM policies
to allow access to all AWS KMS operations on the KMS key" (AWS KMS Developer Guide, "Default key
policy"), Decrypt included: any principal with broad IAM rights could read users' prompts. A `policy`
given to the Key replaces the default (KeyProps `policy`: "this policy will *override* the default key
policy and become the only key policy"), so the key must stay manageable by itself: the account keeps
the key administrators' actions of the same guide ("Allows key administrators to administer the KMS
key"), without CreateGrant (a grant could give Decrypt) and without any cryptographic operation.
KMS refuses a PutKeyPolicy whose policy would not let the caller call PutKeyPolicy again (the policy
lockout safety check, KMS API reference, PutKeyPolicy): CloudFormation's execution role keeps
kms:PutKeyPolicy through this statement and its IAM policy.

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
    """Let one role use the key for these cryptographic actions (the key policy alone decides: the account
    statement above grants no use). The role is named by condition, not as the principal: "The principals in
    the key policy must exist and be visible to KMS ... you might need to enforce a delay" (KMS API reference,
    CreateKey/PutKeyPolicy, botocore's model), and a role created seconds earlier in the same deploy may not be
    visible yet (MalformedPolicyDocumentException, issue 50 §4). The account is the principal and
    `aws:PrincipalArn` must equal the role's ARN ("For IAM roles, the request context returns the ARN of the
    role, not the ARN of the user that assumed the role": IAM User Guide, "AWS global condition context keys"),
    which KMS does not resolve. A key policy naming the account lets IAM policies grant the use (AWS KMS
    Developer Guide, "Default key policy"): the role's own IAM policy grants these actions, and no other
    principal matches the condition, so "only the reader decrypts" holds as before."""
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
