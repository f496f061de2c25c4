"""`rollback`: canary weight 0 at once, confirmed by describing the endpoint."""

from __future__ import annotations

import boto3
from botocore.stub import Stubber


def test_rollback_puts_all_traffic_on_the_primary_even_with_alarms_firing(prod, cli):
    prod.set_weights(primary=50, canary=50)
    prod.alarm("mangaassist-prod-canary-5xx", "canary")  # the reason one rolls back; never a reason to refuse

    result = cli("rollback", "prod")

    assert result.exit_code == 0, result.output
    assert "Rolling back mangaassist-llm-prod: canary 50% → 0%, primary → 100%" in result.output
    assert "InService; weights primary 100→100, canary 0→0" in result.output
    assert "all traffic on primary; canary weight 0 is in effect" in result.output
    assert prod.weights() == {"primary": 100.0, "canary": 0.0}


def test_rollback_of_an_unknown_variant_is_a_usage_error(prod, cli):
    result = cli("rollback", "prod", "--canary", "blue")

    assert result.exit_code == 2
    assert "has no variant 'blue'" in result.stderr


def test_rollback_gives_up_when_the_weights_never_take_effect(prod, cli):
    """moto applies weights instantly, so a slow endpoint needs botocore's Stubber: the sagemaker
    client answers every describe with the old weights until the waiter's attempts run out."""
    sagemaker = boto3.client("sagemaker", region_name="ap-northeast-1")
    stub = Stubber(sagemaker)
    stuck = {
        "EndpointName": prod.endpoint,
        "EndpointArn": f"arn:aws:sagemaker:ap-northeast-1:222222222222:endpoint/{prod.endpoint}",
        "EndpointConfigName": "cfg-1",
        "EndpointStatus": "Updating",
        "CreationTime": "2026-11-01T00:00:00Z",
        "LastModifiedTime": "2026-11-01T00:00:00Z",
        "ProductionVariants": [
            {"VariantName": "primary", "CurrentWeight": 50.0, "DesiredWeight": 100.0},
            {"VariantName": "canary", "CurrentWeight": 50.0, "DesiredWeight": 0.0},
        ],
    }
    stub.add_response("describe_endpoint", {**stuck, "EndpointStatus": "InService"})
    stub.add_response(
        "describe_endpoint_config",
        {
            "EndpointConfigName": "cfg-1",
            "EndpointConfigArn": "arn:aws:sagemaker:ap-northeast-1:222222222222:endpoint-config/cfg-1",
            "CreationTime": "2026-11-01T00:00:00Z",
            "ProductionVariants": [
                {"VariantName": "primary", "ModelName": "m-primary", "InstanceType": "ml.g5.xlarge"},
                {"VariantName": "canary", "ModelName": "m-canary", "InstanceType": "ml.g5.xlarge"},
            ],
        },
    )
    for model in ("m-primary", "m-canary"):
        stub.add_response(
            "describe_model",
            {
                "ModelName": model,
                "ModelArn": f"arn:aws:sagemaker:ap-northeast-1:222222222222:model/{model}",
                "CreationTime": "2026-11-01T00:00:00Z",
                "PrimaryContainer": {"Image": "222222222222.dkr.ecr.ap-northeast-1.amazonaws.com/mangaassist-llm:v1"},
            },
        )
    stub.add_response("describe_endpoint", {**stuck, "EndpointStatus": "InService"})  # it takes changes
    stub.add_response("update_endpoint_weights_and_capacities", {"EndpointArn": stuck["EndpointArn"]})
    for _ in range(cli.runtime.timing.max_polls):
        stub.add_response("describe_endpoint", stuck)
    cli.runtime.client_overrides["sagemaker"] = sagemaker

    with stub:
        result = cli("rollback", "prod")
        stub.assert_no_pending_responses()

    assert result.exit_code == 8
    assert "gave up waiting (WeightsInEffect): Max attempts exceeded" in result.stderr
    assert result.output.count("Updating; weights primary 50→100, canary 50→0") == 3
