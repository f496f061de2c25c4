"""`bin/loadtest` on a variant with instance pools (issue 42 item 3): a fleet all of one type is that type's
measurement, the fallback's included, and is recorded under it; a fleet of mixed types is refused before
any request, with each type's figure, since through the runtime its answer would be a blend."""

from __future__ import annotations

import pytest
from moto.sagemaker.models import sagemaker_backends

from ops.operations.environment import open_environment
from ops.operations.errors import ExitCode, OpsError
from tests.ops.test_status_pools import deploy_with_pools
from workbench.loadtest.endpoint_target import variant_subject


def canary_on(world, in_service: dict[str, int]) -> None:
    endpoint = sagemaker_backends[world.cfg.account][world.cfg.region].endpoints[world.endpoint]
    canary = next(v for v in endpoint.production_variants if v["VariantName"] == "canary")
    count = sum(in_service.values())
    canary.update(
        CurrentInstanceCount=count,
        DesiredInstanceCount=count,
        InstancePools=[{"InstanceType": t, "CurrentInstanceCount": n} for t, n in in_service.items()],
    )


@pytest.fixture
def pooled(worlds):
    world = worlds("prod")
    deploy_with_pools(world)
    return world


def test_a_canary_all_on_its_fallback_is_measured_as_the_fallback_type(pooled):
    canary_on(pooled, {"ml.g4dn.xlarge": 0, "ml.g6.xlarge": 2})

    subject = variant_subject(open_environment("prod", None, {}), "canary", "default")

    fallback = pooled.cfg.planning.capacity["ml.g6.xlarge"]
    assert subject.instance_type == "ml.g6.xlarge"  # --write-config records it there, not under ml.g4dn.xlarge
    assert subject.planned_rpm == fallback.requests_per_minute  # the search starts from the fallback's figure
    described = subject.target.describe()
    assert described["instance_type"] == "ml.g6.xlarge"
    assert described["instances_by_type"] == {"ml.g4dn.xlarge": 0, "ml.g6.xlarge": 2}


def test_a_canary_on_both_types_is_refused_with_each_type_s_figure(pooled, loadtest):
    canary_on(pooled, {"ml.g4dn.xlarge": 1, "ml.g6.xlarge": 1})

    with pytest.raises(OpsError) as refused:
        variant_subject(open_environment("prod", None, {}), "canary", "default")

    message = " ".join(str(refused.value).split())
    assert refused.value.exit_code == ExitCode.REFUSED
    g6 = pooled.cfg.planning.capacity["ml.g6.xlarge"].provenance()
    assert message.startswith(
        "canary runs instance pools and it runs 1 × ml.g4dn.xlarge (planning.capacity measured: 1,200/min on moto "
        f"test world 2026-11-25 (answered within TTFT p95 <= 500 ms)), 1 × ml.g6.xlarge (planning.capacity {g6}): through the "
        "runtime a sweep's requests spread over every instance of the variant, so its answer would be a blend"
    )
    assert "Measure each type alone" in message

    result = loadtest("prod", "--variant", "canary", "--allow-production", "--max-minutes", "10")
    assert result.exit_code == 4 and "its answer would be a blend" in result.stderr
    assert "Capacity sweep" not in result.output  # refused before the first request


def test_a_split_not_reported_is_refused_too(pooled):
    endpoint = sagemaker_backends[pooled.cfg.account][pooled.cfg.region].endpoints[pooled.endpoint]
    canary = next(v for v in endpoint.production_variants if v["VariantName"] == "canary")
    canary["InstancePools"] = []  # a summary without counts (workbench/sandbox/moto_fixes.py keeps what a test put there)

    with pytest.raises(OpsError, match="does not report its instances by type yet"):
        variant_subject(open_environment("prod", None, {}), "canary", "default")
