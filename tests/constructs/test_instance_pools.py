"""Instance pools (issue 31 §2): prod's variants fall back from ml.g5.xlarge to ml.g6.xlarge, emitted as
InstancePools without InstanceType; every per-type rule holds each fallback, refused at its own path."""

from __future__ import annotations

import copy

import pytest
from aws_cdk.assertions import Match
from ruamel.yaml import YAML

from config import ConfigError, load_catalog, load_config_file, load_environment
from config.checks.platform import check_inference_amis, check_instance_quotas, largest_fleet
from config.checks.variants import check_variants
from config.checks.vram_budget import check_vram_budget
from config.deployed import Deployed, DeployedVariant
from config.loader import environment_file
from tests.synthesised import PROD_YAML

POOLS = [{"InstanceType": "ml.g5.xlarge", "Priority": 1}, {"InstanceType": "ml.g6.xlarge", "Priority": 2}]


def variants(environment) -> list[dict]:
    (config,) = environment.serving.find_resources("AWS::SageMaker::EndpointConfig").values()
    return config["Properties"]["ProductionVariants"]


# --- the template ------------------------------------------------------------------------------------


def test_prod_variants_carry_instance_pools_by_priority_and_no_instance_type(prod) -> None:
    for name in ("primary", "canary"):
        prod.serving.has_resource_properties(
            "AWS::SageMaker::EndpointConfig",
            {
                "ProductionVariants": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "VariantName": name,
                                "InstancePools": POOLS,
                                "InstanceType": Match.absent(),
                                "VariantInstanceProvisionTimeoutInSeconds": 900,
                            }
                        )
                    ]
                )
            },
        )


def test_a_variant_without_fallbacks_keeps_instance_type_and_nothing_else(dev) -> None:
    for variant in variants(dev):
        assert variant["InstanceType"] == dev.cfg.variant(variant["VariantName"]).instance_type
        assert "InstancePools" not in variant
        assert "VariantInstanceProvisionTimeoutInSeconds" not in variant


def test_one_model_serves_every_pool(prod) -> None:
    for variant in variants(prod):
        assert all(set(pool) == {"InstanceType", "Priority"} for pool in variant["InstancePools"])  # no override


def test_the_dashboard_graphs_pooled_variants_by_instance_type(prod, dev) -> None:
    def dashboard_body(environment) -> str:
        (dashboard,) = environment.serving.find_resources("AWS::CloudWatch::Dashboard").values()
        return str(dashboard["Properties"]["DashboardBody"])

    prod_body = dashboard_body(prod)
    assert "by instance type (instance pools)" in prod_body
    assert '"InstanceType","ml.g6.xlarge"' in prod_body and '"InstanceType","ml.g5.xlarge"' in prod_body
    assert "instance pools" not in dashboard_body(dev)


# --- refusals: each rule on instance_type holds every fallback ---------------------------------------


def primary(raw: dict) -> dict:
    return raw["variants"][0]


def test_prod_passes_every_per_type_rule_with_its_fallback() -> None:
    cfg, catalog = load_environment("prod"), load_catalog()
    assert [v.instance_types for v in cfg.variants] == [["ml.g5.xlarge", "ml.g6.xlarge"]] * 2
    assert check_variants(cfg, catalog) == []
    assert check_vram_budget(cfg, catalog) == []
    assert check_inference_amis(cfg, catalog) == []
    assert check_instance_quotas(cfg, catalog) == []


def test_an_unknown_fallback_is_refused_at_its_own_path(problems) -> None:
    found = problems(lambda raw: primary(raw).update(fallback_instance_types=["ml.g6.xlarge", "ml.g6e.xlarge"]))
    assert len(found) == 1, found
    assert found[0].startswith(
        "variants[0].fallback_instance_types[1]: unknown instance type 'ml.g6e.xlarge' (did you mean 'ml.g6.xlarge'?); "
        "known: ml.g4dn.xlarge, ml.g5.2xlarge, ml.g5.xlarge"
    )


def test_the_preferred_type_repeated_as_a_fallback_is_refused(problems) -> None:
    found = problems(lambda raw: primary(raw).update(fallback_instance_types=["ml.g5.xlarge"]))
    assert found == [
        "variants[0].fallback_instance_types[0]: ml.g5.xlarge is the variant's instance_type (priority 1) already"
    ]


def test_a_fallback_listed_twice_is_refused(problems) -> None:
    found = problems(lambda raw: primary(raw).update(fallback_instance_types=["ml.g6.xlarge", "ml.g6.xlarge"]))
    assert found == [
        "variants[0].fallback_instance_types[1]: ml.g6.xlarge is listed twice; each pool needs a type of its own"
    ]


def test_fallbacks_without_a_provision_timeout_are_refused(problems) -> None:
    found = problems(lambda raw: primary(raw).pop("instance_provision_timeout_seconds"))
    assert found == [
        "variants[0].instance_provision_timeout_seconds: required with fallback_instance_types: it is how long "
        "SageMaker tries the pools before a launch or scale-out fails (300-3600 s), and its default is not documented"
    ]


def test_a_provision_timeout_outside_the_api_range_is_refused(problems) -> None:
    found = problems(lambda raw: primary(raw).update(instance_provision_timeout_seconds=60))
    assert found == [
        "variants[0].instance_provision_timeout_seconds: Input should be greater than or equal to 300, got 60"
    ]


def test_more_than_five_pools_are_refused(problems) -> None:
    found = problems(lambda raw: primary(raw).update(fallback_instance_types=["ml.g6.xlarge"] * 5))
    assert found[0].startswith("variants[0].fallback_instance_types: List should have at most 4 items")


def test_a_fallback_too_small_for_the_vram_budget_is_refused(problems) -> None:
    def g4dn_fallback(raw: dict) -> None:
        primary(raw).update(fallback_instance_types=["ml.g6.xlarge", "ml.g4dn.xlarge"])
        raw["endpoint_instance_quotas"]["ml.g4dn.xlarge"] = 1000  # room for any fleet

    found = problems(g4dn_fallback)
    assert found == [
        "variants[0].fallback_instance_types[1]: ml.g4dn.xlarge is too small for engine.max_num_seqs 128 x "
        "engine.kv_cache_min_tokens_per_sequence 768 tokens x 128 KiB/token = 12.00 GiB of KV cache: 16 GiB x "
        "0.92 = 14.72 GiB usable, minus 5.3 GiB weights and 2.5 GiB runtime overhead leaves 6.92 GiB for the KV "
        "cache (443 tokens per sequence); lower max_num_seqs or pick a larger GPU"
    ]


def test_a_fallback_the_ami_does_not_support_is_refused() -> None:
    catalog = load_catalog()
    ami = catalog.inference_amis["al2023-ami-sagemaker-inference-gpu-4-1"]
    without_g6 = ami.model_copy(update={"instance_families": ["g4dn", "g5", "p5"]})
    narrowed = catalog.model_copy(
        update={"inference_amis": {**catalog.inference_amis, "al2023-ami-sagemaker-inference-gpu-4-1": without_g6}}
    )
    assert check_inference_amis(load_environment("prod"), narrowed) == [
        (
            f"variants[{index}].fallback_instance_types[0]",
            f"variant '{name}': its inference_ami_version al2023-ami-sagemaker-inference-gpu-4-1 does not support "
            "fallback ml.g6.xlarge (families g4dn, g5, p5); one AMI serves every pool of a variant, and the image "
            "needs CUDA 13.0",
        )
        for index, name in enumerate(("primary", "canary"))
    ]


def fleet_on_each_type() -> tuple[int, str]:
    """prod's largest fleet per pool type (both variants list both types) and its split by variant."""
    cfg = load_environment("prod")
    fleets = {v.name: largest_fleet(cfg, v) for v in cfg.variants}
    return sum(fleets.values()), " + ".join(f"{name} {count}" for name, count in fleets.items())


def test_each_pool_type_needs_the_quota_for_the_whole_fleet_twice(problems) -> None:
    fleet, split = fleet_on_each_type()
    found = problems(lambda raw: raw["endpoint_instance_quotas"].update({"ml.g6.xlarge": 8}))
    assert found == [
        f"endpoint_instance_quotas.ml.g6.xlarge: quota 8 is below {2 * fleet}: blue/green provisions a second full "
        f"fleet, and the largest fleet is {fleet} x ml.g6.xlarge ({split}, max_capacity; each pool type may have to "
        f"carry its variant's whole fleet), so a deploy at peak needs 2 x {fleet} = {2 * fleet}; request an increase "
        "or lower max_capacity"
    ]


def test_a_missing_quota_for_a_fallback_is_refused(problems) -> None:
    fleet, _ = fleet_on_each_type()
    found = problems(lambda raw: raw["endpoint_instance_quotas"].pop("ml.g6.xlarge"))
    assert found == [
        "endpoint_instance_quotas.ml.g6.xlarge: missing: record this account's quota 'ml.g6.xlarge for endpoint "
        f"usage' (Service Quotas, SageMaker); blue/green needs {2 * fleet} (2 x {fleet})"
    ]


def test_a_fallback_on_other_storage_than_the_preferred_type_is_refused(problems) -> None:
    """VolumeSizeInGB and KmsKeyId are one setting per variant: NVMe and EBS types cannot share it."""
    catalog = load_catalog()
    ebs = catalog.instance_types["ml.g6.xlarge"].model_copy(update={"local_nvme": False})
    cfg = load_environment("prod")
    found = check_variants(
        cfg, catalog.model_copy(update={"instance_types": {**catalog.instance_types, "ml.g6.xlarge": ebs}})
    )
    assert found[0] == (
        "variants[0].fallback_instance_types[0]",
        "ml.g6.xlarge has no local NVMe storage but ml.g5.xlarge has local NVMe storage; volume_size_gb and "
        "endpoint_kms_key_arn are one setting for every pool of the variant, so its types must agree",
    )
    assert len(found) == 2  # the canary's, at variants[1]


def test_a_storage_key_is_refused_when_a_fallback_has_local_nvme() -> None:
    """The preferred type on EBS, the fallback on NVMe: the key names the fallback."""
    catalog = load_catalog()
    ebs = catalog.instance_types["ml.g5.xlarge"].model_copy(update={"local_nvme": False})
    all_ebs = {**catalog.instance_types, "ml.g5.xlarge": ebs}
    key = "arn:aws:kms:ap-northeast-1:222222222222:key/abcd-1234"
    cfg = load_environment("prod").model_copy(update={"endpoint_kms_key_arn": key})
    found = check_variants(cfg, catalog.model_copy(update={"instance_types": all_ebs}))
    assert (
        "endpoint_kms_key_arn",
        "variant 'primary' may fall back to ml.g6.xlarge, which has local NVMe storage; a storage KMS key does not "
        "apply to it (remove the field)",
    ) in found


# --- against what is deployed: the preferred type is what counts -------------------------------------

BOTH_SCALED = {"primary": DeployedVariant("ml.g5.xlarge", True), "canary": DeployedVariant("ml.g5.xlarge", True)}


def test_adding_pools_behind_the_deployed_type_of_a_scaled_variant_passes() -> None:
    """prod.yaml adds ml.g6.xlarge behind ml.g5.xlarge; the record (no pools) names ml.g5.xlarge."""
    assert load_config_file(environment_file("prod"), "prod", Deployed(BOTH_SCALED)).variants[0].instance_types == [
        "ml.g5.xlarge",
        "ml.g6.xlarge",
    ]


def test_swapping_the_preferred_type_of_a_scaled_variant_is_refused(tmp_path) -> None:
    raw = copy.deepcopy(PROD_YAML)
    primary(raw).update(instance_type="ml.g6.xlarge", fallback_instance_types=["ml.g5.xlarge"])
    path = tmp_path / "prod.yaml"
    with path.open("w") as handle:
        YAML().dump(raw, handle)
    with pytest.raises(ConfigError) as refused:
        load_config_file(path, "prod", Deployed(BOTH_SCALED))
    assert [field for field, _ in refused.value.problems] == ["variants[0].instance_type"]
    assert refused.value.problems[0][1].startswith("changes scaled variant 'primary' from ml.g5.xlarge to ml.g6.xlarge")
