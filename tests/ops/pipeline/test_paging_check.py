"""`make deploy` of production refuses a placeholder paging destination before any AWS call (issue 39 item 7)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from config import loader as config_loader
from config.alerting import placeholders
from config.schema import AlarmDestination
from ops.pipeline import paging_check

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("destination", "named"),
    [
        (AlarmDestination(emails=["oncall-mangaassist@example.com"]), "oncall-mangaassist@example.com"),
        (AlarmDestination(emails=["a@pager.example.org"]), "a@pager.example.org"),
        (AlarmDestination(emails=["a@oncall.test"]), "a@oncall.test"),
        (
            AlarmDestination(https_endpoints=["https://events.pagerduty.com/integration/<key>/enqueue"]),
            "https://events.pagerduty.com/…",
        ),
        (AlarmDestination(topic_arn="arn:aws:sns:ap-northeast-1:111122223333:oncall"), "111122223333"),
    ],
)
def test_placeholders_are_named(destination, named) -> None:
    (found,) = placeholders(destination)
    assert named in found


def test_real_destinations_are_not_placeholders() -> None:
    real = AlarmDestination(
        emails=["oncall@mangaassist.co.jp", "sre@example-corp.com"],
        https_endpoints=["https://events.pagerduty.com/integration/0123abcd/enqueue"],
        topic_arn="arn:aws:sns:ap-northeast-1:210987654321:oncall",
    )
    assert placeholders(real) == []


def test_make_deploy_of_prod_with_the_shipped_pager_stops_before_aws() -> None:
    """The real Makefile: no AWS credentials at all, so a step that reached AWS would fail differently."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MANGAASSIST_"))}
    env |= {"AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_EC2_METADATA_DISABLED": "true"}
    done = subprocess.run(
        ["make", "-s", "deploy", "ENV=prod"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode != 0
    assert "refusing to deploy production environment prod" in done.stderr
    assert "alarms.paging.emails: oncall-mangaassist@example.com in config/environments/prod.yaml" in done.stderr
    assert "deploy window" not in done.stdout  # the next step never ran


def test_a_real_pager_passes_and_staging_only_warns(tmp_path, monkeypatch, capsys) -> None:
    copy = tmp_path / "environments"
    shutil.copytree(config_loader.ENVIRONMENTS_DIR, copy)
    prod = copy / "prod.yaml"
    prod.write_text(prod.read_text().replace("oncall-mangaassist@example.com", "oncall@mangaassist.co.jp"))
    monkeypatch.setattr(config_loader, "ENVIRONMENTS_DIR", copy)
    monkeypatch.delenv("MANGAASSIST_RUNTIME_HOOK", raising=False)

    assert paging_check.main(["prod"]) == 0
    assert paging_check.main(["staging"]) == 0
    assert "warning: staging pages a placeholder that reaches nobody" in capsys.readouterr().err
