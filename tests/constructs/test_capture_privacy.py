"""Data capture holds users' prompts: a key of its own, key policies that admit service principals only
for this account's resources, a break-glass reader policy, and config that refuses capture without
encryption or expiry (issue 28, "Chat transcripts")."""

from __future__ import annotations

import json

import aws_cdk as cdk
from aws_cdk.assertions import Template

from config import load_environment
from config.access import CAPTURE_READER, policy_name
from constructs.capture_bucket import CaptureBucket
from constructs.capture_reader_policy import OUTPUT_CAPTURE_READER_POLICY_ARN
from constructs.capture_reader_role import OUTPUT_CAPTURE_READER_ROLE_ARN, CaptureReaderRole
from constructs.execution_policy import handler_permissions
from constructs.inference_endpoint import InferenceEndpoint
from tests.iam_lint import Resolver, Stack
from tests.operator_policy_check import allowed


def resources(template, kind: str) -> dict[str, dict]:
    return {lid: r["Properties"] for lid, r in template.find_resources(kind).items()}


def as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def ref_of(value) -> str:
    """The logical ID a property points at, through Ref or Fn::GetAtt."""
    return value["Ref"] if "Ref" in value else value["Fn::GetAtt"][0]


def capture_key_id(prod) -> str:
    (config,) = resources(prod.serving, "AWS::SageMaker::EndpointConfig").values()
    return ref_of(config["DataCaptureConfig"]["KmsKeyId"])


def capture_bucket_id(prod) -> str:
    (bucket_id,) = [lid for lid in resources(prod.serving, "AWS::S3::Bucket") if lid.startswith("DataCaptureBucket")]
    return bucket_id


def managed_policy(template, name: str) -> dict | None:
    found = [p for p in resources(template, "AWS::IAM::ManagedPolicy").values() if p.get("ManagedPolicyName") == name]
    return found[0] if found else None


def mentions(statement: dict, logical_id: str) -> bool:
    return logical_id in json.dumps(statement["Resource"])


# --- the capture key ---------------------------------------------------------------------------------


def test_capture_has_a_key_shared_with_no_log_group_or_topic(prod) -> None:
    key = capture_key_id(prod)
    bucket = resources(prod.serving, "AWS::S3::Bucket")[capture_bucket_id(prod)]
    (rule,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert ref_of(rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"]) == key
    assert rule["BucketKeyEnabled"] is False  # one Decrypt in CloudTrail per object read
    log_keys = {ref_of(g["KmsKeyId"]) for g in resources(prod.serving, "AWS::Logs::LogGroup").values()}
    topic_keys = {ref_of(t["KmsMasterKeyId"]) for t in resources(prod.serving, "AWS::SNS::Topic").values()}
    assert log_keys and topic_keys and key not in log_keys | topic_keys


def test_capture_key_policy_admits_no_service_principal_and_rotates(prod) -> None:
    key = resources(prod.serving, "AWS::KMS::Key")[capture_key_id(prod)]
    assert key["EnableKeyRotation"] is True
    principals = [s["Principal"] for s in key["KeyPolicy"]["Statement"]]
    assert all("Service" not in p for p in principals), principals


# A service principal a key policy admits without tying it to this account's resources, with the reason.
UNCONDITIONED = {
    "budgets.amazonaws.com": "AWS documents no condition key that AWS Budgets sets on its KMS requests, and one "
    "it does not set would drop every budget notification without an error (constructs/alarm_topic.py)",
    # The SNS developer guide's key policy for CloudWatch alarms on an encrypted topic carries no
    # condition, and no AWS page says CloudWatch sends aws:SourceAccount/SourceArn on its KMS calls: a
    # condition it does not send drops every alarm notification silently (the first release's fault).
    "cloudwatch.amazonaws.com": "the SNS guide's key policy for CloudWatch alarms has no condition; an unsent "
    "one would silence every alarm (constructs/alarm_topic.py)",
}


def test_every_service_principal_on_a_key_is_tied_to_this_accounts_resources(prod) -> None:
    """CloudWatch Logs by its encryption context (the log group's ARN); others by aws:SourceAccount
    and aws:SourceArn, but for the named exceptions in UNCONDITIONED. Both stacks' keys."""
    checked = 0
    for template in (prod.image, prod.serving):
        for lid, key in resources(template, "AWS::KMS::Key").items():
            for statement in key["KeyPolicy"]["Statement"]:
                services = as_list(statement["Principal"].get("Service", []))
                if all(isinstance(service, str) and service in UNCONDITIONED for service in services):
                    continue
                checked += 1
                condition = json.dumps(statement.get("Condition", {}))
                by_context = "kms:EncryptionContext:aws:logs:arn" in condition and ":log-group:*" in condition
                by_source = "aws:SourceAccount" in condition and "aws:SourceArn" in condition
                assert by_context or by_source, f"{lid}: {statement}"
    assert checked >= 2  # Logs on both keys


# --- who may read ------------------------------------------------------------------------------------


def test_a_break_glass_reader_policy_reads_and_decrypts_only_the_capture(prod) -> None:
    """In the access stack (issue 51), naming the serving stack's capture bucket and key by their exports."""
    policy = managed_policy(prod.access, policy_name("prod", CAPTURE_READER))
    assert policy is not None and policy["ManagedPolicyName"] == "MangaAssist-prod-CaptureReader"
    by_sid = {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}
    assert set(by_sid) == {"CaptureList", "CaptureRead", "CaptureDecrypt"}
    outputs = prod.serving.to_json()["Outputs"]
    assert ref_of(outputs["CaptureBucketArn"]["Value"]) == capture_bucket_id(prod)
    assert ref_of(outputs["CaptureKeyArn"]["Value"]) == capture_key_id(prod)
    bucket, key = outputs["CaptureBucketArn"]["Export"]["Name"], outputs["CaptureKeyArn"]["Export"]["Name"]
    assert as_list(by_sid["CaptureList"]["Action"]) == ["s3:ListBucket"] and mentions(by_sid["CaptureList"], bucket)
    assert as_list(by_sid["CaptureRead"]["Action"]) == ["s3:GetObject"] and mentions(by_sid["CaptureRead"], bucket)
    assert json.dumps(by_sid["CaptureRead"]["Resource"]).endswith('"/capture/*"]]}')
    assert as_list(by_sid["CaptureDecrypt"]["Action"]) == ["kms:Decrypt"] and mentions(by_sid["CaptureDecrypt"], key)
    assert "kms:ViaService" in json.dumps(by_sid["CaptureDecrypt"]["Condition"])
    output = prod.access.to_json()["Outputs"][OUTPUT_CAPTURE_READER_POLICY_ARN]
    assert output["Value"]["Ref"].startswith("CaptureReaderPolicy")


def test_no_other_policy_reads_or_decrypts_the_capture(prod) -> None:
    """The operator policy included (issue 28 §2; its capture statements are removed in
    constructs/operator_policy.py), and the model's execution role, which only writes."""
    bucket, key = capture_bucket_id(prod), capture_key_id(prod)
    reader = policy_name("prod", CAPTURE_READER)
    documents = [p["PolicyDocument"] for p in resources(prod.serving, "AWS::IAM::Policy").values()]
    documents += [
        p["PolicyDocument"]
        for p in resources(prod.access, "AWS::IAM::ManagedPolicy").values()
        if p.get("ManagedPolicyName") != reader
    ]
    readers = []
    for document in documents:
        for s in document["Statement"]:
            actions = as_list(s["Action"])
            if "s3:GetObject" in actions and mentions(s, bucket):
                readers.append(s)
            if "kms:Decrypt" in actions and mentions(s, key) and "kms:ViaService" not in json.dumps(s.get("Condition")):
                readers.append(s)
    assert readers == []


def test_the_model_role_writes_under_the_prefix_and_never_decrypts(prod) -> None:
    bucket, key = capture_bucket_id(prod), capture_key_id(prod)
    (role_policy,) = [
        p for lid, p in resources(prod.serving, "AWS::IAM::Policy").items() if lid.startswith("ModelsExecutionRole")
    ]
    on_capture = [s for s in role_policy["PolicyDocument"]["Statement"] if mentions(s, bucket) or mentions(s, key)]
    actions = {a for s in on_capture for a in as_list(s["Action"])}
    assert actions == {"s3:PutObject", "s3:AbortMultipartUpload", "kms:Encrypt", "kms:GenerateDataKey"}


# --- the capture key answers to its reader only (issue 38) ------------------------------------------


def key_policy(prod) -> list[dict]:
    return resources(prod.serving, "AWS::KMS::Key")[capture_key_id(prod)]["KeyPolicy"]["Statement"]


def grants(statement: dict, action: str) -> bool:
    """Whether the statement's actions cover `action` (wildcards too), whoever its principal."""
    return allowed([{"Effect": "Allow", "Action": statement["Action"], "Resource": "*"}], action, "*", {})


def principal_of(statement: dict) -> str:
    value = statement["Principal"]["AWS"]
    return ref_of(value) if isinstance(value, dict) and ("Ref" in value or "Fn::GetAtt" in value) else json.dumps(value)


def admitted_role(statement: dict) -> str:
    """The role a statement admits by `aws:PrincipalArn`, as the template writes it ("" for none)."""
    role = statement.get("Condition", {}).get("ArnEquals", {}).get("aws:PrincipalArn")
    if role is None:
        return ""
    return ref_of(role) if isinstance(role, dict) and "Fn::GetAtt" in role else json.dumps(role)


def test_the_key_policy_names_no_role_as_a_principal(prod) -> None:
    """KMS checks that a key policy's principals exist when it writes the policy (issue 50 §4); a condition value
    it does not resolve. The model role is created by this very deploy: it is named by aws:PrincipalArn too."""
    assert all(principal_of(s) == json.dumps("arn:aws:iam::222222222222:root") for s in key_policy(prod))
    roles = sorted(admitted_role(s) for s in key_policy(prod) if admitted_role(s))
    assert roles[0].startswith("ModelsExecutionRole") and roles[1].endswith(':role/MangaAssist-prod-CaptureReader"]]}')


def test_only_the_capture_reader_role_may_decrypt_and_only_through_s3(prod) -> None:
    """No statement of the key policy lets anyone else decrypt, through any wildcard (kms:*, kms:Decrypt*,
    *): CDK's default `kms:*` for the account is gone."""
    decrypting = [s for s in key_policy(prod) if s["Effect"] == "Allow" and grants(s, "kms:Decrypt")]
    assert len(decrypting) == 1
    (statement,) = decrypting
    # The account, narrowed to the reader role's sessions by aws:PrincipalArn (the role is the access stack's,
    # deployed after this key's policy is written: constructs/capture_reader_role.py).
    assert principal_of(statement) == json.dumps("arn:aws:iam::222222222222:root")
    assert json.dumps(statement["Condition"]["ArnEquals"]["aws:PrincipalArn"]).endswith(
        ':role/MangaAssist-prod-CaptureReader"]]}'
    )
    assert statement["Condition"]["StringEquals"]["kms:ViaService"]


def test_the_account_administers_the_key_without_using_it(prod) -> None:
    """The key stays manageable (PutKeyPolicy, ScheduleKeyDeletion, … for the account, so CloudFormation's
    execution role and the account's administrators keep them through IAM), and that statement allows
    no cryptographic operation and no CreateGrant (a grant could hand out Decrypt)."""
    (account,) = [s for s in key_policy(prod) if s["Sid"] == "KeyAdministrationWithoutUse"]
    for action in ("kms:PutKeyPolicy", "kms:DescribeKey", "kms:ScheduleKeyDeletion", "kms:EnableKeyRotation"):
        assert grants(account, action), action
    for action in ("kms:Decrypt", "kms:Encrypt", "kms:ReEncryptFrom", "kms:GenerateDataKey", "kms:CreateGrant"):
        assert not grants(account, action), action


def test_cloudformation_can_still_manage_the_key(prod) -> None:
    """Every KMS permission CloudFormation's AWS::KMS::Key handlers declare on an existing key (the registry
    schema: tests/stacks/test_execution_policy.py) and the SageMaker endpoint config's kms:DescribeKey are in
    the account's statement, which the execution role's IAM policy then uses; CreateKey and ListKeys name
    no key."""
    (account,) = [s for s in key_policy(prod) if s["Sid"] == "KeyAdministrationWithoutUse"]
    declared = handler_permissions("AWS::KMS::Key") | {"kms:DescribeKey"}
    assert [a for a in sorted(declared - {"kms:CreateKey", "kms:ListKeys"}) if not grants(account, a)] == []


def test_the_model_role_may_only_encrypt_with_the_key(prod) -> None:
    (model,) = [s for s in key_policy(prod) if admitted_role(s).startswith("ModelsExecutionRole")]
    assert sorted(as_list(model["Action"])) == ["kms:Encrypt", "kms:GenerateDataKey"]


def reader_role(synthesised) -> dict:
    roles = resources(synthesised.access, "AWS::IAM::Role").values()
    (role,) = [r for r in roles if r.get("RoleName") == f"MangaAssist-{synthesised.cfg.name}-CaptureReader"]
    return role


def test_the_reader_role_is_the_access_stacks_bounded_mfa_conditioned_and_holds_only_the_reader_policy(prod) -> None:
    role = reader_role(prod)
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Condition"] == {"Bool": {"aws:MultiFactorAuthPresent": "true"}}
    assert role["MaxSessionDuration"] == 3600
    assert "MangaAssistGuard-StackRoleBoundary" in json.dumps(role["PermissionsBoundary"])
    (reader_id,) = [
        lid
        for lid, p in resources(prod.access, "AWS::IAM::ManagedPolicy").items()
        if p["ManagedPolicyName"] == policy_name("prod", CAPTURE_READER)
    ]
    assert role["ManagedPolicyArns"] == [{"Ref": reader_id}] and "Policies" not in role
    assert OUTPUT_CAPTURE_READER_ROLE_ARN in prod.access.to_json()["Outputs"]
    assert not [lid for lid in resources(prod.serving, "AWS::IAM::Role") if lid.startswith("CaptureReader")]


def reader_statements(synthesised) -> list[dict]:
    """What the reader role may do: its policies' statements, as deployed (the imports resolved)."""
    cfg = synthesised.cfg
    stacks = [
        Stack(name, template.to_json(), "aws", cfg.region, cfg.account)
        for name, template in (
            (synthesised.serving_stack_name, synthesised.serving),
            (synthesised.access_stack_name, synthesised.access),
        )
    ]
    policies = stacks[1].template["Resources"]
    documents = [
        policies[ref["Ref"]]["Properties"]["PolicyDocument"] for ref in reader_role(synthesised)["ManagedPolicyArns"]
    ]
    return [s for d in documents for s in Resolver(stacks).resolve(stacks[1], d)["Statement"]]


def test_the_capture_reader_reads_the_capture_and_cannot_change_production(prod) -> None:
    """Issue 51: reading chats grants no change to prod (weights, scaling, images, floor records)."""
    statements = reader_statements(prod)
    region, account = prod.cfg.region, prod.cfg.account
    for action, resource in (
        (
            "sagemaker:UpdateEndpointWeightsAndCapacities",
            f"arn:aws:sagemaker:{region}:{account}:endpoint/mangaassist-llm-prod",
        ),
        ("sagemaker:UpdateEndpoint", f"arn:aws:sagemaker:{region}:{account}:endpoint/mangaassist-llm-prod"),
        ("application-autoscaling:RegisterScalableTarget", "*"),
        ("ecr:PutImage", f"arn:aws:ecr:{region}:{account}:repository/mangaassist"),
        ("ssm:PutParameter", f"arn:aws:ssm:{region}:{account}:parameter/mangaassist/prod/rollback-floor/primary"),
    ):
        assert not allowed(statements, action, resource, {}), action
    (read,) = [s for s in statements if s["Sid"] == "CaptureRead"]
    capture_object = as_list(read["Resource"])[0].replace("*", "2026/11/29/00/batch.jsonl")
    assert allowed(statements, "s3:GetObject", capture_object, {})  # what it is for


def test_named_readers_are_the_ones_the_trust_names(cdk_context) -> None:
    """By aws:PrincipalArn: an exact role and an IAM Identity Center permission set's role pattern."""
    prod = load_environment("prod")
    readers = [
        "arn:aws:iam::222222222222:role/DataProtection",
        "arn:aws:iam::222222222222:role/aws-reserved/sso.amazonaws.com/*/AWSReservedSSO_BreakGlass_*",
    ]
    capture_cfg = prod.data_capture.model_copy(update={"readers": readers, "reader_mfa": False})
    stack = cdk.Stack(cdk.App(context=cdk_context), "Readers")
    CaptureReaderRole(stack, "Reader", env_name="prod", config=capture_cfg)
    (role,) = Template.from_stack(stack).find_resources("AWS::IAM::Role").values()
    (trust,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Condition"] == {"ArnLike": {"aws:PrincipalArn": readers}}
    assert "root" in json.dumps(trust["Principal"])


def test_mfa_with_identity_center_readers_is_refused(problems) -> None:
    """Identity Center sessions never carry aws:MultiFactorAuthPresent: nobody could assume the role."""

    def mutate(raw: dict) -> None:
        raw["data_capture"]["readers"] = [
            "arn:aws:iam::222222222222:role/aws-reserved/sso.amazonaws.com/*/AWSReservedSSO_BreakGlass_*"
        ]
        raw["data_capture"]["reader_mfa"] = True

    (found,) = problems(mutate)
    assert found.startswith("data_capture.reader_mfa: ") and "IAM Identity Center" in found


def test_no_reader_policy_without_capture(dev) -> None:
    assert not dev.cfg.data_capture.enabled
    assert managed_policy(dev.access, policy_name("dev", CAPTURE_READER)) is None
    assert OUTPUT_CAPTURE_READER_POLICY_ARN not in dev.access.to_json()["Outputs"]


# --- what is captured, and for how long --------------------------------------------------------------


def test_prod_captures_requests_only_for_seven_days(prod) -> None:
    assert prod.cfg.data_capture.capture_options == "input" and prod.cfg.data_capture.retention_days == 7
    (config,) = resources(prod.serving, "AWS::SageMaker::EndpointConfig").values()
    assert config["DataCaptureConfig"]["CaptureOptions"] == [{"CaptureMode": "Input"}]
    bucket = resources(prod.serving, "AWS::S3::Bucket")[capture_bucket_id(prod)]
    (rule,) = bucket["LifecycleConfiguration"]["Rules"]
    assert rule == {
        "ExpirationInDays": 7,
        "NoncurrentVersionExpiration": {"NoncurrentDays": 1},
        "Prefix": "capture/",
        "Status": "Enabled",
    }


def test_capture_options_become_capture_modes(cdk_context) -> None:
    prod = load_environment("prod")
    stack = cdk.Stack(cdk.App(context=cdk_context), "Capture")
    capture = CaptureBucket(stack, "DataCapture", retention_days=7, description="test")
    emitted = {}
    for choice in ("input", "output", "both"):
        cfg = prod.model_copy(update={"data_capture": prod.data_capture.model_copy(update={"capture_options": choice})})
        options = InferenceEndpoint._data_capture(cfg, capture).capture_options
        emitted[choice] = [option.capture_mode for option in options]
    assert emitted == {"input": ["Input"], "output": ["Output"], "both": ["Input", "Output"]}


# --- refusals ----------------------------------------------------------------------------------------


def capture(**fields):
    return lambda raw: raw["data_capture"].update(fields)


def test_capture_without_expiry_is_refused(problems) -> None:
    assert problems(capture(retention_days=None)) == [
        "data_capture.retention_days: captured prompts are personal data and must expire: give the days S3 keeps "
        "them, got null (allowed: 1-3650; in production at most 7 unless retention_reason says why)"
    ]


def test_capture_without_its_kms_key_is_refused(problems) -> None:
    for encryption in ("none", "sse-s3"):
        assert problems(capture(encryption=encryption)) == [
            "data_capture.encryption: captured prompts are personal data: capture is stored only under the capture "
            "bucket's own KMS key (reading needs kms:Decrypt on it, logged in CloudTrail), got "
            f"'{encryption}' (allowed: 'kms', or enabled: false)"
        ]


def test_production_keeps_seven_days_unless_a_reason_is_written(problems) -> None:
    assert problems(capture(retention_days=30)) == [
        "data_capture.retention_days: a production environment keeps captured prompts at most 7 days unless "
        "data_capture.retention_reason says why they are needed longer, got 30 days and no reason (allowed: 1-7, "
        "or a retention_reason beside it)"
    ]
    assert problems(capture(retention_days=30, retention_reason="   ")) != []
    assert problems(capture(retention_days=30, retention_reason="a month of traffic for the Q3 load test")) == []
    assert problems(capture(retention_days=7)) == []


def test_longer_retention_outside_production_needs_no_reason(problems) -> None:
    def staging_like(raw: dict) -> None:
        raw["production"] = False
        raw["data_capture"].update(retention_days=30)

    assert problems(staging_like) == []


def test_disabled_capture_is_not_held_to_the_capture_rules(problems) -> None:
    assert problems(lambda raw: raw.update(data_capture={"enabled": False, "encryption": "none"})) == []


def test_unknown_capture_option_names_the_allowed_ones(problems) -> None:
    (found,) = problems(capture(capture_options="prompts"))
    assert found.startswith("data_capture.capture_options: Input should be 'input', 'output' or 'both'")
