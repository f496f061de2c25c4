"""The proof in tests/operator_policy_check.py maps calls from AWS's text, and it can fail."""

from __future__ import annotations

import botocore.session
import pytest

import tests.operator_policy_check as check
from config.access import CAPTURE_READER, DEPLOYER, OPERATOR, SCALING_TAG_KEY
from ops.commands.cli import app
from ops.operations.permissions import COMMAND_POLICIES, LOAD_TEST
from tests.operator_policy_check import EXCEPTIONS, NO_PERMISSION, Call, iam_action, refusals

ENDPOINT_ARN = "arn:aws:sagemaker:ap-northeast-1:222222222222:endpoint/mangaassist-llm-prod"


def test_a_rollback_is_refused_by_a_policy_without_the_endpoint_statement(
    prod, cli, monkeypatch, every_cli_call_is_allowed_by_the_operator_policy
) -> None:
    calls = every_cli_call_is_allowed_by_the_operator_policy
    prod.set_weights(primary=50, canary=50)
    assert cli("rollback", "prod").exit_code == 0
    assert ("sagemaker", "UpdateEndpointWeightsAndCapacities", ("Operator",)) in {
        (c.service, c.operation, c.policies) for c in calls
    }
    assert refusals(calls) == []

    original = check.operator_statements
    monkeypatch.setattr(
        check, "operator_statements", lambda scope: [s for s in original(scope) if s["Sid"] != "Endpoint"]
    )
    assert (
        f"sagemaker:UpdateEndpointWeightsAndCapacities on {ENDPOINT_ARN}: not allowed by prod's operator policy"
        in refusals(calls)
    )
    monkeypatch.setattr(check, "operator_statements", original)  # the fixture's own check then passes


def test_a_call_the_operator_policy_does_not_name_is_refused_and_one_without_a_rule_is_reported(prod) -> None:
    delete = Call(prod.cfg, prod.session, "sagemaker", "DeleteEndpoint", {"EndpointName": prod.endpoint})
    assert refusals([delete]) == [f"sagemaker:DeleteEndpoint on {ENDPOINT_ARN}: not allowed by prod's operator policy"]
    unknown = Call(prod.cfg, prod.session, "iam", "GetRole", {"RoleName": "anything"})
    assert refusals([unknown]) == ["iam:GetRole: the ops CLI calls it, and the proof has no rule for it"]


@pytest.mark.parametrize(("service", "operation"), sorted(EXCEPTIONS))
def test_each_exception_is_what_botocores_model_says(service: str, operation: str) -> None:
    documentation = botocore.session.get_session().get_service_model(service).operation_model(operation).documentation
    action = EXCEPTIONS[service, operation]
    assert (NO_PERMISSION in documentation) if action is None else (f"<code>{action}</code>" in documentation)


def test_the_streaming_invocation_is_authorised_as_invoke_endpoint_and_others_by_their_name() -> None:
    assert iam_action("sagemaker-runtime", "InvokeEndpointWithResponseStream") == "sagemaker:InvokeEndpoint"
    assert iam_action("sagemaker-runtime", "InvokeEndpoint") == "sagemaker:InvokeEndpoint"  # signing name sagemaker
    assert iam_action("cloudwatch", "GetMetricData") == "cloudwatch:GetMetricData"
    assert iam_action("s3", "ListObjectsV2") == "s3:ListBucket"
    assert iam_action("sts", "GetCallerIdentity") is None


def test_assuming_the_cdk_deploy_role_needs_the_deployer_policy(prod) -> None:
    role = "arn:aws:iam::222222222222:role/cdk-hnb659fds-deploy-role-222222222222-ap-northeast-1"
    assume = Call(prod.cfg, prod.session, "sts", "AssumeRole", {"RoleArn": role, "RoleSessionName": "cdk"})
    assert refusals([assume]) == [f"sts:AssumeRole on {role}: not allowed by prod's operator policy"]
    assume.policies = (OPERATOR, DEPLOYER)
    assert refusals([assume]) == []
    other = Call(prod.cfg, prod.session, "sts", "AssumeRole", {"RoleArn": role.replace("deploy", "cfn-exec")})
    other.policies = (OPERATOR, DEPLOYER)
    assert "not allowed by prod's operator + deployer policy" in refusals([other])[0]


def test_reading_captured_payloads_needs_the_capture_reader_policy(prod) -> None:
    read = Call(prod.cfg, prod.session, "s3", "GetObject", {"Bucket": "capture-bucket", "Key": "capture/a.jsonl"})
    read.capture_bucket = "capture-bucket"
    assert refusals([read]) == [
        "s3:GetObject on arn:aws:s3:::capture-bucket/capture/a.jsonl: not allowed by prod's operator policy"
    ]
    read.policies = (OPERATOR, CAPTURE_READER)
    assert refusals([read]) == []


def scaling_call(prod, operation: str, *, tags: dict | None, target_tags: dict, arn: str) -> Call:
    params = {
        "ServiceNamespace": "sagemaker",
        "ResourceId": f"endpoint/{prod.endpoint}/variant/primary",
        "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
        **({"Tags": tags} if tags is not None else {}),
    }
    call = Call(prod.cfg, prod.session, "application-autoscaling", operation, params)
    call.target_arn, call.target_tags = arn, target_tags
    return call


def test_scaling_writes_need_this_endpoints_tag_on_the_target_or_in_the_registration(prod) -> None:
    ours = {SCALING_TAG_KEY: prod.endpoint}
    target = "arn:aws:application-autoscaling:ap-northeast-1:222222222222:scalable-target/0123abcd"
    assert refusals([scaling_call(prod, "DeregisterScalableTarget", tags=None, target_tags=ours, arn=target)]) == []
    theirs = scaling_call(prod, "DeregisterScalableTarget", tags=None, target_tags={SCALING_TAG_KEY: "x"}, arn=target)
    assert refusals([theirs]) == [
        f"application-autoscaling:DeregisterScalableTarget on {target}: not allowed by prod's operator policy"
    ]
    new = check.NEW_TARGET.rsplit("/", 1)[1]
    anew = scaling_call(prod, "RegisterScalableTarget", tags=ours, target_tags={}, arn=check.NEW_TARGET)
    assert refusals([anew]) == []
    untagged = scaling_call(prod, "RegisterScalableTarget", tags=None, target_tags={}, arn=check.NEW_TARGET)
    assert set(refusals([untagged])) == {
        f"application-autoscaling:{action} on arn:aws:application-autoscaling:ap-northeast-1:222222222222:"
        f"scalable-target/{new}: not allowed by prod's operator policy"
        for action in ("RegisterScalableTarget", "TagResource")
    }


def test_every_command_of_the_cli_is_in_the_map_but_bedrock_import() -> None:
    """And the load test, a program of its own since issue 49; `capacity` only says where it went."""
    commands = {c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands}
    assert commands - set(COMMAND_POLICIES) == {"bedrock-import", "capacity"}
    assert set(COMMAND_POLICIES) - commands == {LOAD_TEST}
