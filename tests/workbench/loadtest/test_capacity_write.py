"""`bin/loadtest --write-config` (issue 30): a measurement that would make the config refuse synth
is not written, and the refusal says what else must change with the values that fit; a lower figure
names the scheduled floors that now carry less; in the sandbox the stand-in engine's figure is marked
as such in the record and never written."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ops.operations.environment import load_environment_config, open_environment
from ops.operations.errors import ExitCode, OpsError
from tests.ops_world import edit_environment
from workbench.loadtest.endpoint_target import Subject, record_answer, variant_subject

RECORD = {
    "requests_per_minute_per_instance": 100.0,  # below the assumed 132/min
    "concurrent_requests_per_instance_at_slo": 14.2,
    "measured_at": "2026-11-25T03:00:00+00:00",
    "slo": {"ttft_p95_ms": 500.0, "max_error_percent": 1.0},
    "target": {"kind": "sagemaker", "environment": "staging", "variant": "canary", "image_tag": "v0.2.0"},
}


def measurement(tmp_path: Path, record: dict[str, Any] = RECORD) -> SimpleNamespace:
    """What record_answer reads of a capacity.Measurement."""
    return SimpleNamespace(record=record, out=tmp_path / "capacity-out")


def staging_subject() -> Subject:
    return Subject(target=None, workload=None, cfg=load_environment_config("staging"), instance_type="ml.g5.xlarge")  # type: ignore[arg-type]


def explicit_canary_target(value: int) -> Callable[[Any], None]:
    """The issue's staging: a target of `value` on invocations per instance for the canary."""

    def edit(document) -> None:
        tracking = document["autoscaling"]["canary"]["target_tracking"]
        tracking["metric"] = "SageMakerVariantInvocationsPerInstance"
        del tracking["target_share_of_concurrency"]
        tracking["target_value"] = value

    return edit


def test_a_measurement_that_invalidates_a_target_is_refused_with_what_must_change(real_environments, tmp_path):
    """A target valid at the assumed figure of every type the canary runs on (its fallback pools too,
    ml.g6.xlarge's lower figure among them), and a measured ml.g5.xlarge figure below that target."""
    cfg = load_environment_config("staging")
    canary = next(v for v in cfg.variants if v.name == "canary")
    assert "ml.g5.xlarge" in canary.instance_types
    assumed = min(cfg.planning.capacity[t].requests_per_minute for t in canary.instance_types)
    target = math.floor(0.9 * assumed)  # below every assumed figure: valid as the config stands
    measured = float(math.floor(0.8 * assumed))  # the measurement puts ml.g5.xlarge below the target
    assert measured <= target < assumed and measured < cfg.planning.capacity["ml.g5.xlarge"].requests_per_minute
    edit_environment(real_environments, "staging", explicit_canary_target(target))
    before = (real_environments / "staging.yaml").read_text()
    subject = staging_subject()  # loads: the target is valid before the measurement
    first = subject.cfg.autoscaling["primary"].schedules[0]
    record = {**RECORD, "requests_per_minute_per_instance": measured}

    with pytest.raises(OpsError) as refused:
        record_answer(subject, measurement(tmp_path, record))  # type: ignore[arg-type]

    message = str(refused.value)
    assert refused.value.exit_code == ExitCode.USAGE
    assert message.startswith(
        f"planning.capacity.ml.g5.xlarge ({measured:,g}/min, concurrent_sequences 15) not written: with it "
    )
    assert "staging.yaml would refuse synth. Change these in the same commit first:\n" in message
    assert (
        f"  - autoscaling.canary.target_tracking.target_value: {target} is at or above the {measured:,g} requests/min "
        "one ml.g5.xlarge serves" in message
    )
    assert f"allowed: below {measured:,g} (70 % of it, {0.7 * measured:,.0f}" in message
    assert f"then record the figure by hand from {tmp_path / 'capacity-out' / 'capacity.json'}" in message
    assert (
        f"note: autoscaling.primary.schedules[0].min_capacity ({first.name}): {first.min_capacity} carried up to"
        in message
    )
    assert (real_environments / "staging.yaml").read_text() == before


def test_a_written_measurement_names_the_floors_that_now_carry_less(real_environments, tmp_path):
    lines = record_answer(staging_subject(), measurement(tmp_path)).splitlines()  # type: ignore[arg-type]

    assert lines[0] == (
        "planning.capacity.ml.g5.xlarge: 100/min answered within the objective (TTFT p95 <= 500 ms), measured on "
        "staging/canary 2026-11-25T03:00:00+00:00"
    )
    assert lines[1].startswith("note: autoscaling.primary.schedules[0].min_capacity (tokyo-evening-peak)")
    assert lines[-1] == "note: `make plan ENV=staging` says whether the fleet still carries its traffic"
    assert "requests_per_minute: 100.0" in (real_environments / "staging.yaml").read_text()


def test_write_config_is_refused_in_the_sandbox_before_any_aws_call(environments, monkeypatch, loadtest):
    monkeypatch.setenv("MANGAASSIST_SANDBOX", "staging")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens: any call would fail
    before = (environments / "staging.yaml").read_text()

    result = loadtest("staging", "--variant", "canary", "--write-config")

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
