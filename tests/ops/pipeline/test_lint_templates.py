"""`make synth`'s cfn-lint step (ops/pipeline/lint_templates.py) with the real cfn-lint: a template is skipped only
when cfn-lint already passed those exact bytes; any change is linted again and fails as it should."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ops.pipeline import lint_templates

CLEAN = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}
BROKEN = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic", "Properties": {"NoSuchProperty": "x"}}}}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the pass records live under ./cdk.out, as in the repository
    return tmp_path


def write(path: Path, template: dict) -> Path:
    path.write_text(json.dumps(template, indent=1))
    return path


def test_a_pass_is_reused_only_for_the_same_bytes(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = write(workdir / "a.template.json", CLEAN), write(workdir / "b.template.json", CLEAN)
    assert lint_templates.main([str(first)]) == 0
    assert capsys.readouterr().out == ""  # linted, nothing to say

    assert lint_templates.main([str(first), str(second)]) == 0  # same bytes: the pass is the key's
    assert "2 template(s) unchanged since cfn-lint" in capsys.readouterr().out

    write(first, BROKEN)
    status = lint_templates.main([str(first), str(second)])
    out = capsys.readouterr().out
    assert status & 2  # cfn-lint's error bit
    assert "E3002" in out and "NoSuchProperty" in out and "1 template(s) unchanged" in out


def test_a_failed_template_is_never_recorded(workdir: Path) -> None:
    broken = write(workdir / "broken.template.json", BROKEN)
    assert lint_templates.main([str(broken)]) & 2
    assert lint_templates.main([str(broken)]) & 2  # linted again, fails again
    assert not list((workdir / "cdk.out" / "cfn-lint-passed").glob("*"))
