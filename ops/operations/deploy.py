"""`bin/ops deploy`: `make deploy` when SageMaker refuses the update while scaling is registered.

A deploy that changes the instance type of (or removes) a variant registered with Application Auto Scaling is
refused, and CloudFormation cannot deregister: deregister -> update -> wait -> register again with the same
policies and schedules, restored whether the deploy succeeds or fails, from a snapshot file written first.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from config import EnvironmentConfig, naming
from ops.operations.aws import AwsClients
from ops.operations.busy_endpoint import Patience, wait_in_service
from ops.operations.capacity_gate import check_before_deploy
from ops.operations.child_process import run_child
from ops.operations.endpoint import LiveEndpoint, read_endpoint
from ops.operations.errors import ExitCode, OpsError, explain
from ops.operations.interrupts import exit_code
from ops.operations.output import Console
from ops.operations.scaling import ScalingSnapshot, read_scaling, remove_scaling, restore_scaling
from ops.operations.waiting import Timing, builtin_waiter, wait

REPO_ROOT = Path(__file__).resolve().parent.parent.parent

# (env, variants whose scaling was moved aside, so synth lets their type change) -> the deploy's exit status
Deployer = Callable[[str, list[str]], int]


def make_deploy_command(env_name: str, released: list[str]) -> list[str]:
    command = ["make", "deploy", f"ENV={env_name}"]
    if released:
        command.append(f"SCALING_RELEASED={','.join(released)}")
    # The CLI checked the peak windows itself, before moving any scaling aside.
    return [*command, "FORCE_PEAK=1"]


def make_deploy(env_name: str, released: list[str]) -> int:
    """`make deploy ENV=<env>` from the repository root, its stderr relayed (ops/operations/child_process.py)."""
    return run_child(make_deploy_command(env_name, released), REPO_ROOT)


def variants_needing_release(live: LiveEndpoint, cfg: EnvironmentConfig) -> dict[str, str]:
    """Live variants the deploy would re-type or remove, and how. The whole ordered list of types is compared:
    whether SageMaker lets a first switch to InstancePools through on a scaled variant is not documented
    (config/checks/deployed.py), so it goes the safe way round."""
    wanted = {v.name: tuple(v.instance_types) for v in cfg.variants}
    changes = {}
    for variant in live.variants:
        now = variant.instance_types or (variant.instance_type,)
        if variant.name not in wanted:
            changes[variant.name] = "removed by the config"
        elif wanted[variant.name] != now:
            label = "instance type" if len(now) == len(wanted[variant.name]) == 1 else "instance types"
            changes[variant.name] = f"{label} {', '.join(now)} → {', '.join(wanted[variant.name])}"
    return changes


def deploy(
    clients: AwsClients,
    cfg: EnvironmentConfig,
    deployer: Deployer,
    console: Console,
    timing: Timing,
    state_dir: Path,
) -> None:
    check_before_deploy(cfg, console)  # before the first AWS call, as make deploy's own first step
    # A running update (a scale-out, a weight change) is waited out, within operations.busy_endpoint_wait_seconds.
    what = "deploy once the running update is over"
    wait_in_service(clients.sagemaker, cfg.endpoint_name, what, console, timing, Patience.of(cfg.operations))
    live = read_endpoint(clients.sagemaker, cfg.endpoint_name, cfg.name)
    releases = variants_needing_release(live, cfg)
    snapshot = read_scaling(clients.autoscaling, live.name, list(releases))
    if not snapshot.variants:
        console.line(f"Deploying {cfg.name}: no variant registered with autoscaling changes type or goes away")
        _deploy_and_wait(clients, cfg, deployer, console, timing, released=[])
        console.ok(f"deployed; next: `bin/ops verify {cfg.name}`")
        return

    saved_at = state_dir / f"scaling-{live.name}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    snapshot.save(saved_at)
    console.line(
        f"Deploying {cfg.name} with scaling moved aside (SageMaker refuses the update while it is registered):"
    )
    for scaling in snapshot.variants:
        console.line(f"  {scaling.variant}: {releases[scaling.variant]}; scaling {scaling.describe()}")
    console.line(f"  snapshot of the live scaling: {saved_at}")

    failure: OpsError | None = None
    try:
        remove_scaling(clients.autoscaling, snapshot, console)
        released = [scaling.variant for scaling in snapshot.variants]
        _deploy_and_wait(clients, cfg, deployer, console, timing, released=released)
    except (OpsError, ClientError, BotoCoreError) as error:
        failure = explain(error)
    except KeyboardInterrupt as stop:  # Ctrl-C, SIGTERM or SIGHUP (ops/operations/interrupts.py)
        failure = OpsError("interrupted", exit_code(stop))
    if failure is not None:
        _settle(clients, cfg, console, timing)
    _restore_present(clients, snapshot, console, saved_at, cfg.name)
    if failure is not None:
        restored = ", ".join(s.variant for s in snapshot.variants)
        raise OpsError(f"{failure}; scaling of {restored} was restored as it was", failure.exit_code)
    console.ok(f"deployed; next: `bin/ops verify {cfg.name}`")  # only once the scaling is back


def _deploy_and_wait(
    clients: AwsClients,
    cfg: EnvironmentConfig,
    deployer: Deployer,
    console: Console,
    timing: Timing,
    *,
    released: list[str],
) -> None:
    console.line(f"$ {' '.join(make_deploy_command(cfg.name, released))}")
    started = datetime.now(UTC)
    status = deployer(cfg.name, released)
    if status != 0:
        raise OpsError(
            f"`make deploy ENV={cfg.name}` failed with status {status} {_what_failed(clients, cfg.name, started)}",
            ExitCode.OPERATION_FAILED,
        )
    _wait_in_service(clients, cfg, console, timing)


def _what_failed(clients: AwsClients, env_name: str, since: datetime) -> str:
    """CloudFormation is blamed only if it touched a stack after the deploy began (synth, assets and a missing
    `cdk bootstrap` fail before it runs)."""
    touched = []
    for stack_name in (naming.image_stack_name(env_name), naming.serving_stack_name(env_name)):
        try:
            stack = clients.cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
        except (ClientError, BotoCoreError):
            continue  # not created (or not readable): CloudFormation did not change it
        changed = stack.get("LastUpdatedTime") or stack.get("CreationTime")
        if changed is not None and changed >= since:
            touched.append(f"{stack_name} is {stack['StackStatus']}")
    if touched:
        return f"in CloudFormation ({'; '.join(touched)}): see the stack events"
    return (
        "before CloudFormation changed any stack (nothing was deployed): see its output above, e.g. synth "
        f"refused the config, an asset did not upload, or the account lacks `make bootstrap ENV={env_name}`"
    )


def _wait_in_service(clients: AwsClients, cfg: EnvironmentConfig, console: Console, timing: Timing) -> None:
    sagemaker = clients.sagemaker
    wait(
        builtin_waiter(sagemaker, "endpoint_in_service"),
        sagemaker.describe_endpoint,
        lambda r: f"endpoint {r['EndpointName']}: {r['EndpointStatus']}",
        console,
        timing,
        EndpointName=cfg.endpoint_name,
    )


def _settle(clients: AwsClients, cfg: EnvironmentConfig, console: Console, timing: Timing) -> None:
    """After a failed deploy, let a rollback in progress finish before registering scaling again."""
    try:
        _wait_in_service(clients, cfg, console, timing)
    except (ClientError, BotoCoreError) as error:
        console.warn(f"endpoint did not return to InService ({explain(error)}); restoring scaling anyway")


def _restore_present(
    clients: AwsClients, snapshot: ScalingSnapshot, console: Console, saved_at: Path, env_name: str
) -> None:
    """Restore scaling for the variants that exist now; a variant the deploy removed took its scaling along."""
    try:
        present = {v.name for v in read_endpoint(clients.sagemaker, snapshot.endpoint, env_name).variants}
    except (OpsError, ClientError, BotoCoreError):
        present = {s.variant for s in snapshot.variants}
    for gone in [s for s in snapshot.variants if s.variant not in present]:
        console.line(f"  {gone.variant} no longer exists; its scaling is not restored")
    kept = ScalingSnapshot(snapshot.endpoint, [s for s in snapshot.variants if s.variant in present])
    restore_scaling(clients.autoscaling, kept, console, saved_at)
