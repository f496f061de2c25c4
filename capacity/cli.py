"""`python -m ops capacity`: parse, refuse what must be refused before any AWS call, pick the target and
the workload, run the sweep, write the report (also when interrupted) and, if asked, the config."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from capacity.capture import captured_workload
from capacity.record import record_measurement
from capacity.report import RunFacts, write
from capacity.sweep import SweepSettings, sweep
from capacity.targets import UrlTarget, VariantTarget
from capacity.workload import DEFAULT_WORKLOAD, Workload, WorkloadError

PRODUCTION = ("prod",)
MIN_STEP_SECONDS = 60  # the default: about 1,000 requests a step at the seeds' rate, enough for a p95
EXIT_NO_ANSWER = 3
EXIT_REFUSED = 4
EXIT_INTERRUPTED = 130


def fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def capacity_command(
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
        typer.Option(
            min=1,
            help="First offered rate per instance. Default: 10 % of planning.capacity (or 60).",
            show_default=False,
        ),
    ] = None,
    max_rpm: Annotated[
        float | None,
        typer.Option(
            min=1,
            help="Highest rate per instance ever offered. Default: 3 × planning.capacity (or 3,600).",
            show_default=False,
        ),
    ] = None,
    max_send_lag_ms: Annotated[
        float,
        typer.Option(min=1, help="Refuse a step whose own send lag p99 exceeds this: it measured the client."),
    ] = 50.0,
    workload: Annotated[
        str, typer.Option(help="'default' (capacity/workload.yaml), 'capture' (the variant's data capture) or a file.")
    ] = "default",
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
    region: Annotated[str | None, typer.Option(help="AWS region, for environments whose config has none.")] = None,
) -> None:
    """Measure how many requests a minute one instance serves within the latency objective.

    Open-loop Poisson load at rising rates until TTFT p95 exceeds the objective or more than 1 % of
    requests fail, then refined to within 10 %. Drives ENV's --variant through the SageMaker runtime
    (divided by its instance count), or a container at --url. Writes capacity.json, capacity.md and
    capacity.png. The sweep drives the variant past its objective on purpose: its TTFT alarms fire
    and real users on it wait, so a production environment needs --allow-production.
    Exit codes: 0 an answer; 2 usage; 3 no answer (broke at the first rate, generator too slow,
    time budget); 4 refused (production, endpoint not InService); 130 interrupted (report written).
    """
    if (env is None) == (url is None):
        raise fail("give ENV --variant NAME (a deployed variant) or --url URL (a container)", 2)
    if env is not None and variant is None:
        raise fail("give --variant NAME: the sweep drives one variant", 2)
    if url is not None and slo_ttft_ms is None:
        raise fail("--url needs --slo-ttft-ms (there is no environment to take the objective from)", 2)
    if write_config and env is None:
        raise fail("--write-config records a deployed variant's measurement: give ENV --variant", 2)
    if env in PRODUCTION and not allow_production:
        raise fail(
            f"{env} is production: the sweep drives {variant} past its objective on purpose, so its TTFT alarms "
            "fire and real users on it wait. Measure staging, or add --allow-production in a quiet hour.",
            2,
        )
    if step_seconds < MIN_STEP_SECONDS:
        typer.echo(
            f"note: steps of {step_seconds:g} s hold few requests at low rates; the report gives each step's count"
        )
    cfg = None
    if env is not None:
        from ops.environment import load_environment_config

        try:
            cfg = load_environment_config(env)
        except Exception as error:  # noqa: BLE001 - an OpsError or a config error: one line, exit 2
            raise fail(str(error), 2) from None
        slo_ttft_ms = slo_ttft_ms or float(cfg.alarms.ttft_p95_ms)
    assert slo_ttft_ms is not None
    if url is not None and workload == "capture":
        raise fail("--workload capture reads a deployed variant's data capture: give ENV --variant", 2)
    try:
        run = _prepare(cfg, variant, url, workload, region)
    except WorkloadError as error:
        raise fail(str(error), 2) from None
    target, bodies = run.target, run.bodies
    settings = SweepSettings(
        slo_ttft_ms=slo_ttft_ms,
        step_seconds=step_seconds,
        max_minutes=max_minutes,
        start_rpm=start_rpm or (run.planned_rpm * 0.1 if run.planned_rpm else 60.0),
        max_rpm=max_rpm or (run.planned_rpm * 3 if run.planned_rpm else 3600.0),
        max_send_lag_ms=max_send_lag_ms,
    )
    if settings.start_rpm > settings.max_rpm:
        raise fail(f"--start-rpm {settings.start_rpm:g} is above --max-rpm {settings.max_rpm:g}", 2)
    measured_at = datetime.now(UTC)
    name = url.split("//")[-1].replace(":", "-").replace("/", "-") if url else f"{env}-{variant}"
    out = out or Path("capacity-out") / f"{'url-' if url else ''}{name}-{measured_at:%Y%m%dT%H%M%SZ}"
    typer.echo(
        f"Capacity sweep of {url or f'{env}/{variant}'} ({target.instances} instance(s)): objective TTFT p95 <= "
        f"{slo_ttft_ms:g} ms and <= 1 % errors; steps of {step_seconds:g} s from {settings.start_rpm:,.0f} up to at "
        f"most {settings.max_rpm:,.0f} requests/min per instance; stops after {max_minutes:g} min; at most "
        f"{settings.request_ceiling(target.instances):,} requests in all. Report: {out}/"
    )
    facts = RunFacts(
        target=target.describe(),
        instances=target.instances,
        slo_ttft_ms=slo_ttft_ms,
        workload=run.workload,
        measured_at=measured_at,
        settings={"step_seconds": step_seconds, "max_minutes": max_minutes, "start_rpm": settings.start_rpm,
                  "max_rpm": settings.max_rpm, "max_send_lag_ms": settings.max_send_lag_ms},
    )  # fmt: skip
    outcome = asyncio.run(_run(target, bodies, settings, out, facts))
    record = write(outcome, facts, out)
    answer = record["requests_per_minute_per_instance"]
    if outcome.stopped == "interrupted":
        typer.echo(f"interrupted: {len(outcome.steps)} step(s) measured, written to {out}/", err=True)
        raise typer.Exit(EXIT_INTERRUPTED)
    if answer is None:
        raise fail(f"no rate held the objective ({outcome.stopped}); report in {out}/", EXIT_NO_ANSWER)
    typer.echo(
        f"answer: {answer:,.0f} requests/min per instance within TTFT p95 <= {slo_ttft_ms:g} ms "
        f"({record['concurrent_requests_per_instance_at_slo']} in flight); {outcome.stopped}; report in {out}/"
    )
    if not outcome.complete:
        raise fail(f"the sweep did not finish ({outcome.stopped}): {answer:,.0f}/min is a lower bound", EXIT_NO_ANSWER)
    if write_config and cfg is not None and run.instance_type is not None:
        from config import environment_file

        typer.echo(record_measurement(environment_file(cfg.name), run.instance_type, record, out / "capacity.json"))


@dataclass(frozen=True)
class PreparedRun:
    target: Any  # UrlTarget or VariantTarget
    bodies: Iterator[dict[str, Any]]
    workload: dict[str, Any]  # what the report says of the workload
    instance_type: str | None = None  # of the variant measured
    planned_rpm: float | None = None  # its planning.capacity today


def _prepare(cfg: Any, variant: str | None, url: str | None, workload: str, region: str | None) -> PreparedRun:
    """The target and the workload; for a variant, the AWS calls (account, endpoint, capture) happen here."""
    if cfg is None:
        chosen = Workload.load(DEFAULT_WORKLOAD if workload == "default" else Path(workload))
        return PreparedRun(UrlTarget(url.rstrip("/")), chosen.bodies(), chosen.describe())
    from ops.endpoint import read_endpoint
    from ops.environment import open_environment
    from ops.errors import EXPLAINED, explain

    try:
        clients = open_environment(cfg.name, region, {}, (variant,)).clients  # checks the account too
        live = read_endpoint(clients.sagemaker, cfg.endpoint_name, cfg.name)
        if live.status != "InService":
            raise fail(
                f"{cfg.endpoint_name} is {live.status}, not InService: measure it once the update is over", EXIT_REFUSED
            )
        measured = live.variant(variant)
        instances = measured.current_instance_count or 0
        if instances < 1:
            raise fail(f"{variant} has no instance in service", EXIT_REFUSED)
        if workload == "capture":
            described = clients.sagemaker.describe_endpoint_config(EndpointConfigName=live.config_name)
            capture = described.get("DataCaptureConfig") or {}
            if not capture.get("DestinationS3Uri"):
                raise WorkloadError(f"{live.config_name} has no data capture (data_capture.enabled in the config)")
            chosen = captured_workload(clients.client("s3"), capture["DestinationS3Uri"], cfg.endpoint_name, variant)
        else:
            chosen = Workload.load(DEFAULT_WORKLOAD if workload == "default" else Path(workload))
        runtime = _runtime_client(clients)
    except EXPLAINED as error:
        problem = explain(error)
        raise fail(str(problem), problem.exit_code) from None
    planned = cfg.planning.capacity.get(measured.instance_type)
    details = {
        "environment": cfg.name,
        "image": measured.image,
        "image_tag": measured.image_tag,
        "instance_type": measured.instance_type,
        "engine": cfg.engine.model_dump(mode="json"),
    }
    return PreparedRun(
        VariantTarget(runtime, cfg.endpoint_name, variant, instances, details),
        chosen.bodies(),
        chosen.describe(),
        measured.instance_type,
        planned.requests_per_minute if planned else None,
    )


def _runtime_client(clients: Any) -> Any:
    from botocore.config import Config

    config = Config(max_pool_connections=256, read_timeout=70, retries={"max_attempts": 1, "mode": "standard"})
    return clients.session.client("sagemaker-runtime", config=config)


async def _run(target: Any, bodies: Any, settings: SweepSettings, out: Path, facts: RunFacts) -> Any:
    stop = threading.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await target.open()
    try:
        return await sweep(
            target, bodies, settings, stop, lambda line: typer.echo(line), on_step=lambda o: write(o, facts, out)
        )
    finally:
        await target.close()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
