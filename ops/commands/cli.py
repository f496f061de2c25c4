"""`bin/ops COMMAND …`: parse options, open the environment, call one module, set the exit code.
Tests hand a `Runtime` in as click's context object.
"""

import shlex
from datetime import UTC, datetime
from typing import Annotated

import typer

from config import environment_label
from ops.commands.common import (
    CanaryOpt,
    DuringPeakOpt,
    EnvArg,
    PrimaryOpt,
    RegionOpt,
    app,
    reports_errors,
    runtime,
)
from ops.commands.guard_options import MarginOpt, TtftMsOpt, TtftPercentOpt, WindowOpt, guard_policy
from ops.commands.preflight import preflight_command
from ops.commands.restore_scaling import restore_scaling_command
from ops.commands.scaling_history import scaling_history_command
from ops.commands.shift import shift_command
from ops.commands.traffic_export import traffic_command
from ops.operations.aws import AwsClients, open_session
from ops.operations.bedrock_import import ImportJob, submit_import, validate_artifact, wait_for_import
from ops.operations.busy_endpoint import Patience
from ops.operations.deploy import deploy
from ops.operations.endpoint import read_endpoint
from ops.operations.environment import config_variant, load_environment_config
from ops.operations.errors import ExitCode, OpsError
from ops.operations.guard import GuardPolicy, check_canary
from ops.operations.output import Console, JsonOpt
from ops.operations.peak_window import check_peak_windows
from ops.operations.promotion import plan_promotion, write_promotion
from ops.operations.release_tag import tag_release
from ops.operations.rollback_capacity import Floor
from ops.operations.smoke import DEFAULT_PROMPT, SmokeRequest, smoke_adapter
from ops.operations.status import STATUS_WIDTH, show_status
from ops.operations.traffic import Target, rollback
from ops.operations.verify import report, verify


@app.command()
@reports_errors
def status(ctx: typer.Context, env: EnvArg, region: RegionOpt = None, as_json: JsonOpt = False) -> None:
    """Endpoint status, the endpoint config in service, each variant's image, instance type, instance
    counts and weights, autoscaling targets with their scheduled actions (in local time), alarms in ALARM.
    Lines fit 120 columns; --json prints the same as one JSON document."""
    access = runtime(ctx).open_for_emergency(env, region)  # an invalid config does not stop it
    console = Console(runtime(ctx).zone, STATUS_WIDTH)
    show_status(access.clients, access.identity, access.cfg, console, as_json=as_json)


app.command(name="shift")(reports_errors(shift_command))


@app.command(name="rollback")
@reports_errors
def rollback_command(
    ctx: typer.Context,
    env: EnvArg,
    canary: CanaryOpt = "canary",
    primary: PrimaryOpt = "primary",
    region: RegionOpt = None,
) -> None:
    """All traffic to the primary at once (canary weight 0), confirmed by describing the endpoint until
    the weights are in effect; then the primary's desired instances and its scalable target's minimum
    raised to what the live traffic needs (planning.capacity), with a record `restore-scaling` puts the
    minimum back from. A bad *primary* image is rolled back through the deploy path instead: revert the
    config commit and run `bin/ops deploy ENV` (see docs/reference/commands.md)."""
    rt = runtime(ctx)
    access = rt.open_for_emergency(env, region, (canary, primary))  # an invalid config does not stop it
    patience = Patience.of(access.cfg and access.cfg.operations)
    target = Target(env, access.identity.endpoint_name, canary, primary, region, patience)
    floor = Floor.of(access.cfg, rt.state_dir)  # no capacity figures with an invalid config: the floor says so
    rollback(access.clients, target, Console(rt.zone), rt.timing, floor)


@app.command()
@reports_errors
def promote(
    ctx: typer.Context,
    env: EnvArg,
    deploy_now: Annotated[
        bool, typer.Option("--deploy/--no-deploy", help="Also deploy the promoted config (`bin/ops deploy ENV`).")
    ] = False,
    max_5xx_margin: MarginOpt = 1.0,
    error_window: WindowOpt = 300,
    max_ttft_increase: TtftPercentOpt = GuardPolicy.max_ttft_increase_percent,
    min_ttft_increase_ms: TtftMsOpt = GuardPolicy.min_ttft_increase_ms,
    canary: CanaryOpt = "canary",
    primary: PrimaryOpt = "primary",
    during_peak: DuringPeakOpt = False,
    region: RegionOpt = None,
) -> None:
    """Make the canary's image (and instance type) the primary's by editing config/environments/ENV.yaml,
    so CloudFormation's blue/green policy rolls it out with automatic rollback and the template never
    disagrees with the live endpoint. Refused (exit 4) unless the live canary runs exactly what the
    config names and passes the guard. Without --deploy it prints the next steps."""
    policy = guard_policy(max_5xx_margin, error_window, max_ttft_increase, min_ttft_increase_ms)
    rt = runtime(ctx)
    console = Console(rt.zone)
    environment = rt.open(env, region, (canary, primary))
    cfg = environment.cfg
    promotion = plan_promotion(cfg, primary, canary)
    console.line(f"Promoting {canary} → {primary} in {environment_label(env)}")
    if not promotion.changes:
        console.line(f"nothing to promote: {primary} already has {canary}'s image and instance type")
        return
    tested = config_variant(cfg, canary)
    live = read_endpoint(environment.clients.sagemaker, cfg.endpoint_name, env).variant(canary)
    if (live.image_tag, live.instance_type) != (tested.image_tag, tested.instance_type):
        raise OpsError(
            f"the live {canary} runs {live.image_tag} on {live.instance_type}, but the config names "
            f"{tested.image_tag} on {tested.instance_type}: deploy the canary and let it bake before promoting",
            ExitCode.REFUSED,
        )
    verdict = check_canary(environment.clients.cloudwatch, cfg.endpoint_name, canary, primary, policy)
    if not verdict.healthy:
        raise OpsError(f"promotion refused: {'; '.join(verdict.problems)}", ExitCode.REFUSED)
    console.ok(f"{canary} passes the guard ({verdict.summary})")
    for note in verdict.not_checked:
        console.warn(f"not checked: {note}")
    if deploy_now:
        check_peak_windows(cfg, rt.now(), during_peak, console)
    write_promotion(promotion)
    for name, (old, new) in promotion.changes.items():
        console.ok(f"{primary}.{name}: {old} → {new}")
    console.line(promotion.diff())
    if deploy_now:
        deploy(environment.clients, load_environment_config(env), rt.deployer, console, rt.timing, rt.state_dir)
        return
    console.line(
        f"next: commit {environment_label(env)}, then `bin/ops deploy {env}` "
        f"(it moves autoscaling aside if the instance type changes), then `bin/ops verify {env}`"
    )


@app.command(name="deploy")
@reports_errors
def deploy_command(
    ctx: typer.Context, env: EnvArg, during_peak: DuringPeakOpt = False, region: RegionOpt = None
) -> None:
    """`make deploy ENV=…` that works when a variant registered with autoscaling changes instance type
    (or goes away): deregister → deploy → wait → register again with the same policies and scheduled
    actions, restored even when the deploy fails. A snapshot file is written first. Refused (exit 4)
    when the update would overlap a scheduled peak window, unless --during-peak."""
    rt = runtime(ctx)
    environment = rt.open(env, region)
    check_peak_windows(environment.cfg, rt.now(), during_peak, Console(rt.zone))
    deploy(environment.clients, environment.cfg, rt.deployer, Console(rt.zone), rt.timing, rt.state_dir)


app.command(name="restore-scaling")(reports_errors(restore_scaling_command))
app.command(name="preflight")(reports_errors(preflight_command))


@app.command(name="verify")
@reports_errors
def verify_command(
    ctx: typer.Context,
    env: EnvArg,
    check_weights: Annotated[
        bool,
        typer.Option(
            "--check-weights/--skip-weights", help="Skip during a canary ramp, when weights differ on purpose."
        ),
    ] = True,
    region: RegionOpt = None,
) -> None:
    """After a deploy: the stack is healthy, the endpoint is InService and runs the endpoint config the
    stack expects (catches a silent rollback), variants, images, instance types and weights are as the
    config says, and no alarm is in ALARM. Exit 0 only if all hold, else 3."""
    rt = runtime(ctx)
    console = Console(rt.zone)
    access = rt.open_for_emergency(env, region)  # an invalid config does not stop it
    console.line(f"Verifying {env} ({access.identity.endpoint_name}, {access.clients.region})")
    if not report(verify(access, check_weights), console):
        raise typer.Exit(ExitCode.CHECK_FAILED)


@app.command()
@reports_errors
def smoke(
    ctx: typer.Context,
    env: EnvArg,
    variant: Annotated[str | None, typer.Option(help="Send every request to this variant (e.g. canary).")] = None,
    prompt: Annotated[str, typer.Option(help="The user message sent to each adapter.")] = DEFAULT_PROMPT,
    max_tokens: Annotated[int, typer.Option(min=1, max=1024, help="max_tokens of each completion.")] = 64,
    region: RegionOpt = None,
) -> None:
    """One chat completion per LoRA adapter in the config (engine.adapters), plain and streamed,
    checking the response shape and reporting latency and time to first token. Exit 3 if any fails."""
    rt = runtime(ctx)
    console = Console(rt.zone)
    environment = rt.open(env, region, (variant,) if variant else ())
    cfg = environment.cfg
    live = read_endpoint(environment.clients.sagemaker, cfg.endpoint_name, env)
    if variant:
        live.variant(variant)
    console.line(
        f"Smoke test of {live.name} ({live.status}), {len(cfg.engine.adapters)} adapters"
        + (f", variant {variant}" if variant else "")
    )
    results = []
    for adapter in cfg.engine.adapters:
        request = SmokeRequest(cfg.endpoint_name, adapter, prompt, max_tokens, variant)
        results += smoke_adapter(environment.clients.runtime, request, rt.timing.clock)
    console.table(["ADAPTER", "MODE", "VARIANT", "LATENCY", "TTFT", "TOKENS", "RESULT"], [r.row() for r in results])
    failed = [r for r in results if not r.passed]
    console.line(f"\n{len(results) - len(failed)} of {len(results)} invocations answered as expected")
    if failed:
        raise typer.Exit(ExitCode.CHECK_FAILED)


@app.command(name="release-tag")
@reports_errors
def release_tag_command(
    ctx: typer.Context,
    env: EnvArg,
    tag: Annotated[str, typer.Argument(help="The release tag to give it, e.g. v0.2.0 (release tags never expire).")],
    source: Annotated[
        str | None, typer.Option(help="The tag of the build to release. Default: the image stack's SourceImageTag.")
    ] = None,
    region: RegionOpt = None,
) -> None:
    """Give a tested build's image a release tag in ECR, without rebuilding (`v…`, kept forever). Exit 4
    when the tag already names another image; 6 when the stack or the build is not there."""
    rt = runtime(ctx)
    clients = rt.open(env, region).clients
    tag_release(clients.client("ecr"), clients.cloudformation, env, tag, source, Console(rt.zone))


@app.command(name="bedrock-import")
@reports_errors
def bedrock_import(
    ctx: typer.Context,
    s3_uri: Annotated[str, typer.Argument(help="s3://bucket/prefix/ holding the Hugging Face model files.")],
    model_name: Annotated[str | None, typer.Option(help="Name of the imported Bedrock model.")] = None,
    role_arn: Annotated[str | None, typer.Option(help="IAM role Bedrock assumes to read the artifact.")] = None,
    job_name: Annotated[str | None, typer.Option(help="Default: MODEL_NAME-<UTC timestamp>.")] = None,
    validate_only: Annotated[bool, typer.Option(help="Check the artifact and stop.")] = False,
    region: RegionOpt = None,
) -> None:
    """Bedrock Custom Model Import: validate the S3 artifact (required files, size limit, supported
    architecture and precision from config.json), submit the import job, poll it to completion and
    print the imported model's ARN. Exit 3 if the artifact fails validation, 8 if the job fails."""
    rt = runtime(ctx)
    console = Console(rt.zone)
    if not validate_only and not (model_name and role_arn):
        raise typer.BadParameter("--model-name and --role-arn are required unless --validate-only")
    clients = AwsClients(open_session(None, region), rt.client_overrides)
    artifact = validate_artifact(clients.s3, s3_uri)
    console.line(
        f"Artifact {artifact.uri}: {artifact.weight_files} safetensors file(s), "
        f"{artifact.total_bytes / 10**9:.2f} GB, architecture {artifact.architecture or 'unknown'}"
    )
    for problem in artifact.problems:
        console.fail(problem)
    if artifact.problems:
        raise typer.Exit(ExitCode.CHECK_FAILED)
    console.ok("layout, size, architecture and precision are importable")
    if validate_only:
        return
    assert model_name and role_arn
    job = ImportJob(job_name or f"{model_name}-{datetime.now(UTC):%Y%m%d-%H%M%S}", model_name, role_arn, s3_uri)
    job_arn = submit_import(clients.bedrock, job)
    console.line(f"submitted import job {job.job_name}: {job_arn}")
    imported = wait_for_import(clients.bedrock, job_arn, console, rt.timing)
    console.ok("import job completed; the imported model's ARN:")
    console.line(imported)


# Kept for one release after the load test left ops (issue 49): says where it went, runs nothing.
@app.command(
    name="capacity",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def capacity_moved(ctx: typer.Context) -> None:
    """Moved: the load test is `bin/loadtest`, with the same arguments (exit 2)."""
    typer.echo(f"error: the load test moved: {shlex.join(['bin/loadtest', *ctx.args])}", err=True)
    raise typer.Exit(ExitCode.USAGE)


app.command(name="scaling-history")(reports_errors(scaling_history_command))
app.command(name="traffic")(reports_errors(traffic_command))
