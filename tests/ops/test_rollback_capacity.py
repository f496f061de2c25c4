"""A rollback the primary can carry (issue 27 §3): the raise, its record and `restore-scaling`; a stopped
shift's raise; the holds' warning and `--keep-rollback-floor`. The moto world's type serves 1,200/min per
instance (tests/ops_world.py).
"""

from __future__ import annotations

import json
import math

import pytest
from botocore.exceptions import ClientError

from config import load_catalog, load_environment
from config.domain.prices import prices_for
from ops.operations.scaling import resource_id, target_key
from ops.operations.shift_plan import ShiftPlan, Target, resume_command
from tests.ops.test_emergency_invalid_config import target_above_capacity
from tests.ops.test_status_pools import deploy_with_pools
from tests.ops_world import edit_environment


def prices_where(env: str) -> str:
    """'ap-northeast-1 prices…': the region the cost is in, as config.domain.prices says it."""
    return prices_for(load_environment(env, against_deployed=False), load_catalog()).short()


FLOOR_PARAMETER = "/mangaassist/prod/rollback-floor/primary"


def instances(world, variant: str) -> int:
    described = world.client("sagemaker").describe_endpoint(EndpointName=world.endpoint)
    return next(v["DesiredInstanceCount"] for v in described["ProductionVariants"] if v["VariantName"] == variant)


def floor(world, variant: str = "primary") -> tuple[int, int]:
    scaled = world.scaling()[resource_id(world.endpoint, variant)]
    return scaled["min"], scaled["max"]


@pytest.fixture
def ramped(prod):
    """After a 50 % ramp: canary on 4 instances, the primary shrunk to 2 (min 2, max 8, a policy and a schedule),
    and 6,000 invocations/min, which need 5 primary instances."""
    prod.register_scaling("primary")
    prod.client("sagemaker").update_endpoint_weights_and_capacities(
        EndpointName=prod.endpoint,
        DesiredWeightsAndCapacities=[
            {"VariantName": "primary", "DesiredWeight": 50, "DesiredInstanceCount": 2},
            {"VariantName": "canary", "DesiredWeight": 50, "DesiredInstanceCount": 4},
        ],
    )
    prod.traffic("primary", invocations=3000, errors=0)
    prod.traffic("canary", invocations=3000, errors=0)
    return prod


def test_rollback_raises_the_primary_to_carry_the_live_traffic(ramped, cli):
    scaling_before = ramped.scaling()

    result = cli("rollback", "prod")

    assert result.exit_code == 0, result.output
    assert ramped.weights() == {"primary": 100.0, "canary": 0.0}
    assert instances(ramped, "primary") == 5
    assert floor(ramped) == (5, 8)
    rid = resource_id(ramped.endpoint, "primary")
    after = ramped.scaling()[rid]
    assert (after["policies"], after["schedules"]) == (
        scaling_before[rid]["policies"],
        scaling_before[rid]["schedules"],
    )
    assert (
        "primary must carry 6,000/min (the endpoint's busiest minute in the last 5min): 5 × ml.g4dn.xlarge at "
        "1,200/min each (planning.capacity measured: 1,200/min on moto test world" in result.output
    )
    assert (
        "  ! its 2 instances in service serve 2,400/min: users may queue for about 4 min until 3 more are in "
        "service (planning.provisioning_minutes assumed: 4 min" in result.output
    )
    assert "  ✓ primary desired instances 2 → 5 (UpdateEndpointWeightsAndCapacities)" in result.output
    assert "  ✓ primary's scalable target minimum 2 → 5: target tracking cannot scale it in" in result.output
    assert "  put the floor back once the traffic has settled: bin/ops restore-scaling prod\n" in result.output
    # Kept where any operator with the Operator policy finds it (SSM), and cached in the state directory.
    published = ramped.client("ssm").get_parameter(Name=FLOOR_PARAMETER)["Parameter"]["Value"]
    assert json.loads(published) == {
        "kind": "rollback-floor",
        "endpoint": ramped.endpoint,
        "variant": "primary",
        "min_before": 2,
        "raised_to": 5,
        "raised_at": json.loads(published)["raised_at"],
    }
    (record,) = cli.runtime.state_dir.glob("rollback-floor-*.json")
    assert record.read_text() == published


@pytest.mark.parametrize("from_file", [False, True], ids=["ssm-on-another-machine", "local-record"])
def test_restore_scaling_puts_the_floor_back_and_forgets_the_record(ramped, cli, tmp_path, from_file):
    """From SSM on another machine (an empty state directory), or from the local copy as before."""
    assert cli("rollback", "prod").exit_code == 0
    (record,) = cli.runtime.state_dir.glob("rollback-floor-*.json")
    cli.runtime.state_dir = tmp_path / "another-laptop"

    result = cli("restore-scaling", "prod", *([str(record)] if from_file else []))

    assert result.exit_code == 0, result.output
    assert floor(ramped) == (2, 8)
    if not from_file:
        assert f"floor record {FLOOR_PARAMETER}: primary minimum 2 → 5 at" in result.output
    put_back = "✓ primary's scalable target minimum 5 → 2; target tracking scales it in as the traffic allows"
    assert put_back in result.output
    assert not ramped.client("ssm").get_parameters_by_path(Path="/mangaassist/prod/rollback-floor")["Parameters"]
    again = cli("restore-scaling", "prod")
    assert "no floor record in SSM under /mangaassist/prod/rollback-floor: no raised minimum to put back" in again.output


def test_restore_leaves_a_minimum_changed_since_the_rollback(ramped, cli):
    """The evening schedule (min 6) fired after the rollback: putting 2 back would undo it."""
    assert cli("rollback", "prod").exit_code == 0
    ramped.client("application-autoscaling").register_scalable_target(
        **target_key(ramped.endpoint, "primary"), MinCapacity=6
    )

    result = cli("restore-scaling", "prod")

    assert result.exit_code == 0, result.output
    assert floor(ramped) == (6, 8)
    assert "primary's minimum is 6, not the 5 set at" in result.output
    assert "so it is left as it is" in result.output


def test_a_need_above_max_capacity_raises_to_the_max_and_says_so(ramped, cli):
    ramped.traffic("primary", invocations=6000, errors=0)  # 12,000/min in all: 10 instances

    result = cli("rollback", "prod")

    assert result.exit_code == 0, result.output
    assert instances(ramped, "primary") == 8 and floor(ramped) == (8, 8)
    assert (
        "10 instances needed, but primary's scalable target allows at most 8: raising to 8, which serve "
        "9,600/min; beyond that users queue until autoscaling.primary.max_capacity is raised and deployed"
    ) in result.output


def test_a_primary_that_carries_the_traffic_is_left_alone(ramped, cli):
    ramped.client("sagemaker").update_endpoint_weights_and_capacities(
        EndpointName=ramped.endpoint,
        DesiredWeightsAndCapacities=[{"VariantName": "primary", "DesiredInstanceCount": 6}],
    )
    ramped.client("application-autoscaling").register_scalable_target(
        **target_key(ramped.endpoint, "primary"), MinCapacity=5
    )

    result = cli("rollback", "prod")

    assert result.exit_code == 0, result.output
    assert instances(ramped, "primary") == 6 and floor(ramped) == (5, 8)
    assert "✓ its 6 instances in service serve 7,200/min: no queue expected" in result.output
    assert "restore-scaling" not in result.output


def test_rollback_with_an_invalid_config_rolls_back_and_says_the_floor_was_not_raised(ramped, environments, cli):
    edit_environment(environments, "prod", target_above_capacity)

    result = cli("rollback", "prod")

    assert result.exit_code == 0, result.output
    assert ramped.weights() == {"primary": 100.0, "canary": 0.0}
    assert instances(ramped, "primary") == 2 and floor(ramped) == (2, 8)
    assert (
        "  ! primary's floor was NOT raised: the config is invalid (the warning above names its first problem), "
        "so planning.capacity, what one instance serves, is unknown; check its instances with `bin/ops status prod`"
    ) in result.output


def test_without_invocations_in_cloudwatch_nothing_is_raised(prod, cli):
    prod.register_scaling("primary")
    prod.set_weights(primary=50, canary=50)

    result = cli("rollback", "prod")

    assert result.exit_code == 0, result.output
    assert floor(prod) == (2, 8)
    assert "  ! CloudWatch has no invocations of mangaassist-llm-prod in the last 5min: nothing to size on" in (
        result.output
    )


def pooled_rollback(worlds, in_service: dict[str, int]):
    """prod's primary on its pools (unregistered) with `in_service` per type, 6,000/min half on the canary."""
    world = worlds("prod")
    deploy_with_pools(world)
    count = sum(in_service.values())
    world.moto_variant("primary").update(
        CurrentInstanceCount=count,
        DesiredInstanceCount=count,
        InstancePools=[{"InstanceType": t, "CurrentInstanceCount": n} for t, n in in_service.items()],
    )
    world.set_weights(primary=50, canary=50)
    world.traffic("primary", invocations=3000, errors=0)
    world.traffic("canary", invocations=3000, errors=0)
    return world


def test_a_primary_on_its_preferred_pool_is_sized_on_that_type_and_says_how_pools_count(worlds, cli):
    world = pooled_rollback(worlds, {"ml.g4dn.xlarge": 4, "ml.g6.xlarge": 0})

    result = cli("rollback", "prod")

    assert result.exit_code == 0, result.output
    assert instances(world, "primary") == 5  # 6,000/min at the preferred type's 1,200/min: SageMaker fills from it
    assert (
        "  ! primary runs instance pools (ml.g4dn.xlarge, ml.g6.xlarge): each instance in service counts at its own "
        "type's planning.capacity; new ones at ml.g4dn.xlarge's, the weakest of the pools SageMaker is providing from now"
    ) in result.output
    assert "5 × ml.g4dn.xlarge at 1,200/min each" in result.output
    assert (
        "  ! primary has no scalable target: nothing scales it in, and nothing gives the extra instances back (4 → 5)"
        in (result.output)
    )


def test_a_primary_running_its_fallback_type_is_sized_on_the_fallback_s_capacity(worlds, cli):
    """Issue 42 item 3: sizing on the preferred type's figure would leave users queueing."""
    world = pooled_rollback(worlds, {"ml.g4dn.xlarge": 0, "ml.g6.xlarge": 4})
    fallback = world.cfg.planning.capacity["ml.g6.xlarge"]
    assert fallback.requests_per_minute < 1200  # weaker than the preferred type in this world

    result = cli("rollback", "prod")

    assert result.exit_code == 0, result.output
    wanted = math.ceil(6000 / fallback.requests_per_minute)
    assert instances(world, "primary") == wanted
    assert (
        f"primary must carry 6,000/min (the endpoint's busiest minute in the last 5min): {wanted} × ml.g6.xlarge at "
        f"{fallback.requests_per_minute:,.0f}/min each (planning.capacity {fallback.provenance()})"
    ) in " ".join(result.output.split())


def test_a_primary_on_both_pools_counts_each_instance_at_its_own_type(worlds, cli):
    world = pooled_rollback(worlds, {"ml.g4dn.xlarge": 2, "ml.g6.xlarge": 2})
    g6 = world.cfg.planning.capacity["ml.g6.xlarge"].requests_per_minute

    result = cli("rollback", "prod")

    assert result.exit_code == 0, result.output
    more = math.ceil((6000 - 2 * 1200 - 2 * g6) / g6)  # a fallback in service: new ones may be fallbacks too
    assert instances(world, "primary") == 4 + more
    assert (
        f"{4 + more} instances: 2 × ml.g4dn.xlarge at 1,200/min, 2 × ml.g6.xlarge at {g6:,.0f}/min in service, "
        f"{more} more at ml.g6.xlarge's {g6:,.0f}/min (the weakest of the pools SageMaker is providing from now)"
    ) in " ".join(result.output.split())
    assert f"its 4 instances in service serve {2 * 1200 + 2 * g6:,.0f}/min" in " ".join(result.output.split())


class RefusesRegistration:
    """The application-autoscaling client, but RegisterScalableTarget is denied."""

    def __init__(self, client):
        self.client = client

    def __getattr__(self, name):
        return getattr(self.client, name)

    def register_scalable_target(self, **params):
        denied = {"Code": "AccessDeniedException", "Message": "not authorized to perform RegisterScalableTarget"}
        raise ClientError({"Error": denied}, "RegisterScalableTarget")


def test_a_raise_that_fails_says_the_weights_stand_and_exits_with_its_error(ramped, cli):
    cli.runtime.client_overrides["application-autoscaling"] = RefusesRegistration(
        ramped.client("application-autoscaling")
    )

    result = cli("rollback", "prod")

    assert result.exit_code == 5, result.output
    assert ramped.weights() == {"primary": 100.0, "canary": 0.0}
    assert instances(ramped, "primary") == 5 and floor(ramped) == (2, 8)
    assert "all traffic is on primary (canary weight 0 in effect), but primary's floor was NOT raised: " in (
        result.stderr
    )


def test_a_shift_stopped_by_the_guard_raises_the_primary_for_its_share(ramped, cli):
    """An alarm in the hold returns the canary to 50 %: the other half (3,000/min) needs 3 primary instances."""
    ramped.streamed()
    cli.sleep.on_call = lambda call: ramped.alarm("mangaassist-prod-canary-5xx", "canary")

    result = cli("shift", "prod", "--canary-weight", "75", "--hold", "10m")

    assert result.exit_code == 4, result.output
    assert ramped.weights() == {"primary": 50.0, "canary": 50.0}
    assert instances(ramped, "primary") == 3 and floor(ramped) == (3, 8)
    assert (
        "  ! a rollback now would put 6,000/min on primary, whose 2 instances in service serve 2,400/min within "
        "the SLO (1,200/min each, planning.capacity): users would queue for about 4 min while more start; "
        f"--keep-rollback-floor keeps primary at 5 during the holds (+3 × ml.g4dn.xlarge at $0.736/h = $2.21/hour; "
        f"{prices_where('prod')})"
    ) in result.output
    assert "primary must carry 3,000/min (50% of the endpoint's busiest minute in the last 5min)" in result.output
    assert (
        "canary weight rolled back to 50%; primary sized for 3,000/min: 3 instances, its minimum raised; put it "
        "back with `bin/ops restore-scaling prod`"
    ) in result.stderr


def test_keep_rollback_floor_holds_the_primary_at_what_a_rollback_needs(ramped, cli):
    ramped.streamed()

    result = cli("shift", "prod", "--canary-weight", "75", "--hold", "10m", "--keep-rollback-floor")

    assert result.exit_code == 0, result.output
    assert ramped.weights() == {"primary": 25.0, "canary": 75.0}
    assert instances(ramped, "primary") == 5 and floor(ramped) == (5, 8)
    lines = result.output.splitlines()
    floor_line = lines.index(
        "rollback floor: primary at 5 instances, what 6,000/min needs (1,200/min each, planning.capacity)"
    )
    assert floor_line < lines.index("step: canary 50% → 75%")
    assert (
        f"  ! while it stands, keeping it costs +3 × ml.g4dn.xlarge at $0.736/h = $2.21/hour; {prices_where('prod')}"
    ) in result.output
    assert "  ✓ primary has 5 instances in service" in result.output
    assert "a rollback now would" not in result.output
    assert "the floor stays after the shift; put it back with bin/ops restore-scaling prod\n" in result.output


def test_the_resume_command_keeps_the_floor_option():
    plan = ShiftPlan(100, steps=(50,), keep_rollback_floor=True)
    assert resume_command(Target("prod", "e", "canary", "primary"), plan, 25) == (
        "bin/ops shift prod --canary-weight 100 --step 50 --keep-rollback-floor"
    )
