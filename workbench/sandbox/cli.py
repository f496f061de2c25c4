"""`python -m workbench.sandbox start|stop|traffic`: a local AWS for trying the ops CLI (`make sandbox`).

start    a moto server seeded from the synthesised serving template (`make synth` writes it), a
         stand-in model server and the runtime API in front of it, in the background; prints the
         variables to export (eval-able: `eval "$(make -s sandbox)"`). A sandbox already running is
         reused, state and all, and says so on stderr; `--fresh` (`make sandbox FRESH=1`,
         `make sandbox-reset`) stops it first and starts from the templates again.
stop     stops it.
traffic  a minute of users' traffic, the evidence the canary guard needs before it lets a step through:
         --streams requests per variant really streamed through the runtime API (their time to first
         token reaches CloudWatch; they are data-captured), the rest of --per-minute recorded as
         invocations (and 5XX errors) per variant in the sandbox's CloudWatch (workbench/sandbox/traffic.py).
deploy   the sandbox's `make deploy`: `make synth`, then the endpoint moves onto the new templates'
         models and endpoint config, keeping weights and instance counts. `bin/ops deploy`
         runs it instead of `make deploy` while the sandbox's variables are exported.
schedule runs a scheduled window's start (or `--end`) now, as Application Auto Scaling would: the
         variants scale to its floor and the activity is recorded for `bin/ops scaling-history`
         (workbench/sandbox/schedule.py); `quota ml.g5.xlarge=20` sets the sandbox account's instance quota, so a
         window's scale-out can fail as SageMaker refuses one.
model    puts one variant's model server in a mode: `model canary slow --prefill-seconds 0.4` makes
         every first token 0.4 s later (a slow release for the canary guard), `model canary normal`
         ends it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from config import naming
from ops.operations.child_process import run_child

# exported: ops commands then act on the sandbox, through its runtime hook
from workbench.sandbox.hook import EXPORTED, HOOK_MODULE, HOOK_VARIABLE, SANDBOX_VARIABLE
from workbench.sandbox.runtime import DEPLOY_PATH
from workbench.sandbox.schedule import ScheduleError, run_window, set_quota
from workbench.sandbox.server import PATIENCE_SECONDS, REPO, State, serve, url_port
from workbench.sandbox.traffic import backfill, record_traffic

STATE_DIR = REPO / ".sandbox"
TEMPLATES = REPO / "cdk.out" / "all"


def state_file(env_name: str, state_dir: Path = STATE_DIR) -> Path:
    return state_dir / f"{env_name}.json"


def running(path: Path) -> State | None:
    if not path.exists():
        return None
    state = State.load(path)
    try:
        os.kill(state.pid, 0)
    except ProcessLookupError:
        path.unlink()
        return None
    return state


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def print_exports(state: State) -> None:
    print(f"# sandbox for {state.env}: moto at {state.moto_url}, runtime API at {state.runtime_url}")
    for name, value in state.exports().items():
        print(f"export {name}={value}")
    print(f"export {SANDBOX_VARIABLE}={state.env}")
    print(f"export {HOOK_VARIABLE}={HOOK_MODULE}")
    print("unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN")
    print(f"# then: bin/ops status {state.env}    start clean: make sandbox-reset    stop it: make sandbox-stop")


def live_variants(state: State) -> str:
    """'primary ml.g6.xlarge weight 95, canary ml.g5.xlarge weight 5 (endpoint config X)': what a reuse keeps."""
    sagemaker = state.session().client("sagemaker", endpoint_url=state.moto_url)
    endpoint = sagemaker.describe_endpoint(EndpointName=state.endpoint)
    config = sagemaker.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    types = {v["VariantName"]: variant_types(v) for v in config["ProductionVariants"]}
    variants = ", ".join(
        f"{v['VariantName']} {types.get(v['VariantName'], '?')} weight {float(v.get('CurrentWeight') or 0):g}"
        for v in endpoint["ProductionVariants"]
    )
    return f"{variants} (endpoint config {endpoint['EndpointConfigName']})"


def variant_types(variant: dict) -> str:
    """'ml.g5.xlarge', or with instance pools their types by priority: 'ml.g5.xlarge/ml.g6.xlarge'."""
    pools = sorted(variant.get("InstancePools") or [], key=lambda pool: pool["Priority"])
    return "/".join(pool["InstanceType"] for pool in pools) or variant.get("InstanceType", "?")


def reuse_notice(state: State) -> str:
    """Said on stderr (stdout is eval'd) whenever `start` hands out a sandbox that was already running."""
    since = f" since {state.started_at.replace('T', ' ').replace('+00:00', ' UTC')}" if state.started_at else ""
    try:
        live = f"; it now runs {live_variants(state)}"
    except Exception as error:  # noqa: BLE001 - a notice: never let it stop the exports
        live = f"; its endpoint could not be described ({type(error).__name__})"
    return (
        f"sandbox: reusing the sandbox for {state.env} running{since} (pid {state.pid}): its state is kept, every "
        f"sandbox deploy, weight and alarm change made since{live}. To start clean from the templates: "
        f"make sandbox-reset (or make sandbox FRESH=1)"
    )


def start(env_name: str, templates: Path, state_dir: Path, fresh: bool = False) -> int:
    template = templates / f"{naming.serving_stack_name(env_name)}.template.json"
    if not template.exists():
        print(f"error: {template} is missing: run `make synth` first", file=sys.stderr)
        return 2
    path = state_file(env_name, state_dir)
    ports = (0, 0)
    if fresh and (previous := running(path)):
        # The variables exported from it keep working: the new sandbox listens where the old one did.
        ports = (url_port(previous.moto_url), url_port(previous.runtime_url))
        stop(env_name, state_dir, quiet=True)
    if state := running(path):
        print(reuse_notice(state), file=sys.stderr)
        print_exports(state)
        return 0
    state_dir.mkdir(parents=True, exist_ok=True)
    log = state_dir / f"{env_name}.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "workbench.sandbox",
                "serve",
                env_name,
                "--templates",
                str(templates),
                "--state-dir",
                str(state_dir),
                "--ports",
                f"{ports[0]},{ports[1]}",
            ],  # fmt: skip
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives this command and the terminal's Ctrl-C
        )
    deadline = time.monotonic() + PATIENCE_SECONDS
    while not path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            print(f"error: the sandbox did not start; its log ({log}):\n{log.read_text()[-3000:]}", file=sys.stderr)
            return 1
        time.sleep(0.2)
    print_exports(State.load(path))
    return 0


def stop(env_name: str, state_dir: Path, quiet: bool = False) -> int:
    path = state_file(env_name, state_dir)
    state = running(path)
    if state is None:
        print(f"no sandbox for {env_name} is running", file=sys.stderr if quiet else sys.stdout)
        return 0
    os.kill(state.pid, signal.SIGTERM)
    deadline = time.monotonic() + PATIENCE_SECONDS
    while (path.exists() or alive(state.pid)) and time.monotonic() < deadline:  # its ports free once it is gone
        time.sleep(0.2)
    # stderr when start --fresh stops it: start's stdout is eval'd
    print(f"stopped the sandbox for {env_name} (pid {state.pid})", file=sys.stderr if quiet else sys.stdout)
    if not quiet:
        print(f"the variables it exported now point at nothing: unset {' '.join(EXPORTED)}")
    return 0


def deploy(state: State, templates: Path, synth: bool, released: str) -> int:
    if synth:
        command = ["make", "--no-print-directory", "synth"] + ([f"SCALING_RELEASED={released}"] if released else [])
        built = run_child(command, REPO)
        if built != 0:
            return built
    answer = httpx.post(f"{state.runtime_url}{DEPLOY_PATH}", json={"templates": str(templates)}, timeout=60)
    answer.raise_for_status()
    print(f"sandbox: {state.endpoint} now runs endpoint config {answer.json()['EndpointConfigName']}")
    return 0


MODEL_MODES = ("normal", "slow", "error500")


def set_model_mode(state: State, variant: str, mode: str, prefill_seconds: float) -> int:
    url = state.model_urls.get(variant)
    if url is None:
        print(
            f"error: no model server for variant {variant!r}; the sandbox has {sorted(state.model_urls)}",
            file=sys.stderr,
        )
        return 2
    answer = httpx.post(f"{url}/_standin/mode", json={"mode": mode, "prefill_seconds": prefill_seconds}, timeout=10)
    answer.raise_for_status()
    detail = f" (+{prefill_seconds:g} s before each first token)" if mode == "slow" else ""
    print(f"sandbox: {variant}'s model server is now {mode}{detail}")
    return 0


def scaling_command(args: argparse.Namespace, state: State) -> int:
    try:
        if args.command == "quota":
            print(set_quota(args.state_dir, args.env, args.setting))
        else:
            print("\n".join(run_window(state, args.window, args.end)))
    except ScheduleError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str]) -> int:
    """Every command; an interrupt (while it waits, synthesises or sleeps) goes on to the entry point (__main__.py)."""
    try:
        return run(argv)
    except httpx.TransportError as error:  # the sandbox's own servers failed a call: one line, not a traceback
        print(f"sandbox: a sandbox server did not answer ({type(error).__name__}: {error}); the sandbox keeps"
              " what was done before; `make sandbox-reset` starts a fresh one", file=sys.stderr)  # fmt: skip
        return 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m workbench.sandbox", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("start", "stop", "serve", "traffic", "deploy", "model", "schedule", "quota"):
        command = commands.add_parser(name)
        if name in ("schedule", "quota"):  # `schedule prod WINDOW`: the environment comes first
            command.add_argument("env")
        if name == "schedule":
            command.add_argument("window", help="a schedule's name in the environment's autoscaling config")
            command.add_argument("--end", action="store_true", help="the window's end: back to the variant's range")
        if name == "quota":
            command.add_argument("setting", help="TYPE=N, e.g. ml.g5.xlarge=20")
        if name == "model":
            command.add_argument("variant")
            command.add_argument("mode", choices=MODEL_MODES)
            command.add_argument(
                "--prefill-seconds", type=float, default=0.4, help="mode slow: added to each first token"
            )
        if name not in ("schedule", "quota"):
            command.add_argument("env", nargs="?", default="prod")
        command.add_argument("--state-dir", type=Path, default=STATE_DIR)
        if name in ("start", "serve", "deploy"):
            command.add_argument("--templates", type=Path, default=TEMPLATES)
        if name == "serve":
            command.add_argument("--ports", default="0,0", help="MOTO,RUNTIME ports to listen on (0: any free one)")
        if name == "start":
            command.add_argument("--fresh", action="store_true", help="stop a running sandbox first: start clean")
        if name == "deploy":
            command.add_argument("--no-synth", dest="synth", action="store_false", help="use the templates as they are")
            command.add_argument("--released", default="", help="variants whose scaling ops deploy moved aside")
        if name == "traffic":
            command.add_argument("--per-minute", type=float, default=2400, help="invocations, split by the weights")
            command.add_argument("--canary-5xx-percent", type=float, default=0, help="share of canary calls failing")
            command.add_argument("--follow", action="store_true", help="again every minute until interrupted")
            command.add_argument(
                "--backfill",
                type=float,
                metavar="HOURS",
                help="instead: the past HOURS of minutes at --per-minute, counts only (for `bin/ops traffic`)",
            )
            command.add_argument(
                "--streams",
                type=int,
                default=100,
                help="of each variant's share, streamed requests really served (TTFT for the guard; 0: none)",
            )
    return parser


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "start":
        return start(args.env, args.templates, args.state_dir, args.fresh)
    if args.command == "stop":
        return stop(args.env, args.state_dir)
    if args.command == "serve":
        moto_port, runtime_port = (int(port) for port in args.ports.split(","))
        serve(args.env, args.templates, state_file(args.env, args.state_dir), (moto_port, runtime_port))
        return 0
    state = running(state_file(args.env, args.state_dir))
    if state is None:
        print(f"error: no sandbox for {args.env} is running: `make sandbox`", file=sys.stderr)
        return 2
    if args.command == "deploy":
        return deploy(state, args.templates, args.synth, args.released)
    if args.command == "model":
        return set_model_mode(state, args.variant, args.mode, args.prefill_seconds)
    if args.command in ("schedule", "quota"):
        return scaling_command(args, state)
    if args.backfill is not None:
        try:
            print(f"sandbox traffic, backfilled: {backfill(state, args.per_minute, args.backfill)}")
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        return 0
    while True:
        served = record_traffic(state, args.per_minute, args.canary_5xx_percent, args.streams)
        print(f"sandbox traffic, last minute: {served}", flush=True)
        if not args.follow:
            return 0
        time.sleep(60)
