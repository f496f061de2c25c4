"""`python -m workbench.planner COMMAND …`: simulate an environment's scaling config against a week of traffic.

Exit codes: 0 ok; 1 `plan`'s verdict is "not met" (files still written: CI can gate on it); 2 unknown
environment, invalid config or traffic file, or a setting the planner cannot model (the message names the field);
130 interrupted (Ctrl-C: one line, no traceback; SIGTERM 143, SIGHUP 129).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from config.editor import UnsafeEdit
from config.loader import (
    ConfigError,
    UnknownEnvironment,
    known_environments,
    load_catalog,
    load_config_file,
    load_environment,
)
from config.naming import environment_label
from config.schema import Catalog, EnvironmentConfig
from workbench.planner.budget_limit import budget_limit, write_budget_limit
from workbench.planner.build import PlanError, build_plan
from workbench.planner.compare import render_comparison
from workbench.planner.doc_block import PLAN_DOC, with_summary
from workbench.planner.environment_traffic import traffic_of
from workbench.planner.frontier import inputs_digest
from workbench.planner.outages import Outage, OutageError, parse_outages
from workbench.planner.reference_week import reference_week
from workbench.planner.results import FigureCheck, Plan
from workbench.planner.summary import render_summary
from workbench.planner.traffic import TrafficError, TrafficProfile, write_csv
from workbench.planner.verdict import judge

DOCS_DIR = Path("docs/plan")

app = typer.Typer(
    help="Simulate an environment's scaling config against a week of traffic: cost and shortfall.\n\n"
    "Exit codes: 0 ok; 1 plan's verdict is not met (files still written); 2 unknown environment, invalid config "
    "or traffic file, or a setting the planner cannot model (the message names the field); 130 interrupted.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

Env = Annotated[str, typer.Argument(help="environment: a file in config/environments/ (dev, staging, prod)")]
Traffic = Annotated[
    Path | None,
    typer.Option(
        help="per-minute CSV (timestamp,requests) of this environment; default: its planning.traffic", dir_okay=False
    ),
]


Unavailable = Annotated[
    list[str] | None,
    typer.Option(
        "--unavailable",
        metavar="TYPE@WINDOW",
        help="no new instance of TYPE can be provisioned in WINDOW (a peak window of the traffic, e.g. "
        "friday-chapters, or an ISO interval 2026-10-30T07:00Z/2026-10-30T13:00Z); instances in service stay and "
        "fallback pools take over. Repeatable; commas separate several in one value",
    ),
]


@app.command()
def plan(
    env: Env,
    traffic: Traffic = None,
    out: Annotated[Path | None, typer.Option(help="directory")] = None,
    unavailable: Unavailable = None,
    tune: Annotated[
        bool, typer.Option("--tune", help="search for the cheapest scaling meeting the budget (workbench/planner/tune.py)")
    ] = False,
    write_config: Annotated[
        bool,
        typer.Option(
            "--write-config",
            help="write alarms.monthly_budget_usd (the configured cost on planning.traffic x alarms.budget_margin), "
            "then plan; with --tune: the chosen point, planning.frontier and then that figure (refused on a --traffic "
            "other than planning.traffic)",
        ),
    ] = False,
) -> None:
    """Simulate ENV's scaling and write summary.md and plot.png (default directory: plan-out/ENV).

    Exits 1 when the verdict is "not met" or alarms.monthly_budget_usd is stale, after writing both files.
    With --tune: search the documented space instead, write tune.md and frontier.png, and (--write-config) the
    chosen point into ENV's file."""
    out = out or Path("plan-out") / env
    if tune:
        _tune(env, traffic, out, write_config)
        return
    for stale in (out / "summary.md", out / "plot.png") if out.is_dir() else ():
        stale.unlink(missing_ok=True)  # a failed plan leaves no earlier run's files to be taken for its own
    cfg = _config(env)
    profile = _traffic(traffic, cfg)
    outages = _outages(unavailable or [], profile, cfg)
    if write_config:
        cfg = _write_budget_limit(cfg)
    _working(f"planning {env}", profile)
    result = _plan(cfg, profile, outages, with_margin=True)
    result.figures.append(_budget_limit(cfg))  # the gate's alone: diff and docs judge the scaling only
    out.mkdir(parents=True, exist_ok=True)
    summary = render_summary(result)
    (out / "summary.md").write_text(summary)
    _draw_plot(result, out / "plot.png")
    typer.echo(summary)
    typer.echo(f"wrote {out / 'summary.md'} and {out / 'plot.png'}")
    verdict = judge(result)
    failed = [check for check in verdict.checks if not check.passed]
    if failed:
        reasons = "; ".join(check.against_limit() for check in failed)
        typer.echo(f"verdict: not met ({env}, planning.budget): {reasons}", err=True)
    for figure in verdict.figures:
        if figure.stale:
            typer.echo(f"verdict: not met ({env}): {figure.text}", err=True)
    if not verdict.met:
        raise typer.Exit(1)


@app.command()
def diff(
    env: Env,
    base: Annotated[Path, typer.Option(help="the base config file (make plan-diff: from git)", dir_okay=False)],
    head: Annotated[Path | None, typer.Option(help="default: config/environments/ENV.yaml", dir_okay=False)] = None,
    traffic: Traffic = None,
    out: Annotated[Path | None, typer.Option(help="also write the Markdown here", dir_okay=False)] = None,
    base_name: Annotated[
        str | None,
        typer.Option(help="the base as messages name it (make plan-diff: REVISION:config/environments/ENV.yaml)"),
    ] = None,
) -> None:
    """Compare the cost and shortfall of two configs of ENV on the same traffic (head's planning.traffic).

    `--out` is written only when the comparison succeeds; a failure removes an earlier one."""
    if out:
        out.unlink(missing_ok=True)
    head_cfg = _config(env, head)
    profile = _traffic(traffic, head_cfg)
    base_name = base_name or str(base)
    base_plan = _plan(_config(env, base, base_name), profile, source=base_name)
    head_plan = _plan(head_cfg, profile, source=str(head) if head else None)
    comparison = render_comparison(base_plan, head_plan)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(comparison)
    typer.echo(comparison)


@app.command()
def docs(document: Annotated[Path, typer.Option("--doc", dir_okay=False)] = PLAN_DOC) -> None:
    """Refresh docs/plan/ (summary.md, plot.png) and the copy of the prod plan in docs/scaling-and-planning.md."""
    cfg = _config("prod")
    result = _plan(cfg, _traffic(None, cfg), with_margin=True)
    summary = render_summary(result)
    DOCS_DIR.mkdir(parents=True, exist_ok=True)
    (DOCS_DIR / "summary.md").write_text(summary)
    _draw_plot(result, DOCS_DIR / "plot.png")
    try:
        document.write_text(with_summary(document.read_text(), summary))
    except (OSError, ValueError) as error:
        _fail(f"{document}: {error}")
    typer.echo(f"wrote {DOCS_DIR / 'summary.md'}, {DOCS_DIR / 'plot.png'} and the plan in {document}")


@app.command("export-traffic")
def export_traffic(out: Annotated[Path, typer.Argument(help="CSV file to write", dir_okay=False)]) -> None:
    """Write the reference week as a per-minute CSV, a starting point for your own profile."""
    try:
        write_csv(reference_week(), out)
    except TrafficError as error:
        _fail(str(error))
    typer.echo(f"wrote {out}")


def _tune(env: str, traffic: Path | None, out: Path, write_config: bool) -> None:
    from workbench.planner import tune, tune_report  # matplotlib and the search: only for --tune

    cfg = _config(env)
    profile = _traffic(traffic, cfg)
    catalog = load_catalog()
    if write_config and traffic is not None:
        _refuse_frontier_of_other_traffic(cfg, catalog, profile, traffic)
    _working(f"tuning {env}", profile, "searching the documented space")
    started = time.monotonic()
    try:
        result = tune.search(cfg, catalog, profile)
    except PlanError as error:
        _fail(f"{environment_label(cfg.name)}: {error}")
    report = tune_report.summary(cfg, result, time.monotonic() - started)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tune.md").write_text(report)
    tune_report.draw_frontier(result, out / "frontier.png")
    typer.echo(report)
    typer.echo(f"wrote {out / 'tune.md'} and {out / 'frontier.png'}")
    if not result.chosen.meets:
        typer.echo(f"no configuration in the search space meets {env}'s planning.budget", err=True)
        raise typer.Exit(1)
    if write_config:
        try:
            typer.echo(tune_report.write_point(cfg, result.chosen, inputs_digest(cfg, catalog, profile)))
        except (ConfigError, UnsafeEdit) as error:
            _fail(str(error))
        typer.echo(f"wrote the chosen point and planning.frontier into {environment_label(env)}")
        _write_budget_limit(_config(env))  # the budget follows the scaling just written


def _refuse_frontier_of_other_traffic(
    cfg: EnvironmentConfig, catalog: Catalog, profile: TrafficProfile, path: Path
) -> None:
    """planning.frontier judges plans of planning.traffic: one found on other traffic (a few hours' export)
    would make every plan of the environment's own week stale."""
    reference = _traffic(None, cfg)
    if inputs_digest(cfg, catalog, profile) != inputs_digest(cfg, catalog, reference):
        _fail(
            f"--write-config with --traffic {path}: planning.frontier judges the plans of {cfg.name}'s planning.traffic"
            f" ({reference.name}) and {profile.name} is other traffic; drop --write-config to see its frontier, or"
            f" set planning.traffic.profile to {path} to plan {cfg.name} on it"
        )


def _budget_limit(cfg: EnvironmentConfig) -> FigureCheck:
    try:
        limit = budget_limit(cfg, load_catalog())
    except (PlanError, TrafficError) as error:
        _fail(f"{environment_label(cfg.name)}: {error}")
    return FigureCheck(limit.line(), limit.stale)


def _write_budget_limit(cfg: EnvironmentConfig) -> EnvironmentConfig:
    """Write alarms.monthly_budget_usd, say what changed; ENV's config as written."""
    try:
        typer.echo(write_budget_limit(cfg, load_catalog()))
    except (PlanError, TrafficError) as error:
        _fail(f"{environment_label(cfg.name)}: {error}")
    except (ConfigError, UnsafeEdit) as error:
        _fail(str(error))
    return _config(cfg.name)


def _config(env: str, path: Path | None = None, name: str | None = None) -> EnvironmentConfig:
    """ENV's own config, or (`path`) another revision's file of it, e.g. plan-diff's base, which
    messages call `name` (plan-diff's is a temporary copy of `git show REVISION:FILE`)."""
    try:
        if path is None:
            return load_environment(env, against_deployed=False)
        if env not in known_environments():
            raise UnknownEnvironment(env, known_environments())
        if not path.is_file():
            _fail(f"{name or path}: no such config file")
        return load_config_file(path, env)
    except UnknownEnvironment as error:
        _fail(error.message)
    except ConfigError as error:
        _fail(str(ConfigError(name, error.problems) if name else error))


def _traffic(path: Path | None, cfg: EnvironmentConfig) -> TrafficProfile:
    """`--traffic` (the environment's own recorded counts) or the config's `planning.traffic`, judged in
    the peak windows of its `release_calendar`."""
    try:
        return traffic_of(cfg, path)
    except TrafficError as error:
        _fail(str(error))


def _outages(values: list[str], traffic: TrafficProfile, cfg: EnvironmentConfig) -> list[Outage]:
    """`--unavailable` values, each possibly a comma-separated list (`make plan UNAVAILABLE=a,b`)."""
    items = [item for value in values for item in value.split(",") if item.strip()]
    types = list(dict.fromkeys(t for v in cfg.variants for t in v.instance_types))
    try:
        return parse_outages(items, traffic, types)
    except OutageError as error:
        _fail(str(error))


def _plan(
    cfg: EnvironmentConfig, traffic: TrafficProfile, outages=(), *, with_margin: bool = False, source: str | None = None
) -> Plan:
    """`source`: the file the config came from, named in an error when it is not ENV's own."""
    try:
        return build_plan(cfg, load_catalog(), traffic, outages=outages, with_margin=with_margin)
    except PlanError as error:
        where = f"{environment_label(cfg.name)} ({source})" if source else environment_label(cfg.name)
        _fail(f"{where}: {error}")


def _draw_plot(result: Plan, path: Path) -> None:
    # Imported here: matplotlib takes most of the CLI's start-up, and `diff` and every error exit need none of it.
    from workbench.planner.plot import draw_plot

    draw_plot(result, path)


def _working(what: str, traffic: TrafficProfile, how: str = "simulating") -> None:
    """On stderr, once the inputs are read and checked: the seconds of work that follow are under way (and a
    Ctrl-C from here on lands in the work: the docs walk interrupts at this line)."""
    typer.echo(f"{what}: {traffic.name}, {len(traffic.requests_per_minute):,} minutes; {how}...", err=True)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)
