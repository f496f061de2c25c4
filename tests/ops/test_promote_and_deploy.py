"""`promote` edits the environment's YAML; `deploy` runs the deploy, moving scaling aside when needed."""

from __future__ import annotations

import signal
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ops.operations.interrupts import Interrupted
from ops.operations.promotion import Promotion, write_promotion
from tests.ops_world import edit_environment


def set_variant(directory: Path, variant: str, **values: str) -> None:
    def edit(document):
        entry = next(v for v in document["variants"] if v["name"] == variant)
        entry.update(values)

    edit_environment(directory, "prod", edit)


@pytest.fixture(autouse=True)
def accepted_assumed_capacity(monkeypatch):
    """The moto world's fallback type is never measured: deploys here go through on the override."""
    monkeypatch.setenv("ACCEPT_ASSUMED_CAPACITY", "tests: the moto world's fallback type is not measured")


@pytest.fixture
def canary_on_v2(environments, worlds):
    """prod whose canary was deployed with v0.2.0 and has baked (served enough requests to judge)."""
    set_variant(environments, "canary", image_tag="v0.2.0")
    world = worlds("prod")
    world.deploy()
    world.traffic("canary", invocations=1000, errors=1)
    world.traffic("primary", invocations=19000, errors=12)
    return world


@pytest.mark.parametrize(
    ("before_deploy", "after_deploy", "says"),
    [
        ("v0.2.0", None, "promotion refused: not enough evidence: the canary served 0 invocations in the last 5min"),
        ("v0.2.0", "alarm", "promotion refused: alarm mangaassist-prod-canary-5xx is in ALARM"),
        (None, "v0.2.0", "the live canary runs v0.1.0 on ml.g4dn.xlarge, but the config names v0.2.0"),
    ],
    ids=["no-evidence", "alarm", "never-ran-it"],
)
def test_promotion_refused_before_the_config_is_written(environments, worlds, cli, before_deploy, after_deploy, says):
    if before_deploy:
        set_variant(environments, "canary", image_tag=before_deploy)
    world = worlds("prod")
    world.deploy()
    if after_deploy == "alarm":  # the canary baked (served enough to judge), but an alarm fires
        world.traffic("canary", invocations=1000, errors=1)
        world.traffic("primary", invocations=19000, errors=12)
        world.alarm("mangaassist-prod-canary-5xx", "canary")
    elif after_deploy:  # the config names an image the live canary never ran
        set_variant(environments, "canary", image_tag=after_deploy)
    before = (environments / "prod.yaml").read_text()

    result = cli("promote", "prod")

    assert result.exit_code == 4
    assert says in result.stderr
    assert (environments / "prod.yaml").read_text() == before


class RecordingDeployer:
    def __init__(self, world, status: int = 0, during=None):
        self.world, self.status, self.during = world, status, during
        self.calls: list[str] = []
        self.released: list[str] | None = None
        self.scaling_seen: dict | None = None

    def __call__(self, env: str, released: list[str]) -> int:
        self.calls.append(env)
        self.released = released
        self.scaling_seen = self.world.scaling()
        if self.during:
            self.during()
        return self.status


def test_a_canary_following_the_source_is_not_promoted(environments, worlds, cli):
    set_variant(environments, "canary", image_tag="source")
    worlds("prod").deploy(images={"canary": "src-0123456789ab"})
    before = (environments / "prod.yaml").read_text()

    result = cli("promote", "prod")

    assert result.exit_code == 2
    assert "canary names image_tag: source, which follows container/" in result.stderr
    assert (environments / "prod.yaml").read_text() == before


def test_promote_writes_the_canary_image_into_the_primary_keeping_comments_and_layout(canary_on_v2, environments, cli):
    path = environments / "prod.yaml"
    before = path.read_text()

    result = cli("promote", "prod")

    assert result.exit_code == 0, result.output
    after = path.read_text()
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]
    assert changed == [("    image_tag: v0.1.0", "    image_tag: v0.2.0")]
    assert after.index("image_tag: v0.2.0") < after.index("name: canary")  # the primary's entry changed
    assert "# Production:" in after
    assert "primary.image_tag: v0.1.0 → v0.2.0" in result.output
    assert "+    image_tag: v0.2.0" in result.output  # the diff is shown
    assert "next: commit config/environments/prod.yaml, then `bin/ops deploy prod`" in result.output


def test_nothing_to_promote_when_primary_already_runs_the_canary_image(prod, cli):
    result = cli("promote", "prod")

    assert result.exit_code == 0
    assert "nothing to promote" in result.output


def test_an_invalid_promoted_config_is_never_written(environments):
    path = environments / "prod.yaml"
    before = path.read_text()
    broken = Promotion("prod", path, {"image_tag": ("v0.1.0", "latest")}, before, before.replace("v0.1.0", "latest"))

    with pytest.raises(Exception, match="the promoted config would be invalid, nothing written"):
        write_promotion(broken)

    assert path.read_text() == before
    assert sorted(p.name for p in environments.iterdir()) == ["dev.yaml", "prod.yaml", "staging.yaml"]


def test_promote_and_deploy_without_instance_type_change_leaves_scaling_alone(canary_on_v2, cli):
    canary_on_v2.register_scaling("primary")
    scaling = canary_on_v2.scaling()
    deployer = RecordingDeployer(canary_on_v2)
    cli.runtime.deployer = deployer

    result = cli("promote", "prod", "--deploy")

    assert result.exit_code == 0, result.output
    assert deployer.calls == ["prod"]
    assert deployer.scaling_seen == scaling  # registered throughout
    assert "no variant registered with autoscaling changes type or goes away" in result.output
    assert "deployed; next: `bin/ops verify prod`" in result.output


@pytest.fixture
def primary_changes_type(environments, prod):
    """Live primary on ml.g4dn.xlarge with scaling registered; the config moves it to ml.g5.xlarge."""
    prod.register_scaling("primary")
    set_variant(environments, "primary", instance_type="ml.g5.xlarge")
    return prod


def test_instance_type_change_deregisters_deploys_and_restores_the_same_scaling(primary_changes_type, cli, tmp_path):
    world = primary_changes_type
    before = world.scaling()
    deployer = RecordingDeployer(world)
    cli.runtime.deployer = deployer

    result = cli("deploy", "prod")

    assert result.exit_code == 0, result.output
    assert deployer.scaling_seen == {}  # SageMaker would refuse the update otherwise
    assert deployer.released == ["primary"]  # synth lets exactly this variant change type
    assert "$ make deploy ENV=prod SCALING_RELEASED=primary" in result.output
    assert world.scaling() == before
    assert "primary: instance types ml.g4dn.xlarge, ml.g6.xlarge → ml.g5.xlarge, ml.g6.xlarge" in result.output
    assert "deregistered scaling of primary: min 2, max 8, 1 policies, 1 scheduled actions" in result.output
    lines = [line.strip() for line in result.output.splitlines()]
    restored = next(i for i, line in enumerate(lines) if line.startswith("✓ restored scaling of primary"))
    assert restored < len(lines) - 1 and lines[-1] == "✓ deployed; next: `bin/ops verify prod`"  # only once restored
    snapshots = list((tmp_path / "state").glob("scaling-mangaassist-llm-prod-*.json"))
    assert len(snapshots) == 1


@pytest.mark.parametrize(
    ("stack_changed", "says"),
    [  # no `cdk bootstrap`, a synth refusal, an asset upload: no stack changed
        (False, "failed with status 2 before CloudFormation changed any stack (nothing was deployed): see its output "
                "above, e.g. synth refused the config, an asset did not upload, or the account lacks `make bootstrap"),
        (True, "failed with status 2 in CloudFormation (MangaAssist-prod-Serving is CREATE_COMPLETE): see the stack events"),
    ],
    ids=["before-cloudformation", "in-cloudformation"],
)  # fmt: skip
def test_a_failed_deploy_names_what_failed_and_still_restores_scaling(primary_changes_type, cli, stack_changed, says):
    world = primary_changes_type
    before = world.scaling()
    changed = (lambda: world.stack(world.config_names[-1])) if stack_changed else None
    cli.runtime.deployer = RecordingDeployer(world, status=2, during=changed)

    result = cli("deploy", "prod")

    assert result.exit_code == 8
    assert world.scaling() == before
    assert result.stderr.startswith(f"error: `make deploy ENV=prod` {says}")
    assert result.stderr.endswith("; scaling of primary was restored as it was\n")


@pytest.mark.parametrize(
    ("interrupt", "code"),
    [(KeyboardInterrupt(), 130), (Interrupted(signal.SIGTERM), 143), (Interrupted(signal.SIGHUP), 129)],
    ids=["ctrl-c", "SIGTERM", "SIGHUP"],
)
def test_an_interrupted_deploy_still_restores_scaling(primary_changes_type, cli, interrupt, code):
    """Ctrl-C, or SIGTERM and SIGHUP as `python -m ops` raises them (ops/operations/interrupts.py), mid-deploy."""
    world = primary_changes_type
    before = world.scaling()

    def interrupted():
        raise interrupt

    cli.runtime.deployer = RecordingDeployer(world, during=interrupted)

    result = cli("deploy", "prod")

    assert result.exit_code == code
    assert world.scaling() == before
    assert "interrupted; scaling of primary was restored as it was" in result.stderr


def test_scaling_that_cannot_be_restored_is_loud_and_the_snapshot_restores_it_later(primary_changes_type, cli):
    """A before-call hook refuses the re-registration, as an expired session or a missing permission would."""
    world = primary_changes_type
    before = world.scaling()
    autoscaling = world.client("application-autoscaling")

    def refuse(**kwargs):
        raise world.client("sts").exceptions.ClientError(
            {"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}}, "RegisterScalableTarget"
        )

    autoscaling.meta.events.register("before-call.application-autoscaling.RegisterScalableTarget", refuse)
    cli.runtime.client_overrides["application-autoscaling"] = autoscaling
    cli.runtime.deployer = RecordingDeployer(world)

    result = cli("deploy", "prod")

    assert result.exit_code == 9
    assert "scaling NOT fully restored on mangaassist-llm-prod: primary target (access denied" in result.stderr
    snapshot = result.stderr.split("the snapshot is in ")[1].split(" - ")[0]
    assert "`bin/ops restore-scaling ENV " in result.stderr

    autoscaling.meta.events.unregister("before-call.application-autoscaling.RegisterScalableTarget", refuse)
    restored = cli("restore-scaling", "prod", snapshot)

    assert restored.exit_code == 0, restored.output
    assert world.scaling() == before


def test_restore_scaling_refuses_another_endpoints_snapshot(prod, cli, tmp_path):
    snapshot = tmp_path / "other.json"
    snapshot.write_text('{"endpoint": "mangaassist-llm-staging", "variants": []}')

    result = cli("restore-scaling", "prod", str(snapshot))

    assert result.exit_code == 2
    assert "is for endpoint mangaassist-llm-staging, not mangaassist-llm-prod" in result.stderr


def test_a_deploy_overlapping_a_peak_window_is_refused_before_scaling_is_touched_unless_during_peak(
    primary_changes_type, cli
):
    world = primary_changes_type
    before = world.scaling()
    cli.runtime.now = lambda: datetime(2026, 11, 23, 8, 20, tzinfo=UTC)  # Mon 17:20 JST, magazine day at 17:30

    result = cli("deploy", "prod")

    assert result.exit_code == 4
    assert "Traceback" not in result.stderr
    assert "error: refusing to deploy prod at Mon 2026-11-23 17:20 JST (08:20 UTC)" in result.stderr
    assert "next safe window opens Mon 2026-11-23 21:00 JST (12:00 UTC)" in result.stderr
    assert "bin/ops deploy prod --during-peak" in result.stderr
    assert world.scaling() == before  # the default deployer fails the test if called
    cli.runtime.deployer = deployer = RecordingDeployer(world)
    anyway = cli("deploy", "prod", "--during-peak")
    assert anyway.exit_code == 0 and deployer.calls == ["prod"], anyway.output
    assert "--during-peak: deploying prod at Mon 2026-11-23 17:20 JST" in anyway.output


def test_promote_and_deploy_during_a_peak_is_refused_before_the_config_is_written(canary_on_v2, cli, environments):
    before = (environments / "prod.yaml").read_text()
    cli.runtime.now = lambda: datetime(2026, 11, 23, 8, 40, tzinfo=UTC)  # Mon 17:40 JST, inside a magazine day

    result = cli("promote", "prod", "--deploy")

    assert result.exit_code == 4
    assert "reaches the pre-scale of the peak window primary 'tokyo-magazine-days'" in result.stderr
    assert (environments / "prod.yaml").read_text() == before  # the default deployer fails the test if called


def test_the_first_switch_to_instance_pools_moves_scaling_aside(environments, worlds, cli):
    """Issue 39 item 3: the same preferred type plus a fallback pool changes the ordered list of types."""
    edit_environment(environments, "prod", lambda d: [v.update(fallback_instance_types=[]) for v in d["variants"]])
    world = worlds("prod")
    world.deploy()  # InstanceType only
    world.register_scaling("primary")
    edit_environment(
        environments, "prod", lambda d: [v.update(fallback_instance_types=["ml.g6.xlarge"]) for v in d["variants"]]
    )
    deployer = RecordingDeployer(world)
    cli.runtime.deployer = deployer

    result = cli("deploy", "prod")

    assert result.exit_code == 0, result.output
    assert deployer.released == ["primary"]
    assert "primary: instance types ml.g4dn.xlarge → ml.g4dn.xlarge, ml.g6.xlarge" in result.output
