"""Synth refuses, against config/deployed/<env>.json, what SageMaker would refuse mid-deploy."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from config import ConfigError, load_config_file
from config.deployed import Deployed, DeployedVariant, load_deployed
from config.loader import ENVIRONMENTS_DIR

PROD_YAML = YAML(typ="safe", pure=True).load((ENVIRONMENTS_DIR / "prod.yaml").read_text())
BOTH_SCALED = {"primary": DeployedVariant("ml.g5.xlarge", True), "canary": DeployedVariant("ml.g5.xlarge", True)}
PROCEDURE = (
    "blue/green updates must keep the deployed variant names (SageMaker deployment guardrails); change the set of "
    "variants in a deploy of its own: `make deploy ENV=prod VARIANTS_CHANGED=1` (docs/how-to/deploy.md 'Adding, "
    "removing or renaming a variant')"
)
SCALING = (
    "CloudFormation cannot apply this while the variant is registered with Application Auto Scaling; follow "
    "docs/how-to/deploy.md 'Changing a scaled variant' (`bin/ops deploy prod`: deregister, update, re-register)"
)
RECORD = "config/deployed/prod.json, written by the last real `make deploy`; sandbox deploys never change it"


@pytest.fixture
def refused(tmp_path: Path) -> Callable[..., list[tuple[str, str]]]:
    """Load prod.yaml changed by `mutate` against a deployed record; return the problems."""

    def load(mutate: Callable[[dict], None], deployed: Deployed) -> list[tuple[str, str]]:
        raw = copy.deepcopy(PROD_YAML)
        raw["endpoint_instance_quotas"] = {"ml.g5.xlarge": 1000, "ml.g6.xlarge": 1000}  # room for any fleet here
        mutate(raw)
        path = tmp_path / "prod.yaml"
        with path.open("w") as handle:
            YAML().dump(raw, handle)
        try:
            load_config_file(path, "prod", deployed)
        except ConfigError as error:
            return error.problems
        return []

    return load


def add_variant(raw: dict, name: str) -> None:
    raw["variants"].append({**copy.deepcopy(raw["variants"][1]), "name": name, "initial_weight": 0})


def rename_canary(raw: dict) -> None:
    raw["variants"][1]["name"] = "canary-b"
    raw["autoscaling"]["canary-b"] = raw["autoscaling"].pop("canary")


def remove_canary(raw: dict) -> None:
    del raw["variants"][1]
    del raw["autoscaling"]["canary"]


def test_the_committed_records_are_in_the_current_format() -> None:
    for env in ("dev", "staging", "prod"):
        assert load_deployed(env) == BOTH_SCALED


def test_an_unchanged_config_passes(refused) -> None:
    assert refused(lambda raw: None, Deployed(BOTH_SCALED)) == []


def test_adding_a_variant_is_refused_naming_it(refused) -> None:
    found = refused(lambda raw: add_variant(raw, "shadow"), Deployed(BOTH_SCALED))
    assert ("variants[2]", f"adds variant 'shadow' to the deployed primary, canary ({RECORD}); {PROCEDURE}") in found


def test_renaming_a_variant_is_refused_naming_both_names(refused) -> None:
    found = refused(rename_canary, Deployed(BOTH_SCALED))
    assert found[0] == (
        "variants[1]",
        f"renames deployed variant 'canary' to 'canary-b' ({RECORD}); {PROCEDURE}",
    )
    assert found[1][1].startswith("removes variant 'canary', deployed on ml.g5.xlarge with autoscaling")


def test_removing_an_unscaled_variant_is_refused_for_its_name(refused) -> None:
    unscaled_canary = {**BOTH_SCALED, "canary": DeployedVariant("ml.g5.xlarge", False)}
    assert refused(remove_canary, Deployed(unscaled_canary)) == [
        (
            "variants",
            f"removes deployed variant 'canary' (deployed: primary, canary, {RECORD}); {PROCEDURE}",
        )
    ]


def test_variants_changed_lifts_the_name_rule_but_not_the_scaling_rule(refused) -> None:
    assert refused(rename_canary, Deployed(BOTH_SCALED, variants_changed=True)) == [
        (
            "variants",
            f"removes variant 'canary', deployed on ml.g5.xlarge with autoscaling ({RECORD}) "
            f"(removing its autoscaling entry does not deregister it); {SCALING}",
        )
    ]
    released = Deployed(BOTH_SCALED, scaling_released=frozenset({"canary"}), variants_changed=True)
    assert refused(rename_canary, released) == []


def retype(raw: dict) -> None:
    raw["variants"][0].update(instance_type="ml.g6.xlarge", fallback_instance_types=["ml.g5.xlarge"])


def retype_and_unscale(raw: dict) -> None:
    retype(raw)
    del raw["autoscaling"]["primary"]


def test_changing_a_scaled_variants_type_is_refused(refused) -> None:
    assert refused(retype, Deployed(BOTH_SCALED)) == [
        (
            "variants[0].instance_type",
            f"changes scaled variant 'primary' from ml.g5.xlarge to ml.g6.xlarge ({RECORD}); {SCALING}",
        )
    ]
    assert refused(retype, Deployed({})) == []  # first deploy: nothing registered yet


def test_deleting_the_autoscaling_entry_in_the_same_edit_does_not_bypass_the_rule(refused) -> None:
    """The seeds' guard looked at the config's autoscaling; the live scalable target is still registered."""
    assert refused(retype_and_unscale, Deployed(BOTH_SCALED)) == [
        (
            "variants[0].instance_type",
            f"changes scaled variant 'primary' from ml.g5.xlarge to ml.g6.xlarge ({RECORD}) "
            f"(removing its autoscaling entry does not deregister it); {SCALING}",
        )
    ]


def test_a_variant_deployed_without_scaling_may_change_type(refused) -> None:
    unscaled = {**BOTH_SCALED, "primary": DeployedVariant("ml.g5.xlarge", False)}
    assert refused(retype_and_unscale, Deployed(unscaled)) == []


def test_a_record_in_the_old_format_is_refused_at_synth_naming_the_file_and_variant(tmp_path, monkeypatch) -> None:
    from config import deployed, load_environment

    (tmp_path / "prod.json").write_text(json.dumps({"variants": {"primary": "ml.g5.xlarge"}}))
    monkeypatch.setattr(deployed, "DEPLOYED_DIR", tmp_path)
    with pytest.raises(ConfigError) as refusal:
        load_environment("prod")
    assert str(refusal.value) == (
        "config/deployed/prod.json: 1 problem(s)\n"
        '  - variants.primary: must be {"instance_type": "ml....", "scaled": true|false}, got "ml.g5.xlarge" '
        "(written by `make deploy`; a record from before `scaled` was recorded: add it by hand)"
    )


def test_record_writes_which_variants_were_scaled(tmp_path, monkeypatch) -> None:
    from config import deployed
    from ops.pipeline import record_deployed

    monkeypatch.setattr(deployed, "DEPLOYED_DIR", tmp_path)
    monkeypatch.chdir(tmp_path)
    record_deployed.record("prod")
    assert json.loads((tmp_path / "prod.json").read_text()) == {
        "variants": {
            "primary": {"instance_type": "ml.g5.xlarge", "scaled": True},
            "canary": {"instance_type": "ml.g5.xlarge", "scaled": True},
        }
    }


def test_an_unguarded_deploy_leaves_the_guardrails_and_retained_properties_out() -> None:
    """`make deploy VARIANTS_CHANGED=1`: SageMaker's guardrails refuse a changed variant set."""
    import aws_cdk as cdk
    from aws_cdk.assertions import Match, Template

    from config import load_environment
    from stacks.environment import build_environment

    app = cdk.App()
    _, serving = build_environment(app, load_environment("dev", variants_changed=True), guarded=False)
    Template.from_stack(serving).has_resource_properties(
        "AWS::SageMaker::Endpoint", {"DeploymentConfig": Match.absent(), "RetainAllVariantProperties": False}
    )


def test_a_mistyped_instance_type_is_one_message_not_also_a_scaled_variant_change(refused) -> None:
    """One mistake, one message: the deployed-record rule does not compare a field another rule refused."""
    found = refused(lambda raw: raw["variants"][0].update(instance_type="ml.g5.xlarg"), Deployed(BOTH_SCALED))
    assert [path for path, _ in found] == ["variants[0].instance_type"], found
    assert found[0][1].startswith("unknown instance type 'ml.g5.xlarg' (did you mean 'ml.g5.xlarge'?); known: ")
