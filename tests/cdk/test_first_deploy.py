"""What a first deploy on a real account needs from the templates (issue 10), on prod and dev.

Each environment is synthesised once per session (conftest fixtures).
"""

from __future__ import annotations

import pytest


@pytest.fixture(params=["prod", "dev"])
def environment(request):
    return request.getfixturevalue(request.param)


def _topic_statements(template) -> list[dict]:
    (policy,) = template.find_resources("AWS::SNS::TopicPolicy").values()
    return policy["Properties"]["PolicyDocument"]["Statement"]


def test_alarms_may_publish_to_the_topic_beside_the_tls_deny(environment) -> None:
    statements = _topic_statements(environment.serving)
    deny = [s for s in statements if s["Effect"] == "Deny"]
    assert deny and deny[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    (allow,) = [s for s in statements if s["Effect"] == "Allow"]
    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert allow["Action"] == "sns:Publish"
    assert allow["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}


def test_topic_policy_names_exactly_the_alarms_that_notify(environment) -> None:
    (allow,) = [s for s in _topic_statements(environment.serving) if s["Effect"] == "Allow"]
    allowed = {arn["Fn::GetAtt"][0] for arn in allow["Condition"]["ArnLike"]["aws:SourceArn"]}
    (topic,) = environment.serving.find_resources("AWS::SNS::Topic")
    notifying = environment.serving.find_resources(
        "AWS::CloudWatch::Alarm", {"Properties": {"AlarmActions": [{"Ref": topic}]}}
    )
    assert allowed == set(notifying)
    assert len(allowed) > 20


def _fixed_names(resource: dict) -> dict[str, str]:
    """Top-level `...Name` properties holding a literal string: a physical name fixed at synth."""
    return {
        key: value
        for key, value in resource.get("Properties", {}).items()
        if key.endswith("Name") and isinstance(value, str)
    }


@pytest.mark.parametrize("stack", ["image", "serving"])
def test_no_fixed_physical_name_is_kept_after_a_failed_create(environment, stack) -> None:
    """DeletionPolicy Retain keeps a resource when the first create rolls back; with a fixed name
    every retry then fails with "already exists". RetainExceptOnCreate does not keep it."""
    resources = getattr(environment, stack).to_json()["Resources"]
    offenders = {
        logical_id: _fixed_names(resource)
        for logical_id, resource in resources.items()
        if resource.get("DeletionPolicy") == "Retain" and _fixed_names(resource)
    }
    assert offenders == {}


def test_endpoint_log_group_is_kept_on_delete_but_not_after_a_failed_create(environment) -> None:
    environment.serving.has_resource(
        "AWS::Logs::LogGroup",
        {
            "Properties": {"LogGroupName": f"/aws/sagemaker/Endpoints/{environment.cfg.endpoint_name}"},
            "DeletionPolicy": "RetainExceptOnCreate",
            "UpdateReplacePolicy": "Retain",
        },
    )
