"""`bin/ops capacity --write-config` (issue 30): a measurement that would make the config refuse synth
is not written, and the refusal says what else must change with the values that fit; a lower figure
names the scheduled floors that now carry less; in the sandbox the stand-in engine's figure is marked
as such in the record and never written."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from ops.capacity import Subject, record_answer, variant_subject
from ops.environment import load_environment_config, open_environment
from ops.errors import ExitCode, OpsError
from tests.ops.conftest import edit_environment

RECORD = {
    "requests_per_minute_per_instance": 100.0,  # below the assumed 132/min
    "concurrent_requests_per_instance_at_slo": 14.2,
    "measured_at": "2026-11-25T03:00:00+00:00",
    "slo": {"ttft_p95_ms": 500.0, "max_error_percent": 1.0},
    "target": {"kind": "sagemaker", "environment": "staging", "variant": "canary", "image_tag": "v0.2.0"},
}


def measurement(tmp_path: Path) -> SimpleNamespace:
    """What record_answer reads of a capacity.Measurement."""
    return SimpleNamespace(record=RECORD, out=tmp_path / "capacity-out")


def staging_subject() -> Subject:
    return Subject(target=None, workload=None, cfg=load_environment_config("staging"), instance_type="ml.g5.xlarge")  # type: ignore[arg-type]


def explicit_canary_target(document) -> None:
    """The issue's staging: a target on invocations per instance, valid at the assumed 132/min."""
    tracking = document["autoscaling"]["canary"]["target_tracking"]
    tracking["metric"] = "SageMakerVariantInvocationsPerInstance"
    del tracking["target_share_of_concurrency"]
    tracking["target_value"] = 120


def test_a_measurement_that_invalidates_a_target_is_refused_with_what_must_change(real_environments, tmp_path):
    edit_environment(real_environments, "staging", explicit_canary_target)
    before = (real_environments / "staging.yaml").read_text()

    with pytest.raises(OpsError) as refused:
        record_answer(staging_subject(), measurement(tmp_path))  # type: ignore[arg-type]

    message = str(refused.value)
    assert refused.value.exit_code == ExitCode.USAGE
    assert message.startswith("planning.capacity.ml.g5.xlarge (100/min, concurrent_sequences 15) not written: with it ")
    assert "staging.yaml would refuse synth. Change these in the same commit first:\n" in message
    assert (
        "  - autoscaling.canary.target_tracking.target_value: 120 is at or above the 100 requests/min one "
        "ml.g5.xlarge serves" in message
    )
    assert "allowed: below 100 (70 % of it, 70" in message
    assert f"then record the figure by hand from {tmp_path / 'capacity-out' / 'capacity.json'}" in message
    assert "note: autoscaling.primary.schedules[0].min_capacity (tokyo-evening-peak): 17 carried up to" in message
    assert (real_environments / "staging.yaml").read_text() == before


def test_a_written_measurement_names_the_floors_that_now_carry_less(real_environments, tmp_path):
    lines = record_answer(staging_subject(), measurement(tmp_path)).splitlines()  # type: ignore[arg-type]

    assert lines[0] == "planning.capacity.ml.g5.xlarge: 100/min measured on staging/canary 2026-11-25T03:00:00+00:00"
    assert lines[1].startswith("note: autoscaling.primary.schedules[0].min_capacity (tokyo-evening-peak)")
    assert lines[-1] == "note: `make plan ENV=staging` says whether the fleet still carries its traffic"
    assert "requests_per_minute: 100.0" in (real_environments / "staging.yaml").read_text()


def test_write_config_is_refused_in_the_sandbox_before_any_aws_call(environments, monkeypatch, cli):
    monkeypatch.setenv("MANGAASSIST_SANDBOX", "staging")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens: any call would fail
    before = (environments / "staging.yaml").read_text()

    result = cli("capacity", "staging", "--variant", "canary", "--write-config")

    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        "error: --write-config in the sandbox: the sandbox's stand-in engine (MANGAASSIST_SANDBOX=staging) serves "
        "its variants, not SageMaker instances, so its figure is no instance type's capacity"
    )
    assert (environments / "staging.yaml").read_text() == before


@pytest.mark.parametrize("sandbox", [None, "prod"])
def test_the_record_says_when_a_stand_in_was_measured(prod, monkeypatch, sandbox):
    if sandbox:
        monkeypatch.setenv("MANGAASSIST_SANDBOX", sandbox)
    environment = open_environment("prod", None, {})

    target = variant_subject(environment, "canary", "default").target.describe()

    if sandbox:
        assert target["stand_in"] == (
            "the sandbox's stand-in engine (MANGAASSIST_SANDBOX=prod) serves its variants, not SageMaker instances"
        )
    else:
        assert "stand_in" not in target
