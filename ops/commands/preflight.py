"""`bin/ops preflight ENV` (ops/operations/preflight.py)."""

from __future__ import annotations

import typer

from ops.commands.common import EnvArg, RegionOpt, runtime
from ops.operations.environment import load_environment_config
from ops.operations.errors import ExitCode
from ops.operations.output import Console
from ops.operations.preflight import account_findings, config_findings


def preflight_command(ctx: typer.Context, env: EnvArg, region: RegionOpt = None) -> None:
    """Before a deploy, read-only: the account's SageMaker endpoint quotas for every pool type against this
    deploy (twice the initial counts: blue/green), the maxima and the YAML; the model data (exists, region,
    encryption key); the release images; placeholders in the config; the budget's cost-allocation tag. One
    line per finding (what, found, needed, fix). Exit 3 when any problem is found, else 0."""
    rt = runtime(ctx)
    console = Console(rt.zone)
    findings = config_findings(load_environment_config(env))
    for finding in findings:  # before any AWS call: a placeholder account fails the credentials check next
        console.line(finding.line())
    environment = rt.open(env, region)
    console.line(f"Preflight of {env} in account {environment.cfg.account or '(any)'}, {environment.clients.region}")
    found = account_findings(environment.clients, environment.cfg)
    for finding in found:
        console.line(finding.line())
    problems = [f for f in findings + found if f.blocking]
    if problems:
        console.line(f"preflight: {len(problems)} problem(s); nothing was created or changed")
        raise typer.Exit(ExitCode.CHECK_FAILED)
    console.line("preflight: no problem found")
