"""`verify`: exit 0 only when the live endpoint is what the stack and the config say."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from ops.operations.environment import load_environment_config
from tests.ops_world import World, edit_environment, endpoint_answer, endpoint_config_answer, image_uri, model_answer


def test_everything_holds_after_a_clean_deploy(prod, cli):
    result = cli("verify", "prod")

    assert result.exit_code == 0, result.output
    assert "✗" not in result.output
    assert f"endpoint runs config {prod.config_names[-1]}, stack expects {prod.config_names[-1]}" in result.output
    assert "canary has 5% of traffic, config 5%" in result.output
    assert result.output.rstrip().endswith("checks hold")


def test_a_silent_rollback_is_caught(prod, cli):
    expected = prod.deploy()  # the stack now expects config-2 ...
    sagemaker = prod.client("sagemaker")
    sagemaker.delete_endpoint(EndpointName=prod.endpoint)  # ... but SageMaker went back to config-1
    sagemaker.create_endpoint(EndpointName=prod.endpoint, EndpointConfigName=prod.config_names[0])

    result = cli("verify", "prod")

    assert result.exit_code == 3
    assert (
        f"✗ endpoint runs config {prod.config_names[0]}, stack expects {expected} (rolled back, or deployed out of band?)"
        in result.output
    )


def test_shifted_weights_fail_unless_skipped(prod, cli):
    prod.set_weights(primary=75, canary=25)

    failed = cli("verify", "prod")
    skipped = cli("verify", "prod", "--skip-weights")

    assert failed.exit_code == 3
    assert "✗ canary has 25% of traffic, config 5%" in failed.output
    assert skipped.exit_code == 0, skipped.output


def test_an_image_other_than_the_configs_fails(environments, prod, cli):
    edit_environment(environments, "prod", lambda d: d["variants"][1].update(image_tag="v0.3.0"))

    result = cli("verify", "prod")

    assert result.exit_code == 3
    assert (
        "✗ canary image 222222222222.dkr.ecr.ap-northeast-1.amazonaws.com/mangaassist-llm:v0.1.0, config tag v0.3.0"
        in (result.output)
    )


def test_a_variant_whose_image_is_missing_from_ecr_fails(environments, prod, cli):
    image = "222222222222.dkr.ecr.ap-northeast-1.amazonaws.com/mangaassist-llm:src-0123456789ab"
    edit_environment(environments, "prod", lambda d: d["variants"][1].update(image_tag="src-0123456789ab"))
    prod.deploy(images={"canary": "src-0123456789ab"})
    # the lifecycle policy expired the build after newer ones were pushed
    prod.client("ecr").batch_delete_image(repositoryName="mangaassist-llm", imageIds=[{"imageTag": "src-0123456789ab"}])

    result = cli("verify", "prod")

    assert result.exit_code == 3
    assert "✓ primary image is in ECR" in result.output
    assert f"✓ canary image {image}, config tag src-0123456789ab" in result.output  # as deployed,
    assert f"✗ canary image {image} is missing from ECR: new instances cannot start" in result.output  # but gone


@pytest.mark.parametrize(
    ("built", "code", "mark"),
    [("src-0123456789ab", 0, "✓"), ("src-ba9876543210", 3, "✗")],  # then: container/ changed and was built since
    ids=["as-built", "built-since"],
)
def test_a_source_tag_is_what_the_image_stack_built(environments, prod, cli, built, code, mark):
    edit_environment(environments, "prod", lambda d: d["variants"][1].update(image_tag="source"))
    prod.deploy(images={"canary": "src-0123456789ab"})
    prod.image_stack(built)

    result = cli("verify", "prod")

    assert result.exit_code == code, result.output
    assert (
        f"{mark} canary image 222222222222.dkr.ecr.ap-northeast-1.amazonaws.com/mangaassist-llm:src-0123456789ab, "
        f"config tag source (built: {built})" in result.output
    )


def test_a_rollback_alarm_in_alarm_fails(prod, cli):
    cloudwatch = prod.client("cloudwatch")
    cloudwatch.put_metric_alarm(
        AlarmName="composite-like-rollback-alarm",
        Namespace="MangaAssist/LLMServing",
        MetricName="QueueDepth",
        Statistic="Maximum",
        Period=60,
        EvaluationPeriods=1,
        Threshold=1,
        ComparisonOperator="GreaterThanThreshold",
    )
    cloudwatch.set_alarm_state(AlarmName="composite-like-rollback-alarm", StateValue="ALARM", StateReason="test")
    prod.stack(prod.config_names[-1], rollback_alarms=("composite-like-rollback-alarm",))

    result = cli("verify", "prod")

    assert result.exit_code == 3
    assert "✗ in ALARM: composite-like-rollback-alarm" in result.output


def test_missing_stack_is_not_found(environments, worlds, cli):
    world = worlds("prod")
    world.deploy(stack_expects_latest=False)

    result = cli("verify", "prod")

    assert result.exit_code == 6
    assert "stack MangaAssist-prod-Serving does not exist in ap-northeast-1" in result.stderr


def test_the_real_ml_g5_prod_config_verifies(real_environments, moto, monkeypatch, cli):
    """The checked-in prod.yaml (ml.g5, which moto refuses): SageMaker through the Stubber, the rest on moto."""
    monkeypatch.setenv("MOTO_ACCOUNT_ID", "222222222222")
    cfg = load_environment_config("prod")
    world = World(cfg, boto3.Session(region_name=cfg.region))
    world.stack("mangaassist-llm-prod-config-7")
    for variant in cfg.variants:
        world.push_image(variant.image_tag)
    sagemaker = boto3.client("sagemaker", region_name=cfg.region)
    stub = Stubber(sagemaker)
    config = "mangaassist-llm-prod-config-7"
    live = [{"VariantName": v.name, "CurrentWeight": v.initial_weight, "DesiredWeight": v.initial_weight,
             "CurrentInstanceCount": v.initial_instance_count, "DesiredInstanceCount": v.initial_instance_count}
            for v in cfg.variants]  # fmt: skip
    stub.add_response("describe_endpoint", endpoint_answer(cfg.endpoint_name, live, config))
    configured = [  # as the prod template writes them: pools by priority, and their timeout
        {"VariantName": v.name, "ModelName": f"model-{v.name}",
         "InstancePools": [{"InstanceType": t, "Priority": n} for n, t in enumerate(v.instance_types, 1)],
         "VariantInstanceProvisionTimeoutInSeconds": v.instance_provision_timeout_seconds}
        for v in cfg.variants
    ]  # fmt: skip
    stub.add_response("describe_endpoint_config", endpoint_config_answer(config, configured))
    for variant in cfg.variants:
        stub.add_response("describe_model", model_answer(f"model-{variant.name}", image_uri(cfg, variant.image_tag)))
    cli.runtime.client_overrides["sagemaker"] = sagemaker

    with stub:
        result = cli("verify", "prod")
        stub.assert_no_pending_responses()

    assert result.exit_code == 0, result.output
    assert "✓ primary instance pools ml.g5.xlarge, ml.g6.xlarge (by priority), config ml.g5.xlarge, ml.g6.xlarge" in (
        result.output
    )
    assert "✓ primary instance provisioning timeout 900 s, config 900 s" in result.output


def test_verify_fails_when_the_live_pools_differ_from_the_config(environments, worlds, cli):
    """Issue 39 item 3: deployed on InstanceType alone, the config gives pools."""
    edit_environment(environments, "prod", lambda d: [v.update(fallback_instance_types=[]) for v in d["variants"]])
    prod = worlds("prod")
    prod.deploy()
    edit_environment(
        environments, "prod", lambda d: [v.update(fallback_instance_types=["ml.g6.xlarge"]) for v in d["variants"]]
    )

    result = cli("verify", "prod")

    assert result.exit_code == 3
    assert "✗ primary instance pools ml.g4dn.xlarge (by priority), config ml.g4dn.xlarge, ml.g6.xlarge" in result.output
    assert "✓ primary instance provisioning timeout 900 s, config 900 s" in result.output
