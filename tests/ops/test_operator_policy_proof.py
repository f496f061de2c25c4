"""The proof in tests/operator_policy_check.py can fail: a policy without a statement the CLI needs, or
a call the proof has no rule for, is reported."""

from __future__ import annotations

import tests.operator_policy_check as check
from tests.operator_policy_check import Call, refusals


def test_a_shift_is_refused_by_a_policy_without_the_endpoint_statement(
    prod, cli, monkeypatch, every_cli_call_is_allowed_by_the_operator_policy
) -> None:
    calls = every_cli_call_is_allowed_by_the_operator_policy
    prod.traffic("canary", 3000, 0)
    prod.traffic("primary", 57000, 0)
    assert cli("shift", "prod", "--canary-weight", "10").exit_code == 0
    assert {(c.service, c.operation) for c in calls} >= {("sagemaker", "UpdateEndpointWeightsAndCapacities")}
    assert refusals(calls) == []

    original = check.operator_statements
    monkeypatch.setattr(
        check, "operator_statements", lambda scope: [s for s in original(scope) if s["Sid"] != "Endpoint"]
    )
    refused = refusals(calls)
    assert (
        "sagemaker:UpdateEndpointWeightsAndCapacities on arn:aws:sagemaker:ap-northeast-1:222222222222:endpoint/mangaassist-llm-prod: not allowed by prod's operator policy"
        in refused
    )
    monkeypatch.setattr(check, "operator_statements", original)  # the fixture's own check then passes


def test_a_call_without_a_rule_is_reported(prod, every_cli_call_is_allowed_by_the_operator_policy) -> None:
    unknown = Call(prod.cfg, prod.session, "sagemaker", "DeleteEndpoint", {"EndpointName": prod.endpoint})
    assert refusals([unknown]) == ["sagemaker:DeleteEndpoint: the ops CLI calls it, and the proof has no rule for it"]
