"""`bin/ops shift`: options and flow (the shift: ops/operations/traffic.py; its plan: shift_plan.py)."""

from __future__ import annotations

from typing import Annotated

import typer

from config import EnvironmentConfig
from config.variant_lookup import share_percent
from ops.commands.common import CanaryOpt, EnvArg, PrimaryOpt, RegionOpt, runtime
from ops.commands.guard_options import MarginOpt, TtftMsOpt, TtftPercentOpt, WindowOpt, guard_policy
from ops.operations.busy_endpoint import Patience
from ops.operations.environment import config_variant
from ops.operations.guard import GuardPolicy
from ops.operations.output import Console, parse_duration, seconds
from ops.operations.rollback_capacity import Floor
from ops.operations.shift_plan import ShiftPlan, Target, default_check_seconds
from ops.operations.traffic import shift


def check_interval(hold: float, check_every: float | None) -> float:
    """How often a hold is checked: at most the hold, never 0 (that polls CloudWatch in a busy loop)."""
    if check_every is None:
        return default_check_seconds(hold)
    if check_every <= 0:
        raise typer.BadParameter(f"--check-every must be longer than 0, got {seconds(check_every)}")
    if hold and check_every > hold:
        raise typer.BadParameter(
            f"--check-every {seconds(check_every)} is longer than --hold {seconds(hold)}: the hold would "
            "never be checked; use a shorter interval"
        )
    return check_every


def config_share(cfg: EnvironmentConfig, name: str) -> float:
    """A variant's share of traffic in percent by the config's initial weights."""
    return share_percent(config_variant(cfg, name).initial_weight, (v.initial_weight for v in cfg.variants))


def shift_command(
    ctx: typer.Context,
    env: EnvArg,
    canary_weight: Annotated[
        float | None,
        typer.Option(min=0, max=100, help="Percent of traffic the canary should end with.", show_default=False),
    ] = None,
    to_config: Annotated[
        bool,
        typer.Option(
            "--to-config",
            help="End at the config's weights (e.g. 95/5 after a promotion deployed at 0/100), so verify passes.",
        ),
    ] = False,
    step: Annotated[
        list[float] | None,
        typer.Option(min=0, max=100, help="An intermediate canary percent; repeat it: --step 25 --step 50 --step 75."),
    ] = None,
    hold: Annotated[
        float, typer.Option(parser=parse_duration, metavar="DURATION", help="Watch this long after each step.")
    ] = 0,
    check_every: Annotated[
        float | None,
        typer.Option(
            parser=parse_duration,
            metavar="DURATION",
            help="Guard check interval during a hold: more than 0, at most the hold. Default: 60s or the hold.",
            show_default=False,
        ),
    ] = None,
    max_5xx_margin: MarginOpt = 1.0,
    error_window: WindowOpt = 300,
    max_ttft_increase: TtftPercentOpt = GuardPolicy.max_ttft_increase_percent,
    min_ttft_increase_ms: TtftMsOpt = GuardPolicy.min_ttft_increase_ms,
    min_canary_invocations: Annotated[
        int,
        typer.Option(
            min=1,
            help="Before a step from above 0%: canary invocations the error window must hold, and streamed "
            "requests each variant must have for the TTFT comparison (the evidence).",
        ),
    ] = GuardPolicy.min_invocations,
    raise_canary_capacity: Annotated[
        bool,
        typer.Option(
            "--raise-canary-capacity",
            help="When the canary's instances in service cannot serve its next share (planning.capacity), add "
            "instances and wait for InService instead of refusing.",
        ),
    ] = False,
    keep_rollback_floor: Annotated[
        bool,
        typer.Option(
            "--keep-rollback-floor",
            help="Before each step, raise the primary's instances and its scalable target's minimum to what "
            "moving all traffic back would need (live traffic / planning.capacity), so a rollback during the holds "
            "queues nobody; prints the cost per hour. The floor stays: `restore-scaling` puts it back.",
        ),
    ] = False,
    override: Annotated[
        str | None,
        typer.Option(
            metavar="REASON",
            help="Skip the evidence checks (canary invocations, streams to compare TTFT) and the capacity check; "
            "alarms and the 5XX and TTFT margins still apply. Says so and logs the reason.",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print the steps, holds, duration and checks, and change nothing (reads the endpoint)."
        ),
    ] = False,
    canary: CanaryOpt = "canary",
    primary: PrimaryOpt = "primary",
    region: RegionOpt = None,
) -> None:
    """Move traffic to (or from) the canary with UpdateEndpointWeightsAndCapacities, step by step.

    It first prints how long it takes (steps × hold). Before each step that adds canary traffic, and
    during each hold, the guard refuses while an alarm on the canary or the endpoint is in ALARM, the
    canary's 5XX rate exceeds the primary's by more than --max-5xx-margin, or its time to first token
    p95 the primary's by more than the TTFT margin. Before a step from above 0% it also needs evidence:
    --min-canary-invocations in the error window and as many streams on each variant to compare TTFT
    (from 0% the first step needs none, and the shift never jumps past it), and canary instances in
    service that can serve the new share. The canary weight then goes back to where it started (exit 4),
    and the primary is raised to carry its share as `rollback` raises it. Each hold warns when the primary
    could not take the canary's share back within the SLO (see --keep-rollback-floor).
    Ctrl-C leaves the weights where they are and prints the commands to resume or roll back (exit 130).
    Example, seeds' ramp (2h): shift prod --canary-weight 100 --step 25 --step 50 --step 75 --hold 30m
    """
    if (canary_weight is None) == (not to_config):
        raise typer.BadParameter("give either --canary-weight N or --to-config")
    if override is not None and not override.strip():
        raise typer.BadParameter("--override needs a reason, e.g. --override 'INC-123: canary carries the fix'")
    policy = guard_policy(
        max_5xx_margin, error_window, max_ttft_increase, min_ttft_increase_ms, min_invocations=min_canary_invocations
    )
    interval = check_interval(hold, check_every)
    rt = runtime(ctx)
    environment = rt.open(env, region, (canary, primary))
    cfg = environment.cfg
    plan = ShiftPlan(
        config_share(cfg, canary) if to_config else float(canary_weight or 0),
        tuple(step or ()),
        hold,
        interval,
        policy,
        first_step=config_share(cfg, canary) or None,
        capacity_per_instance={name: c.requests_per_minute for name, c in cfg.planning.capacity.items()},
        raise_capacity=raise_canary_capacity,
        override=override,
        floor=Floor.of(cfg, rt.state_dir),
        keep_rollback_floor=keep_rollback_floor,
    )
    target = Target(env, cfg.endpoint_name, canary, primary, region, Patience.of(cfg.operations))
    log = rt.state_dir / "overrides.log"
    shift(environment.clients, target, plan, Console(rt.zone), rt.timing, log, dry_run=dry_run)
