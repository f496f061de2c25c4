"""An invalid config never locks out the emergency commands (issue 30); the commands that change the endpoint
still refuse.
"""

from __future__ import annotations

import json

import pytest

from config import ConfigError, load_environment
from ops.operations.output import Console
from ops.operations.scaling import read_scaling, remove_scaling
from tests.ops_world import edit_environment

TARGET_FIELD = "autoscaling.primary.target_tracking.target_value"


def target_above_capacity(document) -> None:
    """An explicit target of 80 concurrent requests: above what any type of the moto world's prod serves."""
    tracking = document["autoscaling"]["primary"]["target_tracking"]
    del tracking["target_share_of_concurrency"]
    tracking["target_value"] = 80


@pytest.fixture
def invalid_prod(prod, environments):
    """prod deployed, then its config made one that synth refuses."""
    edit_environment(environments, "prod", target_above_capacity)
    with pytest.raises(ConfigError, match=f"{TARGET_FIELD}: 80 is at or above the"):
        load_environment("prod", against_deployed=False)
    return prod


def test_rollback_goes_on_with_an_invalid_config_and_says_so(invalid_prod, cli):
    invalid_prod.set_weights(primary=75, canary=25)

    result = cli("rollback", "prod")

    assert result.exit_code == 0, result.output
    assert invalid_prod.weights() == {"primary": 100.0, "canary": 0.0}
    assert "all traffic on primary; canary weight 0 is in effect" in result.output
    warning = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1, result.stderr
    assert f"prod.yaml is invalid ({TARGET_FIELD}: 80 is at or above the " in warning[0]
    assert "going on with the endpoint's identity alone (mangaassist-llm-prod, variants primary, canary)" in warning[0]


def test_a_broken_field_elsewhere_does_not_stop_a_rollback(prod, environments, cli):
    """A field that fails the schema itself (not only a cross-field rule) is no identity field either."""
    edit_environment(environments, "prod", lambda document: document["engine"].update(max_num_seqs="lots"))
    prod.set_weights(primary=50, canary=50)

    result = cli("rollback", "prod")

    assert result.exit_code == 0, result.output
    assert prod.weights() == {"primary": 100.0, "canary": 0.0}
    assert "is invalid (engine.max_num_seqs: Input should be a valid integer" in result.stderr


def test_restore_scaling_goes_on_with_an_invalid_config(invalid_prod, cli, tmp_path):
    invalid_prod.register_scaling("primary")
    before = invalid_prod.scaling()
    autoscaling = invalid_prod.client("application-autoscaling")
    snapshot = read_scaling(autoscaling, invalid_prod.endpoint, ["primary", "canary"])
    snapshot.save(tmp_path / "snapshot.json")
    remove_scaling(autoscaling, snapshot, Console())
    assert invalid_prod.scaling() == {}

    result = cli("restore-scaling", "prod", str(tmp_path / "snapshot.json"))

    assert result.exit_code == 0, result.output
    assert invalid_prod.scaling() == before
    assert f"is invalid ({TARGET_FIELD}" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("shift", "prod", "--canary-weight", "0"),
        ("promote", "prod"),
        ("deploy", "prod"),
    ],
)
def test_commands_that_change_the_endpoint_still_refuse(invalid_prod, cli, args):
    invalid_prod.set_weights(primary=75, canary=25)

    result = cli(*args)

    assert result.exit_code == 2, result.output
    assert "invalid configuration, fix it first" in result.stderr
    assert TARGET_FIELD in result.stderr
    assert invalid_prod.weights() == {"primary": 75.0, "canary": 25.0}


def test_an_invalid_identity_stops_even_a_rollback(invalid_prod, environments, cli):
    edit_environment(environments, "prod", lambda document: document.update(endpoint_name="mangaassist_llm_prod"))

    result = cli("rollback", "prod")

    assert result.exit_code == 2
    assert "invalid configuration, fix it first" in result.stderr
    assert "endpoint_name: String should match pattern" in result.stderr
    assert TARGET_FIELD not in result.stderr  # the identity's own problems, not the rest


@pytest.mark.parametrize("invalid", [False, True], ids=["valid-config", "invalid-config"])
def test_an_unknown_variant_is_a_usage_error_either_way(prod, environments, cli, invalid):
    if invalid:
        edit_environment(environments, "prod", target_above_capacity)

    result = cli("rollback", "prod", "--canary", "blue")

    assert result.exit_code == 2
    assert "has no variant 'blue' (it has: primary, canary): check --primary/--canary/--variant" in result.stderr
    assert ("warning" in result.stderr) == invalid  # a valid config prints none


def test_status_shows_the_live_endpoint_with_an_invalid_config(invalid_prod, cli):
    result = cli("status", "prod")

    assert result.exit_code == 0, result.output
    assert "Endpoint mangaassist-llm-prod (ap-northeast-1): InService" in result.stdout
    assert "  not shown: the config is invalid (the warning above names its first problem)" in result.stdout
    assert f"is invalid ({TARGET_FIELD}: 80 is at or above the " in result.stderr
    result = cli("status", "prod", "--json")

    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["config_valid"] is False
    assert document["capacity"] is None and document["provisioning_minutes"] is None
    assert [v["name"] for v in document["variants"]] == ["primary", "canary"]


def test_verify_checks_what_needs_no_config_and_fails_on_the_rest(invalid_prod, cli):
    result = cli("verify", "prod")

    assert result.exit_code == 3, result.output
    assert "✓ endpoint mangaassist-llm-prod is InService" in result.stdout
    assert "✓ canary weight 5 in effect (desired 5)" in result.stdout
    assert "✗ instance types, image tags and shares not compared with the config: it is invalid" in result.stdout
    assert "instance type ml.g4dn.xlarge, config" not in result.stdout  # nothing compared with an invalid config
