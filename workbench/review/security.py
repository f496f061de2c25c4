"""What in a change needs a security reviewer, whatever else the review says (issue 38): in two templates
of one stack, a role added, a role without a permissions boundary, a boundary changed, a policy attached
(to a role, user or group), a trust policy changed, a key policy changed; in the working tree, a change to
what `make bootstrap` installs (the execution policy and the stack-role boundary live in Python, not in
any template). Asset hashes are ignored, as in workbench/review/iam.py: a new `container/` zip changes no trust.

Each finding is one line starting with "needs security review:", so a reviewer (and a branch rule on the
pull request comment) can look for that phrase.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from workbench.review.iam import LOGICAL_ID_HASH, _text, _without_asset_hashes

Template = dict[str, Any]
FLAG = "needs security review"
REFERENCE = re.compile(r"\$\{(\w+?)[0-9A-F]{8}\}")  # a Ref to a resource, as workbench/review/iam.py's _text writes it
ATTACHING = {  # the property of each type that attaches a policy to principals
    "AWS::IAM::ManagedPolicy": ("Roles", "Users", "Groups"),
    "AWS::IAM::Policy": ("Roles", "Users", "Groups"),
    "AWS::IAM::Role": ("ManagedPolicyArns",),
    "AWS::IAM::User": ("ManagedPolicyArns",),
    "AWS::IAM::Group": ("ManagedPolicyArns",),
}
# Where the policies `make bootstrap` installs are written (ops/pipeline/execution_policy.py).
GUARD_SOURCES = (
    "constructs/execution_policy.py",
    "constructs/execution_policy_iam.py",
    "constructs/stack_role_boundary.py",
    "config/access.py",
    "ops/pipeline/execution_policy.py",
)


def security_findings(stack: str, base: Template | None, head: Template | None) -> list[str]:
    """The stack's findings, BASE to HEAD (a stack added: every role and attachment in it is new)."""
    before, after = _resources(base), _resources(head)
    found: list[str] = []
    for lid, resource in after.items():
        kind, props = resource.get("Type"), resource.get("Properties", {})
        old = before.get(lid, {}).get("Properties", {}) if before.get(lid, {}).get("Type") == kind else None
        name = LOGICAL_ID_HASH.sub("", lid)
        if kind == "AWS::IAM::Role":
            found += _role(name, props, old)
        if kind == "AWS::KMS::Key" and old is not None and old.get("KeyPolicy") != props.get("KeyPolicy"):
            found.append(f"key policy of {name} changed")
        found += _attachments(name, kind, props, old)
    return [f"{FLAG}: {finding} ({stack})" for finding in found]


def _attachments(name: str, kind: str, props: dict, old: dict | None) -> list[str]:
    """A policy attached anew: a managed policy's `Roles`, or a principal's `ManagedPolicyArns`."""
    found = []
    for key in ATTACHING.get(kind, ()):
        added = {_text(v) for v in props.get(key, [])} - {_text(v) for v in (old or {}).get(key, [])}
        for target in sorted(REFERENCE.sub(r"\1", t) for t in added):  # ${Role1A2B3C4D} -> Role
            found.append(
                f"{target} attached to {name}" if key == "ManagedPolicyArns" else f"{name} attached to {target}"
            )
    return found


def _role(name: str, props: dict, old: dict | None) -> list[str]:
    found = []
    if old is None:
        found.append(f"new role {name}")
    if not props.get("PermissionsBoundary"):
        found.append(f"role {name} has no permissions boundary")
    elif old is not None and old.get("PermissionsBoundary") != props.get("PermissionsBoundary"):
        found.append(f"permissions boundary of {name} changed to {_text(props['PermissionsBoundary'])}")
    if old is not None and old.get("AssumeRolePolicyDocument") != props.get("AssumeRolePolicyDocument"):
        found.append(f"trust policy of {name} changed")
    return found


def boundary_policies_changed(stack: str, base: Template | None, head: Template | None) -> list[str]:
    """A managed policy used as a role's boundary in HEAD whose document changed."""
    before, after = _resources(base), _resources(head)
    boundaries = {
        r["Properties"]["PermissionsBoundary"]["Ref"]
        for r in after.values()
        if r.get("Type") == "AWS::IAM::Role" and isinstance(r.get("Properties", {}).get("PermissionsBoundary"), dict)
        and "Ref" in r["Properties"]["PermissionsBoundary"]
    }  # fmt: skip
    return [
        f"{FLAG}: permissions boundary {LOGICAL_ID_HASH.sub('', lid)} changed ({stack})"
        for lid in sorted(boundaries)
        if lid in before and before[lid].get("Properties") != after.get(lid, {}).get("Properties")
    ]


def guard_sources_changed(root: Path, commit: str) -> list[str]:
    """The execution policy or the stack-role boundary edited since BASE (working tree included)."""
    changed = subprocess.run(
        ["git", "diff", "--name-only", commit, "--", *GUARD_SOURCES], cwd=root, capture_output=True, text=True
    ).stdout.split()
    return [
        f"{FLAG}: {path} changed: what `make bootstrap` installs (the CloudFormation execution policy and the "
        "stack roles' permissions boundary); run it again before the next deploy"
        for path in changed
    ]


def _resources(template: Template | None) -> dict[str, dict]:
    return _without_asset_hashes((template or {}).get("Resources", {}))
