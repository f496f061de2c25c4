"""The serving stack's `MangaAssist-<env>-Operator` policy: named, output, scoped where AWS allows it.
That it is enough for every ops command is proved on the ops tests themselves (tests/operator_policy_check.py)."""

from __future__ import annotations

import json

from config import naming


def operator_policy(synthesised) -> dict:
    policies = synthesised.serving.find_resources("AWS::IAM::ManagedPolicy")
    (policy,) = [p["Properties"] for p in policies.values() if p["Properties"].get("ManagedPolicyName")]
    return policy


def statements(synthesised) -> dict[str, dict]:
    return {s["Sid"]: s for s in operator_policy(synthesised)["PolicyDocument"]["Statement"]}


def as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def test_named_for_the_environment_and_output(prod) -> None:
    assert operator_policy(prod)["ManagedPolicyName"] == "MangaAssist-prod-Operator"
    logical_id = next(iter(prod.serving.find_resources("AWS::IAM::ManagedPolicy")))
    output = prod.serving.to_json()["Outputs"][naming.OUTPUT_OPERATOR_POLICY_ARN]
    assert output["Value"] == {"Ref": logical_id}
    assert not prod.serving.find_resources(
        "AWS::IAM::Role", {"Properties": {"ManagedPolicyArns": [{"Ref": logical_id}]}}
    )


def test_weights_and_invocations_only_on_this_endpoint(prod) -> None:
    endpoint = statements(prod)["Endpoint"]
    assert set(endpoint["Action"]) == {
        "sagemaker:DescribeEndpoint",
        "sagemaker:UpdateEndpointWeightsAndCapacities",
        "sagemaker:InvokeEndpoint",
        "sagemaker:InvokeEndpointWithResponseStream",
    }
    assert json.dumps(endpoint["Resource"]).endswith(':endpoint/mangaassist-llm-prod"]]}')


def test_star_only_where_the_action_takes_no_resource_or_an_unpredictable_one(prod) -> None:
    wide = {sid for sid, s in statements(prod).items() if "*" in as_list(s["Resource"])}
    assert wide == {"Metrics", "Scaling"}
    assert statements(prod)["Metrics"]["Action"] == "cloudwatch:GetMetricData"
    assert all(a.startswith("application-autoscaling:") for a in statements(prod)["Scaling"]["Action"])
    every_action = [a for s in statements(prod).values() for a in as_list(s["Action"])]
    assert not [a for a in every_action if "*" in a], "no wildcard actions"
    assert not [
        a
        for a in every_action
        if a.startswith(("iam:", "sagemaker:Update", "sagemaker:Create", "sagemaker:Delete"))
        and a != "sagemaker:UpdateEndpointWeightsAndCapacities"
    ]


def test_image_repository_and_capture_bucket_are_this_environments(prod) -> None:
    repository = statements(prod)["ImageRepository"]["Resource"]
    assert "Fn::ImportValue" in repository and "ImageRepository" in repository["Fn::ImportValue"]
    bucket = statements(prod)["CaptureList"]["Resource"]
    assert bucket["Fn::GetAtt"][0].startswith("DataCaptureBucket")
    assert statements(prod)["CaptureDecrypt"]["Resource"]["Fn::GetAtt"][0].startswith("ServingKey")


def test_no_capture_statements_without_data_capture(dev) -> None:
    assert not dev.cfg.data_capture.enabled  # dev.yaml turns capture off
    assert "Endpoint" in statements(dev) and not {"CaptureList", "CaptureRead", "CaptureDecrypt"} & set(statements(dev))
