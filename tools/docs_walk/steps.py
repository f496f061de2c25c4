"""What the walk runs, in order, and which printed commands it does not run (each with why).

Every command line README.md and docs/ print in a shell block or as a transcript's `$ ` line
(tests/test_docs_commands.py reads them the same way) is either one of the steps' `covers` or a key of
NOT_WALKED; tests/test_docs_walk_steps.py fails on a command line that is neither, so a command added to the
docs is walked or says why not. A step's `command` is what runs (in bash, in the walk's tree); `covers` are the
docs' lines it runs (default: the command itself). Steps that are not in the docs (`setup`) set the scene a
transcript needs, as a person would (an edit of the config, traffic of a given shape).

A long command (`interrupt`) is also run once before, interrupted with Ctrl-C when `ready` shows in its output
(or after `interrupt` seconds): it must end with exit status 130, one line of its own (indented lines under it,
such as shift's resume commands, belong to that line; GNU make's own "*** [...] Interrupt" report under a make
target is make's), and no traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

# The ramp's users: enough for the guard's evidence at the canary's 5 % (100 invocations in the window) and
# few enough that 100 % fits the canary's max_capacity at the assumed capacity (tests check both from config).
RAMP_PER_MINUTE = 2000
CANARY_RELEASE = "v0.2.0"


@dataclass(frozen=True)
class Step:
    command: str
    expect: int | tuple[int, ...] = 0  # the exit status, or those the docs give as possible outcomes
    transcript: str | None = None  # the docs' block it is shown in (tools/docs_walk/transcript.py)
    shown: str | None = None  # how the transcript shows the command, when not as it runs
    covers: tuple[str, ...] | None = None  # the docs' command lines it runs; None: (command,)
    interrupt: float | None = None  # long: also run once and interrupted after this many seconds at most
    ready: str | None = None  # ... or as soon as this regular expression shows in its output
    interrupt_only: bool = False  # long and covered elsewhere: only the interrupted run (e.g. `make test`)
    background: bool = False  # runs beside the following steps until a step `stops` it (they wait for `ready`)
    stops: bool = False  # this step is Ctrl-C to the background command (its interrupt check)
    exports: bool = False  # `eval "$(...)"`: its export/unset lines apply to the steps after it
    setup: bool = False  # not a docs command: sets the scene for the next ones
    clock: bool = True  # its output shows the clock (dates and times masked in the transcript); False: fixed times
    test_runner: bool = False  # pytest: its interrupted summary is several lines of its own (never a traceback)
    timeout: float = 600

    def lines(self) -> tuple[str, ...]:
        """The docs' command lines this step runs: none for a setup step, nor for users' traffic in the
        background, which the docs' prose names (as "in another terminal"), not a command block."""
        if self.setup or self.background or self.stops:
            return ()
        return self.covers if self.covers is not None else (self.command,)


def _sandbox(arguments: str) -> str:
    return f".venv/bin/python -m workbench.sandbox {arguments}"


def _set_canary_image(tag: str) -> str:
    """The docs' "put the tag into variants[canary].image_tag": one line of the walk's own prod.yaml."""
    return f"sed -i '/- name: canary/,/image_tag:/ s/image_tag: .*/image_tag: {tag}/' config/environments/prod.yaml"


def _swap_primary_pools() -> str:
    """The primary preferring its fallback type: its instance_type and fallback_instance_types swapped."""
    return (
        "sed -i '/- name: primary/,/- name: canary/ { s/instance_type: ml.g5.xlarge/instance_type: ml.g6.xlarge/; "
        "s/fallback_instance_types: \\[ml.g6.xlarge\\]/fallback_instance_types: [ml.g5.xlarge]/ }' "
        "config/environments/prod.yaml"
    )


STEPS: tuple[Step, ...] = (
    # README "Two commands"
    Step("make synth", interrupt=6),
    Step(
        "make test", interrupt=40, interrupt_only=True, test_runner=True
    ),  # run whole by `make test-timing` (its figures)
    # The sandbox (README "Try it in the sandbox", docs/operations.md "Try it without AWS")
    Step(
        "make -s sandbox", exports=True, transcript="sandbox", covers=('eval "$(make -s sandbox)"', "make -s sandbox")
    ),
    Step("bin/ops --help"),
    Step("bin/ops status prod", transcript="status"),
    Step("bin/ops status prod --json"),
    Step(
        'eval "$(bin/ops --show-completion bash)" && complete -o default -F _ops_completion bin/ops',
        covers=('eval "$(bin/ops --show-completion bash)"', "complete -o default -F _ops_completion bin/ops"),
    ),
    Step("bin/ops smoke prod --variant canary", transcript="smoke"),
    Step(_sandbox("traffic prod --per-minute 2400"), transcript="first-shift"),
    Step("bin/ops shift prod --canary-weight 10", transcript="first-shift"),
    Step("bin/ops shift prod --canary-weight 100 --hold 30m --check-every 0", expect=2, transcript="refusals"),
    Step(
        "bin/ops shift prod --canary-weight 100 --step 25 --step 50 --step 75 --hold 30m --dry-run",
        transcript="dry-run",
    ),
    Step(_sandbox("traffic prod --per-minute 12000"), transcript="capacity-refusal"),
    Step("bin/ops shift prod --canary-weight 100", expect=4, transcript="capacity-refusal"),
    Step("make sandbox-reset", exports=True),
    # A release on the canary, ramped, promoted (docs/operations.md "A canary rollout", "After a promotion")
    Step("bin/ops release-tag prod v0.2.0", transcript="release"),
    Step("bin/ops release-tag prod v0.2.0", transcript="release"),
    Step("bin/ops release-tag prod v0.2.1 --source src-1a2b3c", expect=6, transcript="release"),
    Step('cp config/environments/prod.yaml "$TMPDIR/prod.yaml"', setup=True),  # the checked-in config, for later
    Step(_set_canary_image(CANARY_RELEASE), setup=True),
    Step("bin/ops deploy prod", transcript="canary-deploy", interrupt=60, ready=r"^synthesised|Synthesi|cdk"),
    Step("bin/ops verify prod", transcript="canary-deploy"),
    Step(  # its first minute served, its streams' metrics arrived, before the steps that judge them
        _sandbox(f"traffic prod --per-minute {RAMP_PER_MINUTE} --follow"),
        background=True,
        ready=r"^sandbox traffic, last minute",
        interrupt=120,
    ),  # fmt: skip
    Step("bin/ops status prod", transcript="ramp"),
    Step(
        "bin/ops shift prod --canary-weight 100 --step 25 --step 50 --step 75 --hold 10s --check-every 5s "
        "--raise-canary-capacity",
        transcript="ramp",
    ),
    Step("bin/ops verify prod --skip-weights", transcript="ramp"),
    Step("bin/ops promote prod", transcript="promote"),
    Step("bin/ops deploy prod", transcript="promote"),
    Step("bin/ops verify prod", expect=3, transcript="promote"),
    Step("bin/ops shift prod --to-config", transcript="promote"),
    Step("bin/ops verify prod", transcript="promote"),
    Step("bin/ops smoke prod"),
    Step(
        "bin/ops shift prod --canary-weight 100 --step 25 --step 50 --step 75 --hold 30m",
        interrupt=120,
        ready=r"✓ canary at 25%",
        interrupt_only=True,
        transcript="ctrl-c",
    ),  # fmt: skip
    Step(_sandbox(f"traffic prod --per-minute {RAMP_PER_MINUTE} --follow"), stops=True),
    # A failing canary, refused and rolled back; the primary sized for the traffic (docs/operations.md "Rolling back"),
    # in a sandbox started clean: the ramp's error-free minutes would otherwise dilute the canary's 5XX rate
    Step("make sandbox-reset", exports=True),
    Step(_sandbox(f"traffic prod --per-minute {RAMP_PER_MINUTE} --canary-5xx-percent 10"), transcript="rollback"),
    Step("bin/ops shift prod --canary-weight 50", expect=4, transcript="rollback"),
    Step("bin/ops rollback prod", transcript="rollback"),
    Step("bin/ops restore-scaling prod", transcript="rollback"),
    Step("bin/ops shift prod --to-config", expect=4, transcript="rollback"),  # not while its 5XX are in the window
    Step("bin/ops promote prod", transcript="nothing-to-promote"),
    # Provisioning time from what the sandbox's scaling recorded: a window's scale-in, a raise, one over the quotas
    Step(_sandbox("schedule prod tokyo-off-peak"), transcript="scaling-history"),  # 16 after the rollback: in to 10
    Step(_sandbox("schedule prod tokyo-evening-peak"), transcript="scaling-history"),
    Step(_sandbox("quota prod ml.g5.xlarge=30"), transcript="scaling-history"),
    Step(_sandbox("quota prod ml.g6.xlarge=30"), transcript="scaling-history"),
    Step(_sandbox("schedule prod tokyo-friday-release"), transcript="scaling-history"),
    Step("bin/ops scaling-history prod", transcript="scaling-history"),
    # A scaled variant's instance type changed: scaling moved aside, deployed, put back (docs/operations.md)
    Step(_swap_primary_pools(), setup=True),
    Step("bin/ops deploy prod", transcript="type-change"),
    Step("bin/ops verify prod --skip-weights", transcript="type-change"),  # the canary still at 0 % after the rollback
    Step('cp "$TMPDIR/prod.yaml" config/environments/prod.yaml', setup=True),  # the experiments undone: plans judge it
    # The endpoint's own traffic, from minutes the sandbox backfilled
    Step(_sandbox("traffic prod --backfill 2 --per-minute 2400"), transcript="traffic"),
    Step("bin/ops traffic prod --days 1 --out week.csv", transcript="traffic"),
    Step("make plan ENV=prod TRAFFIC=week.csv"),
    # README's and scaling-and-planning.md's: seven days of the sandbox's minutes
    Step("bin/ops traffic prod --out week.csv", timeout=300),
    Step("bin/ops traffic prod --days 7 --out prod-week.csv", timeout=300),
    Step("make plan ENV=prod TRAFFIC=prod-week.csv"),
    # Bedrock Custom Model Import against the sandbox's S3
    Step(
        "bin/ops bedrock-import s3://mangaassist-bedrock-import/llama3-domain-v1/ --validate-only",
        expect=3,
        transcript="bedrock",
    ),  # fmt: skip
    Step(
        "bin/ops bedrock-import s3://mangaassist-bedrock-import/llama3-domain-v1-bf16/ --validate-only",
        transcript="bedrock",
    ),
    # docs/capacity.md "In the sandbox"
    Step(
        "bin/loadtest prod --variant canary --allow-production --step-seconds 10 --warmup-seconds 10 "
        "--start-rpm 100 --max-minutes 2 --max-rpm 200",
        interrupt=60,
        ready=r"^step 1: offering",
        expect=(0, 3),  # docs/capacity.md: on a busy machine a step may end client-limited (exit 3, a lower bound)
    ),
    Step("bin/ops smoke prod --variant canary"),
    Step(
        "bin/loadtest prod --variant canary --allow-production --workload capture --step-seconds 10 "
        "--max-minutes 2 --max-rpm 200",
        expect=(0, 3),  # as the sweep above: client-limited on a busy machine
    ),
    Step("make sandbox-stop", transcript="stopped"),
    Step("bin/ops status prod", expect=2, transcript="stopped"),
    # The planner and the review (README "Plan capacity and cost", "Review a change", "CI pipelines")
    # the planner says when its inputs are checked and the work begins (workbench/planner/cli.py `_working`): Ctrl-C then
    Step("make plan ENV=prod", interrupt=60, ready=r"^planning prod: "),
    Step("bin/plan prod"),
    Step("make plan-diff ENV=prod BASE=main"),
    Step('make plan-diff ENV=prod BASE="$BASE_SHA"'),
    Step(  # at a fixed time: its dates are the transcript's, not the clock's
        ".venv/bin/python -m ops.pipeline.deploy_window prod --now 2026-11-27T16:50:00+09:00",
        expect=4,
        transcript="deploy-window",
        clock=False,
    ),  # fmt: skip
    Step(".venv/bin/python -m ops.pipeline.assumed_capacity prod", expect=4),
    Step(".venv/bin/python -m ops.pipeline.assumed_capacity staging"),
    Step('.venv/bin/python -m workbench.review.changed_environments "$BASE_SHA"'),
    # the review says when both synths run (workbench/review/cli.py `_synthesise`): Ctrl-C then
    Step("make review BASE=main", interrupt=60, ready=r"^synthesising main "),
    Step('make review BASE="$BASE_SHA"'),
    Step(".venv/bin/python -m workbench.review.pull_request_comment --gate prod=1"),
    Step("bin/plan prod --tune --write-config && bin/plan prod", interrupt=60, ready=r"^tuning prod: "),
)

# Printed commands the walk does not run, and why. Everything here needs what no sandbox stands in for.
_NEEDS_AWS = "needs an AWS account: the sandbox stands in for the APIs `bin/ops` calls, not for CloudFormation"
_STAGING = "staging's account: the walk's sandbox is prod's (the same commands run against it for prod)"
NOT_WALKED: dict[str, str] = {
    "make synth && make test": "both run as steps of their own (make synth; make test interrupted)",
    "make diff ENV=staging": _NEEDS_AWS,
    "make deploy ENV=staging": _NEEDS_AWS,
    "make deploy ENV=prod": _NEEDS_AWS + "; in the sandbox `bin/ops deploy prod` runs its stand-in (walked)",
    "make deploy ENV=staging APPROVAL=never": _NEEDS_AWS,
    "make deploy ENV=prod APPROVAL=never": _NEEDS_AWS,
    "make deploy ENV=prod VARIANTS_CHANGED=1": _NEEDS_AWS,
    # what `bin/ops deploy prod` prints it runs (in the sandbox its stand-in runs instead): in its transcripts
    "make deploy ENV=prod FORCE_PEAK=1": _NEEDS_AWS + "; `bin/ops deploy prod` prints it (walked)",
    "make deploy ENV=prod SCALING_RELEASED=primary FORCE_PEAK=1": _NEEDS_AWS
    + "; `bin/ops deploy prod` prints it (walked)",
    "make bootstrap ENV=staging": _NEEDS_AWS,
    "make deploy-ci-access ENV=staging": _NEEDS_AWS,
    "make deploy-ci-access ENV=prod": _NEEDS_AWS,
    "bin/ops preflight staging": _STAGING,
    "bin/ops verify staging": _STAGING,
    "bin/ops smoke staging": _STAGING,
    "bin/ops verify staging && bin/ops smoke staging": _STAGING,
    "bin/loadtest staging --variant canary --write-config": _STAGING + "; --write-config is refused in a sandbox",
}
