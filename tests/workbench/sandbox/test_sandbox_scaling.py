"""The sandbox's scaling record (workbench/sandbox/scaling.py): a changed range scales the variant and records the
activity that `bin/ops scaling-history` reads, Successful or Failed on the account's instance quota, in the
fields and wording of SageMaker's guide (endpoint-scaling-query-history). moto 5.2.5 alone answers
DescribeScalingActivities with a 500 page."""

from __future__ import annotations

import pytest

from config import load_environment
from ops.operations.scaling import SCALABLE_DIMENSION, SERVICE_NAMESPACE, resource_id
from tests.ops_world import Cli, World
from workbench.sandbox import scaling
from workbench.sandbox.schedule import ScheduleError, window_ranges


@pytest.fixture
def sandbox_scaling(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    for owner, name, replacement in scaling.patches():
        monkeypatch.setattr(owner, name, replacement, raising=False)
    quotas: dict[str, int] = {}
    monkeypatch.setattr(scaling, "QUOTAS", quotas)
    monkeypatch.setattr(scaling, "QUOTA_OVERRIDES", [])
    return quotas


def set_range(world: World, variant: str, minimum: int, maximum: int) -> None:
    world.client("application-autoscaling").register_scalable_target(
        ServiceNamespace=SERVICE_NAMESPACE,
        ResourceId=resource_id(world.endpoint, variant),
        ScalableDimension=SCALABLE_DIMENSION,
        MinCapacity=minimum,
        MaxCapacity=maximum,
    )


def instances(world: World, variant: str) -> int:
    described = world.client("sagemaker").describe_endpoint(EndpointName=world.endpoint)
    return next(v["CurrentInstanceCount"] for v in described["ProductionVariants"] if v["VariantName"] == variant)


def test_a_raised_floor_scales_out_and_scaling_history_reads_it(prod: World, cli: Cli, sandbox_scaling: dict) -> None:
    set_range(prod, "primary", 2, 36)  # holds the config's initial count: no activity
    set_range(prod, "primary", 6, 36)  # the first activity, 4 -> 6: no earlier count, the raised floor says out
    set_range(prod, "primary", 9, 36)  # 6 -> 9
    assert instances(prod, "primary") == 9
    result = cli("scaling-history", "prod")
    assert result.exit_code == 0, result.output
    assert "<!doctype html>" not in result.output
    scale_outs = result.output.split("Successful scale-outs")[1].split("Provisioning time")[0].replace(" ", "")
    assert "?->6" in scale_outs and "6->9" in scale_outs  # the first from an unknown count, still a scale-out
    assert "direction unknown 0" in result.output
    assert "Failed or unfulfilled (capacity that did not arrive)\n  none" in result.output


def test_a_scale_out_past_the_instance_quota_fails_as_sagemaker_refuses_it(
    prod: World, cli: Cli, sandbox_scaling: dict
) -> None:
    instance_type = prod.cfg.variants[0].instance_type
    primary, in_use = instances(prod, "primary"), instances(prod, "primary") + instances(prod, "canary")
    sandbox_scaling[instance_type] = in_use + 1  # room for one more instance, not for three
    set_range(prod, "primary", primary + 3, 36)
    assert instances(prod, "primary") == primary  # nothing was provisioned
    result = cli("scaling-history", "prod")
    assert result.exit_code == 0, result.output
    failures = result.output.split("Failed or unfulfilled")[1]
    assert "primary (" in failures and f": Failed, ?->{primary + 3}" in failures  # no earlier activity: from ?
    assert (
        f"The account-level service limit '{instance_type} for endpoint usage' is {in_use + 1} Instances, with "
        f"current utilization of {in_use} Instances and a request delta of 3 Instances" in " ".join(failures.split())
    )
    assert f"cause: minimum capacity was set to {primary + 3}" in failures


def test_a_range_that_holds_the_count_scales_nothing(prod: World, cli: Cli, sandbox_scaling: dict) -> None:
    set_range(prod, "primary", 2, 36)
    set_range(prod, "primary", 3, 36)
    assert instances(prod, "primary") == 4
    activities = prod.client("application-autoscaling").describe_scaling_activities(ServiceNamespace="sagemaker")
    assert activities["ScalingActivities"] == []


def test_a_window_lowers_a_count_above_its_maximum_as_a_scale_in(prod: World, sandbox_scaling: dict) -> None:
    set_range(prod, "primary", 2, 3)
    assert instances(prod, "primary") == 3
    (activity,) = prod.client("application-autoscaling").describe_scaling_activities(
        ServiceNamespace="sagemaker", ResourceId=resource_id(prod.endpoint, "primary")
    )["ScalingActivities"]
    assert (activity["StatusCode"], activity["Cause"]) == ("Successful", "maximum capacity was set to 3")
    assert activity["Description"] == "Setting desired instance count to 3."


def test_sandbox_schedule_takes_a_window_of_the_config_and_names_the_windows_when_it_is_unknown() -> None:
    cfg = load_environment("prod", against_deployed=False)
    window = cfg.autoscaling["primary"].schedules[0]
    assert window_ranges(cfg, window.name, end=False) == {"primary": (window.min_capacity, window.max_capacity)}
    primary = cfg.autoscaling["primary"]
    assert window_ranges(cfg, window.name, end=True) == {"primary": (primary.min_capacity, primary.max_capacity)}
    with pytest.raises(ScheduleError, match=f"prod has no scheduled window 'nope'; its windows: .*{window.name}"):
        window_ranges(cfg, "nope", end=False)
