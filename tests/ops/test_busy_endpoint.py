"""Commands get through a busy endpoint (issue 39 item 1): they wait for InService and retry "Cannot update
in-progress endpoint", within `operations.busy_endpoint_wait_seconds`. moto never refuses, so a before-call hook
does while the endpoint is Updating; time passes only through the fake sleep.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from ops.operations.scaling import SERVICE_NAMESPACE, resource_id
from tests.ops_world import edit_environment

BUSY_SECONDS = 20
IN_PROGRESS = ClientError(
    {"Error": {"Code": "ValidationException", "Message": "Cannot update in-progress endpoint"}},
    "UpdateEndpointWeightsAndCapacities",
)


def hold_updating(world, cli, busy_seconds: float | None) -> list[dict]:
    """Updating and refusing weight updates until the fake sleep passed `busy_seconds` (None: for ever)."""
    endpoint = world.moto_endpoint()
    endpoint.endpoint_status = "Updating"
    refused: list[dict] = []

    def refuse_while_updating(**kwargs):
        if endpoint.endpoint_status == "Updating":
            refused.append(kwargs)
            raise IN_PROGRESS

    def time_passes(_calls: int) -> None:
        if busy_seconds is not None and sum(cli.sleep.calls) >= busy_seconds:
            endpoint.endpoint_status = "InService"

    sagemaker = world.client("sagemaker")
    sagemaker.meta.events.register("before-call.sagemaker.UpdateEndpointWeightsAndCapacities", refuse_while_updating)
    cli.runtime.client_overrides["sagemaker"] = sagemaker
    cli.sleep.on_call = time_passes
    return refused


def suspended_states(world) -> dict[str, dict]:
    ids = [resource_id(world.endpoint, v) for v in ("primary", "canary")]
    found = world.client("application-autoscaling").describe_scalable_targets(
        ServiceNamespace=SERVICE_NAMESPACE, ResourceIds=ids
    )["ScalableTargets"]
    return {t["ResourceId"].rsplit("/", 1)[-1]: t.get("SuspendedState") for t in found}


def test_rollback_waits_out_a_busy_endpoint_and_drains_the_canary(prod, cli):
    prod.set_weights(primary=50, canary=50)
    prod.register_scaling("primary")
    prod.register_scaling("canary")
    refused = hold_updating(prod, cli, BUSY_SECONDS)

    result = cli("rollback", "prod")

    assert result.exit_code == 0, result.output + result.stderr
    assert prod.weights() == {"primary": 100.0, "canary": 0.0}
    assert sum(cli.sleep.calls) >= BUSY_SECONDS  # it waited the update out rather than failing on it
    assert "endpoint mangaassist-llm-prod is Updating: waiting 5s to set canary canary to 0%" in result.output
    assert "suspended dynamic scaling (in and out) of primary, canary while the rollback works" in result.output
    assert "dynamic scaling of canary resumed" in result.output
    assert all(not any(state.values()) for state in suspended_states(prod).values())
    assert not refused  # it never sent the update to an endpoint that said Updating


def test_an_in_progress_refusal_of_an_endpoint_that_says_in_service_is_retried(prod, cli):
    """InService a moment before another change makes it refuse: the refusal is waited out too."""
    prod.set_weights(primary=50, canary=50)
    refusals = []

    def refuse_twice(**kwargs):
        if len(refusals) < 2:
            refusals.append(kwargs)
            raise IN_PROGRESS

    sagemaker = prod.client("sagemaker")
    sagemaker.meta.events.register("before-call.sagemaker.UpdateEndpointWeightsAndCapacities", refuse_twice)
    cli.runtime.client_overrides["sagemaker"] = sagemaker

    result = cli("rollback", "prod")

    assert result.exit_code == 0, result.output + result.stderr
    assert len(refusals) == 2
    assert "InService but refusing updates (Cannot update in-progress endpoint)" in result.output
    assert prod.weights() == {"primary": 100.0, "canary": 0.0}


def test_the_wait_is_bounded_by_the_config_and_says_what_was_left(environments, worlds, cli):
    edit_environment(
        environments, "prod", lambda d: d.setdefault("operations", {}).update(busy_endpoint_wait_seconds=960)
    )
    prod = worlds("prod")
    prod.deploy()
    prod.register_scaling("primary")
    hold_updating(prod, cli, None)

    result = cli("rollback", "prod")

    assert result.exit_code == 8, result.output + result.stderr
    assert 0 < sum(cli.sleep.calls) <= 960
    assert "(operations.busy_endpoint_wait_seconds 16min) for endpoint mangaassist-llm-prod" in result.stderr
    assert "it is Updating; NOT done: set canary canary to 0%" in result.stderr
    assert "left as it was: primary weight 95 (desired 95)" in result.stderr
    assert prod.weights() == {"primary": 95.0, "canary": 5.0}
    assert not any(suspended_states(prod)["primary"].values())  # given back even though the rollback failed


def test_shift_waits_for_in_service_instead_of_refusing(prod, cli):
    hold_updating(prod, cli, BUSY_SECONDS)

    result = cli("shift", "prod", "--canary-weight", "0")

    assert result.exit_code == 0, result.output + result.stderr
    assert prod.weights() == {"primary": 100.0, "canary": 0.0}
    assert sum(cli.sleep.calls) >= BUSY_SECONDS


def test_a_failed_endpoint_is_not_waited_for(prod, cli):
    prod.moto_endpoint().endpoint_status = "Failed"

    result = cli("rollback", "prod")

    assert result.exit_code == 4
    assert "endpoint mangaassist-llm-prod is Failed, which does not pass by itself" in result.stderr
    assert not cli.sleep.calls
