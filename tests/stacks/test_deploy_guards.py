"""`make deploy`'s refusals as CloudFormation Rules in the serving template (constructs/deploy_guards.py, issue
50 §6), so that a plain `cdk deploy -c env=prod` is refused before any resource changes. Each rule's
assertions are evaluated here as CloudFormation does (Fn::Not, Fn::Equals, Ref of a parameter: the rule
functions of the CloudFormation User Guide, "Rule-specific intrinsic functions"), with and without the override."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from config.naming import PARAMETER_ACCEPT_ASSUMED_CAPACITY as ACCEPT
from ops.pipeline import assumed_capacity

ROOT = Path(__file__).resolve().parents[2]


def holds(expression: object, parameters: dict[str, str]) -> object:
    """A rule function's value; a parameter not given has its Default."""
    if not isinstance(expression, dict):
        return expression
    ((function, argument),) = expression.items()
    if function == "Ref":
        return parameters[argument]
    if function == "Fn::Not":
        return not holds(argument[0], parameters)
    if function == "Fn::Equals":
        return holds(argument[0], parameters) == holds(argument[1], parameters)
    raise AssertionError(f"no evaluator for {function}")


def refusals(template: dict, given: dict[str, str]) -> list[str]:
    defaults = {name: p.get("Default") for name, p in template.get("Parameters", {}).items()}
    return [
        assertion["AssertDescription"]
        for name, rule in template.get("Rules", {}).items()
        if name != "CheckBootstrapVersion"  # CDK's own
        for assertion in rule["Assertions"]
        if not holds(assertion["Assert"], {**defaults, **given})
    ]


@pytest.fixture(scope="module")
def prod_template(prod) -> dict:
    return prod.serving.to_json()


def test_a_plain_cdk_deploy_of_prod_is_refused_for_both_reasons(prod_template) -> None:
    found = refusals(prod_template, {})
    assert len(found) == 2
    assert "capacity of ml.g5.xlarge, ml.g6.xlarge is assumed" in found[0]
    assert f"MangaAssist-prod-Serving:{ACCEPT}=<why>" in found[0]
    assert "pages a placeholder that reaches nobody (alarms.paging.emails: oncall-mangaassist@example.com)" in found[1]


def test_the_override_lets_the_assumed_capacity_through_but_not_the_placeholder(prod_template) -> None:
    found = refusals(prod_template, {ACCEPT: "first prod week, measured on staging next"})
    assert len(found) == 1 and "placeholder" in found[0]
    assert prod_template["Parameters"][ACCEPT]["Default"] == ""
    # The paging rule fails on purpose: cfn-lint's "will always return False" is skipped for this template only.
    assert prod_template["Metadata"]["cfn-lint"] == {"config": {"ignore_checks": ["W8003"]}}


def test_non_production_environments_carry_neither_rule_nor_parameter(dev) -> None:
    """No unused parameter (cfn-lint W2001), and nothing refused."""
    from tests.synthesised import Synthesised

    for template in (dev.serving.to_json(), Synthesised("staging").serving.to_json()):
        assert refusals(template, {}) == []
        assert ACCEPT not in template.get("Parameters", {})
        assert "cfn-lint" not in template.get("Metadata", {})


def test_make_deploy_passes_the_reason_as_the_stack_parameter(monkeypatch, capsys) -> None:
    monkeypatch.setenv("ACCEPT_ASSUMED_CAPACITY", "first week, a=b")
    assert assumed_capacity.main(["prod", "--cdk-parameter"]) == 0
    assert capsys.readouterr().out == f"MangaAssist-prod-Serving:{ACCEPT}=first week, a=b\n"
    assert assumed_capacity.main(["staging", "--cdk-parameter"]) == 0  # no rule there: no parameter
    assert capsys.readouterr().out == ""
    recipe = subprocess.run(
        ["make", "-n", "--no-print-directory", "deploy", "ENV=prod"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    assert "-m ops.pipeline.assumed_capacity prod --cdk-parameter" in recipe
    assert '${accepted:+--parameters "$accepted"}' in recipe
