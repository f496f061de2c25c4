"""`make deploy` of production refuses an assumed capacity before any AWS call; ACCEPT_ASSUMED_CAPACITY lets it
through and is recorded.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from config import deployed, loader
from config.capacity_evidence import assumed_types, how_to_measure
from ops.pipeline import assumed_capacity, record_deployed

ROOT = Path(__file__).resolve().parents[3]
REAL = loader.ENVIRONMENTS_DIR
MEASURED = {"where": "staging/canary", "measured_at": "2026-11-26T10:00:00+00:00", "slo_ttft_p95_ms": 500}


def write_environments(directory: Path, prod_edit=None, staging_edit=None) -> None:
    yaml = YAML(typ="safe", pure=True)
    for name, edit in (("prod", prod_edit), ("staging", staging_edit), ("dev", None)):
        raw = yaml.load((REAL / f"{name}.yaml").read_text())
        if edit:
            edit(raw)
        with (directory / f"{name}.yaml").open("w") as handle:
            yaml.dump(copy.deepcopy(raw), handle)


def measure(raw: dict, instance_type: str, rpm: float = 250, sequences: int = 18) -> None:
    capacity = raw.setdefault("planning", {}).setdefault("capacity", {})
    capacity[instance_type] = {
        "requests_per_minute": rpm,
        "concurrent_sequences": sequences,
        "measured": dict(MEASURED),
    }


@pytest.fixture
def environments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "environments"
    target.mkdir()
    monkeypatch.setattr(loader, "ENVIRONMENTS_DIR", target)
    monkeypatch.setattr(deployed, "DEPLOYED_DIR", tmp_path / "deployed")
    (tmp_path / "deployed").mkdir()
    monkeypatch.delenv(assumed_capacity.OVERRIDE, raising=False)
    return target


def test_prod_as_shipped_is_refused_naming_every_pool_type_and_the_commands_that_measure_them(
    environments, capsys
) -> None:
    write_environments(environments)
    assert assumed_capacity.main(["prod"]) == assumed_capacity.REFUSED
    err = capsys.readouterr().err
    assert err.startswith("error: refusing to deploy prod (production): the capacity of 2 pool type(s) is assumed")
    assert "  ml.g5.xlarge (primary, canary): assumed: " in err
    assert "  ml.g6.xlarge (primary (fallback), canary (fallback)): assumed: " in err  # the fallback pools too
    # staging's canary runs ml.g5.xlarge alone: measure it there; ml.g6.xlarge needs the canary pinned first.
    assert "  ml.g5.xlarge: bin/loadtest staging --variant canary --write-config" in err
    # staging's canary is scaled: its instance type changes through `bin/ops deploy` (docs/how-to/deploy.md)
    assert "set canary's instance_type: ml.g6.xlarge with no fallback_instance_types, `bin/ops deploy staging`" in err
    assert 'ACCEPT_ASSUMED_CAPACITY="<why>" make deploy ENV=prod' in err
    assert "Traceback" not in err


def test_a_type_staging_has_measured_is_to_be_copied_and_a_measured_prod_deploys(environments, capsys) -> None:
    write_environments(environments, staging_edit=lambda raw: measure(raw, "ml.g6.xlarge"))
    cfg = loader.load_environment("prod", against_deployed=False)
    assert how_to_measure(cfg, "ml.g6.xlarge").startswith(
        "copy planning.capacity.ml.g6.xlarge (with its measured block) from config/environments/staging.yaml"
    )
    write_environments(environments, prod_edit=lambda raw: measure(raw, "ml.g5.xlarge"))
    only_fallback = loader.load_environment("prod", against_deployed=False)
    assert [p.instance_type for p in assumed_types(only_fallback)] == ["ml.g6.xlarge"]  # a fallback alone refuses
    assert assumed_capacity.main(["prod"]) == assumed_capacity.REFUSED

    def both(raw: dict) -> None:
        measure(raw, "ml.g5.xlarge")
        measure(raw, "ml.g6.xlarge", 200, 15)

    write_environments(environments, prod_edit=both)
    capsys.readouterr()
    assert assumed_capacity.main(["prod"]) == 0
    assert capsys.readouterr().out == "capacity: every pool type of prod is measured (planning.capacity)\n"


def test_a_non_production_environment_deploys_on_assumptions(environments, capsys) -> None:
    write_environments(environments)
    assert assumed_capacity.main(["staging"]) == 0
    assert "staging is not production" in capsys.readouterr().out


def test_the_override_needs_a_reason_and_its_reason_is_recorded(environments, monkeypatch, capsys) -> None:
    write_environments(environments)
    monkeypatch.setenv(assumed_capacity.OVERRIDE, "  ")  # blank: an undefined GitHub variable reads as ""
    assert assumed_capacity.main(["prod"]) == assumed_capacity.REFUSED
    assert "error: refusing to deploy prod" in capsys.readouterr().err

    monkeypatch.setenv(assumed_capacity.OVERRIDE, "first deploy; staging measurement booked for Monday")
    monkeypatch.setenv("GITHUB_ACTOR", "octo-reviewer")
    assert assumed_capacity.main(["prod"]) == 0
    assert capsys.readouterr().out.startswith(
        "warning (ACCEPT_ASSUMED_CAPACITY): deploying prod on an assumed capacity of ml.g5.xlarge, ml.g6.xlarge"
    )
    monkeypatch.chdir(environments.parent)
    record_deployed.record("prod")
    written = json.loads((environments.parent / "deployed" / "prod.json").read_text())
    accepted = written["accepted_assumed_capacity"]
    assert accepted["reason"] == "first deploy; staging measurement booked for Monday"
    assert accepted["types"] == ["ml.g5.xlarge", "ml.g6.xlarge"] and accepted["by"] == "octo-reviewer"
    assert set(written["variants"]) == {"primary", "canary"}  # the record synth compares against is intact
    shown = deployed.load_acceptance("prod")
    assert shown is not None and "deployed on an assumed capacity of ml.g5.xlarge, ml.g6.xlarge" in shown.describe()

    monkeypatch.delenv(assumed_capacity.OVERRIDE)  # the next deploy, without it, leaves no acceptance behind
    record_deployed.record("prod")
    assert "accepted_assumed_capacity" not in json.loads((environments.parent / "deployed" / "prod.json").read_text())


def test_make_deploy_refuses_before_its_first_aws_call() -> None:
    """The real Makefile: the gate is the recipe's first command, so neither the peak-window check nor cdk runs."""
    env = {k: v for k, v in os.environ.items() if k != assumed_capacity.OVERRIDE}
    run = subprocess.run(
        ["make", "--no-print-directory", "deploy", "ENV=prod"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 2 and "Error 4" in run.stderr, run.stdout + run.stderr
    assert "error: refusing to deploy prod (production)" in run.stderr
    assert "cdk deploy" not in run.stdout and "deploy_window" not in run.stdout
