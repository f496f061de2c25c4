"""`make review` says "needs security review" for a new role, a role without a boundary, a boundary, trust
or key policy changed, a policy attached, and an edit of what `make bootstrap` installs (workbench/review/security.py,
issue 38), on prod's real synthesised templates edited the way a change would edit them."""

from __future__ import annotations

import copy
import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.shared_synthesis import cloud_assembly
from workbench.review.consequences import deploy_consequences
from workbench.review.iam import ASSET_HASH
from workbench.review.security import FLAG, GUARD_SOURCES, guard_sources_changed, security_findings
from workbench.review.stack_diff import StackDiff

SERVING, CI = "MangaAssist-prod-Serving", "MangaAssist-prod-CiAccess"
ADMIN = "arn:aws:iam::aws:policy/AdministratorAccess"


@pytest.fixture(scope="module")
def templates() -> dict[str, dict]:
    """prod's stacks, the CI access stack included, from the run's shared synthesis (tests/shared_synthesis.py)."""
    assembly = cloud_assembly("prod")
    return {
        path.name.removesuffix(".template.json"): json.loads(path.read_text())
        for path in assembly.glob("*.template.json")
    }


def the(template: dict, prefix: str) -> dict:
    (resource,) = [r for lid, r in template["Resources"].items() if re.fullmatch(prefix + "[0-9A-F]{8}", lid)]
    return resource["Properties"]


def findings(base: dict, head: dict, stack: str = SERVING) -> list[str]:
    return security_findings(stack, base, head)


def test_an_unchanged_stack_and_a_new_asset_hash_need_nothing(templates) -> None:
    for name, base in templates.items():
        assert findings(base, copy.deepcopy(base), name) == []
        assert findings(base, json.loads(ASSET_HASH.sub("0" * 63 + "1", json.dumps(base))), name) == []


def test_the_issue_38_attack_is_flagged(templates) -> None:
    """A commit adding MangaAssist-prod-x with AdministratorAccess, trusted by the deploy role's subject."""
    base = templates[SERVING]
    head = copy.deepcopy(base)
    head["Resources"]["X"] = {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "RoleName": "MangaAssist-prod-x",
            "AssumeRolePolicyDocument": the(templates[CI], "GitHubDeployRole")["AssumeRolePolicyDocument"],
            "ManagedPolicyArns": [ADMIN],
        },
    }
    assert findings(base, head) == [
        f"{FLAG}: new role X ({SERVING})",
        f"{FLAG}: role X has no permissions boundary ({SERVING})",
        f"{FLAG}: {ADMIN} attached to X ({SERVING})",
    ]
    diff = StackDiff(SERVING, security=findings(base, head))
    assert f"{FLAG}: new role X ({SERVING})" in deploy_consequences("prod", base, head, [diff], None)


def test_a_boundary_trust_or_key_policy_change_is_flagged(templates) -> None:
    base = templates[SERVING]
    head = copy.deepcopy(base)
    the(head, "ModelsExecutionRole")["PermissionsBoundary"] = ADMIN
    the(head, "CapacityWatchRole")["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] = {"AWS": "*"}
    the(head, "DataCaptureKey")["KeyPolicy"]["Statement"].append(
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::222222222222:root"}, "Action": "kms:*", "Resource": "*"}
    )
    assert findings(base, head) == [
        f"{FLAG}: permissions boundary of ModelsExecutionRole changed to {ADMIN} ({SERVING})",
        f"{FLAG}: key policy of DataCaptureKey changed ({SERVING})",
        f"{FLAG}: trust policy of CapacityWatchRole changed ({SERVING})",
    ]


def test_a_boundary_removed_and_a_policy_attached_to_a_role_are_flagged(templates) -> None:
    base = templates[SERVING]
    head = copy.deepcopy(base)
    del the(head, "ModelsExecutionRole")["PermissionsBoundary"]
    role = next(k for k in head["Resources"] if re.fullmatch("ModelsExecutionRole[0-9A-F]{8}", k))
    # (the serving stack has no managed policy since issue 51: the commit adds one)
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    head["Resources"]["ExtraPolicy1A2B3C4D"] = {
        "Type": "AWS::IAM::ManagedPolicy",
        "Properties": {"PolicyDocument": policy, "Roles": [{"Ref": role}]},
    }
    found = findings(base, head)
    assert f"{FLAG}: role ModelsExecutionRole has no permissions boundary ({SERVING})" in found
    assert f"{FLAG}: ExtraPolicy attached to ModelsExecutionRole ({SERVING})" in found


def test_the_pipelines_boundary_document_changed_is_flagged(templates) -> None:
    from workbench.review.security import boundary_policies_changed

    base = templates[CI]
    head = copy.deepcopy(base)
    the(head, "GitHubDeployBoundary")["PolicyDocument"]["Statement"].append(
        {"Effect": "Allow", "Action": "*", "Resource": "*"}
    )
    assert boundary_policies_changed(CI, base, head) == [
        f"{FLAG}: permissions boundary GitHubDeployBoundary changed ({CI})"
    ]


def test_an_edit_of_what_make_bootstrap_installs_is_flagged(tmp_path: Path) -> None:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    for path in (*GUARD_SOURCES, "README.md"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    commit = git("rev-parse", "HEAD").strip()
    (tmp_path / "README.md").write_text("y\n")
    assert guard_sources_changed(tmp_path, commit) == []
    (tmp_path / "constructs/stack_role_boundary.py").write_text("y\n")
    (found,) = guard_sources_changed(tmp_path, commit)
    assert found.startswith(f"{FLAG}: constructs/stack_role_boundary.py changed")
