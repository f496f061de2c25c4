"""`bin/loadtest` (`python -m workbench.loadtest`): the load test's options and its few lines of flow. The
deployed variant as a target is workbench/loadtest/endpoint_target.py's; the measuring is the library's
(workbench/loadtest/measurement.py). It runs on the ops CLI's runtime (credentials, clients, error lines
and exit codes: ops.commands.common), so a test hands its `Runtime` in as click's context object."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Any

import typer

from ops.commands.common import RegionOpt, reports_errors, runtime
from ops.operations.errors import ExitCode
from ops.operations.output import JsonOpt
from workbench.loadtest import MeasureSettings, measure
from workbench.loadtest.endpoint_target import (
    Subject,
    conclude,
    open_measured_environment,
    record_answer,
    refuse_usage,
    url_subject,
    usage_errors,
    variant_subject,
)
from workbench.loadtest.measurement import MIN_STEP_SECONDS

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)


def rate_option(help: str) -> Any:
    """A positive rate whose default is derived from the config, so none is shown."""
    return typer.Option(min=1, help=help, show_default=False)


@app.command(name="loadtest")  # the name ops/operations/permissions.py knows it by
@reports_errors
def loadtest_command(
    ctx: typer.Context,
    env: Annotated[str | None, typer.Argument(help="Environment whose deployed variant to measure.")] = None,
    variant: Annotated[str | None, typer.Option(help="The variant to drive (with ENV).")] = None,
    url: Annotated[str | None, typer.Option(help="A serving container to drive directly (its /invocations).")] = None,
    slo_ttft_ms: Annotated[
        float | None,
        typer.Option(
            min=1, help="TTFT p95 objective in ms. Default: the environment's alarms.ttft_p95_ms.", show_default=False
        ),
    ] = None,
    step_seconds: Annotated[float, typer.Option(min=1, help="How long each offered rate runs.")] = MIN_STEP_SECONDS,
    max_minutes: Annotated[float, typer.Option(min=0.1, help="The whole run stops by itself after this long.")] = 30,
    start_rpm: Annotated[
        float | None,
        rate_option("First offered rate per instance. Default: planning.capacity of the type in service (or 60)."),
    ] = None,
    max_rpm: Annotated[
        float | None, rate_option("Highest rate per instance ever offered. Default: 3 × planning.capacity (or 3,600).")
    ] = None,
    max_send_lag_ms: Annotated[
        float,
        typer.Option(min=1, help="Refuse a step whose own send lag p99 exceeds this: it measured the client."),
    ] = 50.0,
    workload: Annotated[
        str,
        typer.Option(
            help="'conversations' (multi-turn sessions, config/domain/workload.yaml; 'default' is the same), 'single' "
            "(independent turns), 'capture' (needs CaptureReader policy) or a file."
        ),
    ] = "conversations",
    warmup_seconds: Annotated[
        float | None,
        typer.Option(
            min=0,
            help="Conversations: unmeasured seconds before each step. Default: the workload's.",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Report directory. Default: capacity-out/<target>-<UTC time>/.")
    ] = None,
    write_config: Annotated[
        bool,
        typer.Option("--write-config", help="Record the answer in config/environments/ENV.yaml (planning.capacity)."),
    ] = False,
    allow_production: Annotated[
        bool, typer.Option("--allow-production", help="Measure a production variant: its users will wait (see help).")
    ] = False,
    region: RegionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Measure how many requests a minute one instance serves within the latency objective.

    Open-loop Poisson load at rising rates until TTFT p95 exceeds the objective or more than 1 % of
    requests fail, then refined to within 10 %. The answer is the highest rate answered within the
    objective in a step that held, never a rate offered. By default the load is conversations: sessions arrive
    open-loop, each turn sending the conversation so far (docs/explanation/capacity-model.md "Conversations"). Drives ENV's --variant through the SageMaker runtime
    (divided by its instance count), or a container at --url. Writes capacity.json, capacity.md and
    capacity.png. The sweep drives the variant past its objective on purpose: its TTFT alarms fire
    and real users on it wait, so a production environment needs --allow-production.
    Exit codes: 0 an answer; 2 usage; 3 no answer (broke at the first rate, generator too slow,
    time budget); 4 refused (endpoint not InService, instances of several types); 5 credentials or access
    denied; 130 interrupted (report written).
    """
    # --json: progress and the answer on stderr, capacity.json's record alone on stdout.
    say = functools.partial(typer.echo, err=as_json)
    refuse_usage(env, variant, url, slo_ttft_ms, write_config, workload)
    with usage_errors():
        subject = _subject(ctx, env, variant, url, workload, allow_production, region)
        if step_seconds < MIN_STEP_SECONDS:
            say(f"note: steps of {step_seconds:g} s hold few requests at low rates; the report gives each step's count")
        slo = subject.objective_ms(slo_ttft_ms)
        settings = MeasureSettings(
            slo_ttft_ms=slo,
            step_seconds=step_seconds,
            max_minutes=max_minutes,
            start_rpm=start_rpm,
            max_rpm=max_rpm,
            max_send_lag_ms=max_send_lag_ms,
            planned_rpm=subject.planned_rpm,
            out=out,
            warmup_seconds=warmup_seconds,
        )
        measurement = measure(subject.target, subject.workload, settings, say=say)
    if measurement.interrupted:
        typer.echo(measurement.interruption(), err=True)
        raise typer.Exit(ExitCode.INTERRUPTED)
    if as_json:  # before the verdict, which exits 3 when there is no answer: the record says why
        typer.echo((Path(measurement.out) / "capacity.json").read_text().rstrip())
    conclude(measurement, slo, say)
    if write_config:
        say(record_answer(subject, measurement))


def _subject(
    ctx: typer.Context,
    env: str | None,
    variant: str | None,
    url: str | None,
    workload: str,
    allow_production: bool,
    region: str | None,
) -> Subject:
    if url is not None:
        return url_subject(url, workload)
    assert env is not None and variant is not None  # refuse_usage asked for both
    overrides = runtime(ctx).client_overrides
    environment = open_measured_environment(env, region, variant, allow_production, overrides)
    return variant_subject(environment, variant, workload)
