"""The runtime hook (ops/operations/runtime_hook.py): AWS's answers unset, only its overrides set, one line and
exit 2 when the variable names no hook.
"""

from __future__ import annotations

import pytest

from ops.commands.common import Runtime
from ops.operations.deploy import make_deploy
from ops.operations.runtime_hook import AWS, VARIABLE, RuntimeHook, runtime_hook
from ops.pipeline import deploy_window, paging_check

HOOK_MODULE = """
from ops.operations.runtime_hook import RuntimeHook


class OneChange(RuntimeHook):
    def evidence_hint(self, env_name, problems, needed):
        return f" (send {needed} requests to {env_name} first)"


HOOK = OneChange()
"""


def test_without_a_hook_every_answer_is_aws_s(monkeypatch) -> None:
    monkeypatch.delenv(VARIABLE, raising=False)
    hook = runtime_hook()
    assert hook is AWS and type(hook) is RuntimeHook
    hook.before_session()  # nothing to refuse
    assert Runtime().deployer is make_deploy
    assert hook.deploy_command("prod") == "make deploy ENV=prod"
    assert hook.image_stack_missing("prod").startswith("deploy it with `make deploy-image ENV=prod`")
    skipped = (hook.peak_windows_skipped, hook.assumed_capacity_allowed, hook.paging_skipped)
    assert [skip("prod") for skip in skipped] == [None, None, None]
    assert hook.evidence_hint("prod", ["not enough evidence: 3 canary invocations"], 100) == ""
    assert hook.bedrock_import_refused() is None and hook.slow_metrics_hint() == ""


def test_a_hook_changes_what_it_overrides_and_nothing_else(monkeypatch, tmp_path) -> None:
    (tmp_path / "one_change_hook.py").write_text(HOOK_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(VARIABLE, "one_change_hook")
    hook = runtime_hook()
    assert hook.evidence_hint("prod", [], 100) == " (send 100 requests to prod first)"
    assert hook.deploy_command("prod") == "make deploy ENV=prod" and hook.peak_windows_skipped("prod") is None
    assert Runtime().deployer is make_deploy


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("no_such.hook_module", "MANGAASSIST_RUNTIME_HOOK=no_such.hook_module: cannot import it (No module named"),
        ("json", "MANGAASSIST_RUNTIME_HOOK=json: its HOOK is None; it must be a module importable from the repository"),
    ],
)
def test_a_variable_naming_no_hook_is_one_line_and_exit_2(prod, cli, monkeypatch, capsys, value, says) -> None:
    monkeypatch.setenv(VARIABLE, value)
    result = cli("status", "prod")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {says}") and len(result.stderr.splitlines()) == 1
    assert deploy_window.main(["prod"]) == paging_check.main(["prod"]) == 2
    assert capsys.readouterr().err.splitlines() == [result.stderr.strip()] * 2
