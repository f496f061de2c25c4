"""The deploy workflow's role (constructs/github_deploy_role.py) runs `bin/ops verify` and `smoke` and nothing
else: each call is allowed by its policies and its boundary, which names nothing more; a shift is refused by it.
Calls as tests/operator_policy_check.py records and evaluates them.
"""

from __future__ import annotations

from dataclasses import replace

from config.access import DEPLOYER, OPERATOR
from config.endpoint_identity import load_identity
from constructs.deployer_policy import DeployerScope
from constructs.github_deploy_role import VERIFY_AND_SMOKE_ACTIONS, boundary_statements
from tests.operator_policy_check import Call, ScalableTargetTags, allowed, authorised_as, resolve_scope, statements_for
from tests.ops.test_smoke import ADAPTERS, StreamingEndpoint, completion, queue_completions, sse
from tests.ops.test_verify_alarm_data import heartbeat, rollback_alarms
from tests.ops.test_verify_subscriptions import deploy_topics


def record_runtime_calls(world, client) -> list[Call]:
    """The invocations `smoke` makes through `client`, as the proof records the CLI's own calls."""
    calls: list[Call] = []
    identity = load_identity(world.cfg.name)

    def record(params: dict, model, **_) -> None:
        call = Call(identity, world.session, model.service_model.service_name, model.name, dict(params))
        call.command = "smoke"
        calls.append(call)

    client.meta.events.register("before-parameter-build", record)
    return calls


def role_checks(calls: list[Call]) -> list[tuple[Call, str, str, dict]]:
    return [(call, *check) for call in calls for check in (authorised_as(call) or [])]


def refused_by_the_role(call: Call, action: str, resource: str, context: dict) -> list[str]:
    """Why the role may not make this check: its policies (Deployer + Operator) or its boundary."""
    as_role = replace(call, policies=(DEPLOYER, OPERATOR))
    boundary = boundary_statements(DeployerScope(call.cfg.name, "aws", call.region, call.account))
    found = []
    if not allowed(statements_for(as_role), action, resource, context):
        found.append(f"{action} on {resource}: not allowed by the Deployer and Operator policies")
    if not allowed(boundary, action, resource, context):
        found.append(f"{action} on {resource}: outside the permissions boundary")
    return found


def test_verify_and_smoke_are_allowed_and_the_boundary_names_nothing_else(
    prod, cli, every_cli_call_is_allowed_by_the_operator_policy
):
    rollback_alarms(prod)  # verify reads what each rollback alarm's metrics hold (GetMetricData)
    heartbeat(prod)
    deploy_topics(prod)  # verify reads the alarm topics' subscriptions
    runtime = prod.client("sagemaker-runtime")
    cli.runtime.client_overrides["sagemaker-runtime"] = runtime
    invocations = record_runtime_calls(prod, runtime)
    queue_completions("222222222222", "ap-northeast-1", [completion(a) for a in ADAPTERS])
    runtime.meta.events.register(
        "before-send.sagemaker-runtime.InvokeEndpointWithResponseStream",
        StreamingEndpoint({a: sse(a, ["Try ", "Dungeon ", "Meshi."]) for a in ADAPTERS}),
    )

    verified = cli("verify", "prod")
    smoked = cli("smoke", "prod", "--variant", "canary")

    assert verified.exit_code == 0, verified.output
    assert smoked.exit_code == 0, smoked.output
    calls = [c for c in every_cli_call_is_allowed_by_the_operator_policy if c.command in ("verify", "smoke")]
    checks = role_checks(calls + invocations)
    assert {c.command for c, *_ in checks} == {"verify", "smoke"} and invocations
    assert [reason for check in checks for reason in refused_by_the_role(*check)] == []
    assert {action for _, action, _, _ in checks} == set(VERIFY_AND_SMOKE_ACTIONS)


def test_a_traffic_shift_is_allowed_by_the_operator_policy_but_not_by_the_boundary(prod):
    call = Call(
        load_identity("prod"),
        prod.session,
        "sagemaker",
        "UpdateEndpointWeightsAndCapacities",
        {
            "EndpointName": prod.endpoint,
            "DesiredWeightsAndCapacities": [{"VariantName": "canary", "DesiredWeight": 50}],
        },
    )
    ((action, resource, context),) = authorised_as(resolve_scope(call, ScalableTargetTags()))

    assert allowed(statements_for(call), action, resource, context)  # the Operator policy alone: allowed
    assert refused_by_the_role(call, action, resource, context) == [
        f"{action} on {resource}: outside the permissions boundary"
    ]
