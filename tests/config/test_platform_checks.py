"""Platform rules a real account enforces (config.checks.platform), asserted by the message."""

from __future__ import annotations

from config import load_catalog, load_environment
from config.checks.platform import check_inference_amis

OLD_AMI = "al2-ami-sagemaker-inference-gpu-3-1"


def variant(raw: dict, name: str) -> dict:
    return next(v for v in raw["variants"] if v["name"] == name)


def test_an_ami_whose_driver_is_too_old_for_the_image_is_refused(problems) -> None:
    found = problems(lambda raw: variant(raw, "canary").update(inference_ami_version=OLD_AMI))
    assert found == [
        f"variants[1].inference_ami_version: variant 'canary': {OLD_AMI} has NVIDIA driver 550 (CUDA 12.4), "
        "too old for the serving image vllm/vllm-openai:v0.33.0 (CUDA 13.0): the container cannot start; "
        "pick an AMI with CUDA >= 13.0"
    ]


def test_an_ami_that_does_not_support_the_instance_type_is_refused() -> None:
    catalog = load_catalog()
    ami = catalog.inference_amis["al2023-ami-sagemaker-inference-gpu-4-1"]
    without_g5 = ami.model_copy(update={"instance_families": ["g6", "p5"]})
    narrowed = catalog.model_copy(
        update={"inference_amis": {**catalog.inference_amis, "al2023-ami-sagemaker-inference-gpu-4-1": without_g5}}
    )
    found = check_inference_amis(load_environment("prod"), narrowed)
    assert found == [
        (
            f"variants[{index}].inference_ami_version",
            f"variant '{name}': al2023-ami-sagemaker-inference-gpu-4-1 does not support ml.g5.xlarge "
            "(families g6, p5); the image needs CUDA 13.0",
        )
        for index, name in enumerate(("primary", "canary"))
    ]


def test_an_unknown_ami_lists_the_known_ones(problems) -> None:
    found = problems(lambda raw: variant(raw, "primary").update(inference_ami_version="al2-ami-gpu-9"))
    assert len(found) == 1
    assert found[0].startswith("variants[0].inference_ami_version: unknown AMI 'al2-ami-gpu-9'; known: ")
    assert "al2023-ami-sagemaker-inference-gpu-4-1" in found[0]


def test_a_variant_without_an_ami_is_refused(problems) -> None:
    found = problems(lambda raw: variant(raw, "primary").pop("inference_ami_version"))
    assert found == ["variants[0].inference_ami_version: Field required"]


def one_instance_canary(raw: dict) -> None:
    """Make prod's canary a 1-instance variant (its floor and its initial count), as it was before the re-sizing."""
    variant(raw, "canary")["initial_instance_count"] = 1
    raw["autoscaling"]["canary"]["min_capacity"] = 1
    assert raw["autoscaling"]["primary"]["min_capacity"] >= 2  # the primary can take a 1-instance step


def test_a_canary_step_on_a_one_instance_variant_breaks_the_api_reading(problems) -> None:
    """1 instance of the smallest fleet (the primary's floor and the 1-instance canary) is within the guide's
    reading, but 100% of the canary variant."""

    def canary_one_instance(raw: dict) -> None:
        one_instance_canary(raw)
        raw["deployment"].update(traffic_routing="CANARY", step_size={"type": "INSTANCE_COUNT", "value": 1})

    assert problems(canary_one_instance) == [
        "deployment.step_size: CANARY step of 1 instance(s) is 100% of variant 'canary' at its smallest fleet of "
        "1 instance(s); the API says \"Value must be less than or equal to 50% of the variant's total instance "
        'count" (TrafficRoutingConfig.CanarySize, SageMaker API). A step turns on whole instances, so a '
        "1-instance variant cannot take one: use ALL_AT_ONCE or give every variant at least 2 instances"
    ]


def test_the_seeds_ten_percent_canary_is_refused_for_the_one_instance_variant(problems) -> None:
    def seeds_policy(raw: dict) -> None:
        one_instance_canary(raw)
        raw["deployment"].update(traffic_routing="CANARY", step_size={"type": "CAPACITY_PERCENT", "value": 10})

    found = problems(seeds_policy)
    assert len(found) == 1
    assert found[0].startswith("deployment.step_size: CANARY step of 1 instance(s) is 100% of variant 'canary'")


def test_a_linear_step_too_small_for_the_fleet_breaks_the_guide_reading(problems) -> None:
    """1 instance is 10% of each 10-instance variant (the API reading holds) but 5% of the 20-instance fleet."""

    def two_big_variants(raw: dict) -> None:
        for v in raw["variants"]:
            v["initial_instance_count"] = 10
        raw["autoscaling"] = {}
        raw["endpoint_instance_quotas"].update({"ml.g5.xlarge": 40, "ml.g6.xlarge": 40})
        raw["deployment"].update(
            traffic_routing="LINEAR",
            step_size={"type": "INSTANCE_COUNT", "value": 1},
            maximum_execution_timeout_seconds=28800,
        )

    assert problems(two_big_variants) == [
        "deployment.step_size: LINEAR step of 1 instance(s) is 5% of the new fleet's 20 instance(s) at its smallest; "
        'the guide says "each linear step should only be between 10-50% of the green fleet\'s capacity" '
        "(SageMaker guide, deployment-guardrails-blue-green-linear)"
    ]


def test_a_quota_below_twice_the_largest_fleet_is_refused_with_the_numbers(problems) -> None:
    found = problems(lambda raw: raw["endpoint_instance_quotas"].update({"ml.g5.xlarge": 20}))
    assert found == [
        "endpoint_instance_quotas.ml.g5.xlarge: quota 20 is below 240: blue/green provisions a second full fleet, "
        "and the largest fleet is 120 x ml.g5.xlarge (primary 103 + canary 17, max_capacity; each pool type may have "
        "to carry its variant's whole fleet), so a deploy at peak needs 2 x 120 = 240; request an increase or lower "
        "max_capacity"
    ]


def test_a_missing_quota_is_refused(problems) -> None:
    found = problems(lambda raw: raw.pop("endpoint_instance_quotas"))
    assert found == [
        f"endpoint_instance_quotas.{t}: missing: record this account's quota '{t} for endpoint "
        "usage' (Service Quotas, SageMaker); blue/green needs 240 (2 x 120)"
        for t in ("ml.g5.xlarge", "ml.g6.xlarge")  # the fallback pool too
    ]


def test_only_the_documented_routing_strategies_are_accepted(problems) -> None:
    found = problems(lambda raw: raw.update(routing_strategy="ROUND_ROBIN"))
    assert len(found) == 1
    assert found[0].startswith(
        "routing_strategy: Input should be 'LEAST_OUTSTANDING_REQUESTS', 'RANDOM', 'PREFIX_AWARE' or 'KV_AWARE'"
    )
