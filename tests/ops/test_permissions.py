"""Which policy each command needs (ops/operations/permissions.py): the access-denied line names it (through the
CLI: test_errors_and_help.py), and docs/reference/permissions.md's table agrees.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from botocore.exceptions import ClientError

from ops.operations.errors import ExitCode, OpsError, explain_for_command
from ops.operations.permissions import COMMAND_POLICIES, policies_for

ROOT = Path(__file__).resolve().parents[2]


def denied(operation: str) -> ClientError:
    return ClientError({"Error": {"Code": "AccessDeniedException", "Message": "not authorized"}}, operation)


def test_an_access_denial_names_the_policies_the_command_needs() -> None:
    shift = SimpleNamespace(info_name="shift", params={"env": "prod"})
    problem = explain_for_command(denied("UpdateEndpointWeightsAndCapacities"), shift)
    assert problem.exit_code == ExitCode.CREDENTIALS
    assert str(problem) == (
        "access denied for UpdateEndpointWeightsAndCapacities: the current role lacks that permission "
        '(not authorized); `bin/ops shift` needs MangaAssist-prod-Operator (docs/reference/permissions.md, "Permissions")'
    )
    deploy = SimpleNamespace(info_name="deploy", params={"env": "staging"})
    assert "needs MangaAssist-staging-Operator and MangaAssist-staging-Deployer" in str(
        explain_for_command(denied("DeregisterScalableTarget"), deploy)
    )


def test_options_that_need_more_add_their_policy() -> None:
    capture = SimpleNamespace(info_name="loadtest", params={"env": "prod", "workload": "capture"})
    assert "`bin/loadtest` needs MangaAssist-prod-Operator and MangaAssist-prod-CaptureReader" in str(
        explain_for_command(denied("GetObject"), capture)
    )
    assert policies_for("promote", {"deploy_now": True}) == ("Operator", "Deployer")
    assert policies_for("loadtest", {"workload": "default"}) == ("Operator",)


def test_a_denial_wrapped_by_deploy_is_still_named_and_other_errors_are_left_alone() -> None:
    deploy = SimpleNamespace(info_name="deploy", params={"env": "prod"})
    wrapped = OpsError("access denied for RegisterScalableTarget: …; scaling of primary was restored as it was")
    assert "`bin/ops deploy` needs MangaAssist-prod-Operator and MangaAssist-prod-Deployer" in str(
        explain_for_command(wrapped, deploy)
    )
    throttled = ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "DescribeEndpoint")
    assert "needs" not in str(explain_for_command(throttled, deploy))
    assert "needs" not in str(explain_for_command(denied("DescribeEndpoint"), None))  # outside a command


def test_the_docs_table_gives_each_command_the_policies_of_the_map() -> None:
    text = (ROOT / "docs" / "reference" / "permissions.md").read_text()
    section = text.split("## Permissions: the operator policy", 1)[1].split("\n## ", 1)[0]
    seen = set()
    for commands, needed in re.findall(r"^\| (`[^|]+) \| ([^|]+) \|$", section, flags=re.MULTILINE):
        documented = set(re.findall(r"Operator|Deployer|CaptureReader", needed))
        for shown in re.findall(r"`([^`]+)`", commands):
            command = shown.split()[0].removeprefix("bin/")  # `bin/loadtest ...`: a program of its own
            if command == "make" or "--url" in shown or command not in COMMAND_POLICIES:
                continue
            options = {"deploy_now": "--deploy" in shown, "workload": "capture" if "capture" in shown else "default"}
            assert set(policies_for(command, options)) == documented, shown
            seen.add(command)
    assert seen == set(COMMAND_POLICIES), "commands the docs' table leaves out"

