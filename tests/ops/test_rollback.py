"""`rollback`: canary weight 0 at once, confirmed by describing the endpoint."""

from __future__ import annotations

import boto3
from botocore.stub import Stubber

from tests.ops_world import endpoint_answer, endpoint_config_answer, image_uri, model_answer


def test_rollback_puts_all_traffic_on_the_primary_even_with_alarms_firing(prod, cli):
    prod.set_weights(primary=50, canary=50)
    prod.alarm("mangaassist-prod-canary-5xx", "canary")  # the reason one rolls back; never a reason to refuse

    result = cli("rollback", "prod")

    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr  # a valid config: no warning of an invalid one
    assert "Rolling back mangaassist-llm-prod: canary 50% → 0%, primary → 100%" in result.output
    assert "InService; weights primary 100→100, canary 0→0" in result.output
    assert "all traffic on primary; canary weight 0 is in effect" in result.output
    assert prod.weights() == {"primary": 100.0, "canary": 0.0}


def test_rollback_gives_up_when_the_weights_never_take_effect(prod, cli):
    """moto applies weights at once: the Stubber answers every describe with the old weights."""
    sagemaker = boto3.client("sagemaker", region_name="ap-northeast-1")
    stub = Stubber(sagemaker)
    weights = [("primary", 50.0, 100.0), ("canary", 50.0, 0.0)]
    variants = [{"VariantName": n, "CurrentWeight": now, "DesiredWeight": wanted} for n, now, wanted in weights]
    stuck = endpoint_answer(prod.endpoint, variants, EndpointStatus="Updating")
    stub.add_response("describe_endpoint", {**stuck, "EndpointStatus": "InService"})
    configured = [{"VariantName": n, "ModelName": f"m-{n}", "InstanceType": "ml.g5.xlarge"} for n, *_ in weights]
    stub.add_response("describe_endpoint_config", endpoint_config_answer("cfg-1", configured))
    for name, *_ in weights:
        stub.add_response("describe_model", model_answer(f"m-{name}", image_uri(prod.cfg, "v1")))
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
