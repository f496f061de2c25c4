"""Which of the environment's policies each `bin/ops` command (and `bin/loadtest`) needs (docs/reference/permissions.md).

Read by the access-denied hint (errors.py) and by the policy proof (tests/operator_policy_check.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from config.access import CAPTURE_READER, DEPLOYER, OPERATOR, policy_name

LOAD_TEST = "loadtest"  # bin/loadtest's command name (workbench/loadtest/cli.py): a program of its own
# Commands that take no environment are absent: `bedrock-import` works on an S3 artifact and a Bedrock
# role of its own (docs/reference/commands.md, "Bedrock Custom Model Import").
COMMAND_POLICIES: dict[str, tuple[str, ...]] = {
    "status": (OPERATOR,),
    "shift": (OPERATOR,),
    "rollback": (OPERATOR,),
    "promote": (OPERATOR,),  # the config edit; `--deploy` adds the deploy's (below)
    "deploy": (OPERATOR, DEPLOYER),
    # The Deployer's reads (quotas, model data, tags) and the Operator's (image stack); before the first
    # deploy neither policy exists: whoever bootstraps runs it.
    "preflight": (OPERATOR, DEPLOYER),  # moves scaling aside and back (Operator) around `make deploy` (Deployer)
    "restore-scaling": (OPERATOR,),
    "verify": (OPERATOR,),
    "smoke": (OPERATOR,),
    "release-tag": (OPERATOR,),
    "scaling-history": (OPERATOR,),
    "traffic": (OPERATOR,),  # cloudwatch:GetMetricData only
    LOAD_TEST: (OPERATOR,),  # `--workload capture` adds the capture reader (below)
}


def policies_for(command: str, params: Mapping[str, Any]) -> tuple[str, ...]:
    """The policies one invocation needs, its options considered; () for a command outside the map."""
    policies = COMMAND_POLICIES.get(command, ())
    if command == "promote" and params.get("deploy_now"):
        policies = (*policies, DEPLOYER)
    if command == LOAD_TEST and params.get("workload") == "capture":
        policies = (*policies, CAPTURE_READER)  # replays users' captured prompts: break-glass only
    return policies


def needed_policies_hint(command: str, params: Mapping[str, Any]) -> str:
    """ "`bin/ops deploy` needs MangaAssist-prod-Operator and MangaAssist-prod-Deployer", or "" when unknown."""
    env = params.get("env")
    policies = policies_for(command, params)
    if not env or not policies:
        return ""
    names = " and ".join(policy_name(env, p) for p in policies)
    typed = "bin/loadtest" if command == LOAD_TEST else f"bin/ops {command}"
    return f'`{typed}` needs {names} (docs/reference/permissions.md, "Permissions")'
