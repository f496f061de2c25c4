"""IAM in two templates, grant by grant: what a change adds, asset hashes ignored.

`cdk diff --fail-on broadening` counts every statement added or changed as broadening, so a new
asset zip (its 64-hex hash inside an S3 object ARN) reads as "IAM broadened" on every `container/`
change. Here every identity policy (AWS::IAM::Policy and ManagedPolicy, a role's, user's or group's
inline `Policies`, a role's `ManagedPolicyArns`) and every trust policy (a role's
`AssumeRolePolicyDocument`) is split into single grants (holder, effect, one action, one resource or
principal, condition), each 64-hex asset hash is replaced by one placeholder, and only the Allow
grants that HEAD has and BASE has not count. An added grant **broadens** when it allows
`sts:AssumeRole` (or AssumeRoleWithSAML/WithWebIdentity) or `iam:PassRole`, also through a wildcard
(`sts:*`, `iam:Pass*`, `*`), or when its resource is `*`; `NotAction`, `NotResource` and an attached
managed policy (its statements are not in the template) broaden too. Any other added Allow grant is
listed as a permission added. Resource policies (bucket, key, topic, repository) are left to the
CDK CLI's own table in the folded diff.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any

Template = dict[str, Any]
ASSET_HASH = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")  # CDK's asset hashes: sha256, lower-case hex
LOGICAL_ID_HASH = re.compile(r"[0-9A-F]{8}$")
PRIVILEGED = ("sts:AssumeRole", "sts:AssumeRoleWithSAML", "sts:AssumeRoleWithWebIdentity", "iam:PassRole")
IDENTITY_POLICIES = ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")
INLINE_HOLDERS = ("AWS::IAM::Role", "AWS::IAM::User", "AWS::IAM::Group")
SHOWN = 8  # grants named per line; the rest are counted


@dataclass(frozen=True, order=True)
class Grant:
    holder: str  # the role, user or group (logical ID) that gets it, or the policy when attached to none
    action: str  # one action or pattern; "NotAction …"; "managed policy"
    resource: str  # one resource, "NotResource …" or a managed policy's ARN; "" in a trust policy
    principal: str = ""  # trust policies: who may assume the holder
    condition: str = ""

    @property
    def broadening(self) -> bool:
        if self.action.startswith(("NotAction", "managed policy")) or self.resource.startswith("NotResource"):
            return True
        return self.resource == "*" or any(fnmatchcase(a.lower(), self.action.lower()) for a in PRIVILEGED)

    def describe(self, actions: str | None = None) -> str:
        """`actions`: several actions of grants otherwise the same, shown as one."""
        holder, action = LOGICAL_ID_HASH.sub("", self.holder), actions or self.action
        if self.action == "managed policy":
            text = f"{holder}: managed policy {self.resource} attached"
        elif self.principal:
            text = f"{holder}: {action} by {self.principal}"
        else:
            text = f"{holder}: {action} on {self.resource}"
        return f"{text} if {self.condition}" if self.condition else text


@dataclass
class IamChanges:
    broadened: list[Grant] = field(default_factory=list)
    added: list[Grant] = field(default_factory=list)  # Allow grants that broaden nothing above

    def lines(self, stack: str) -> list[str]:
        found = []
        if self.broadened:
            found.append(f"IAM broadened in {stack}: {_listed(self.broadened)}")
        if self.added:
            found.append(
                f"IAM permissions added in {stack} (no sts:AssumeRole, iam:PassRole or `*` resource): "
                f"{_listed(self.added)}"
            )
        return found


def iam_changes(base: Template | None, head: Template | None) -> IamChanges:
    """The Allow grants of `head` that `base` lacks (a stack added: all of them), asset hashes ignored."""
    added = sorted(set(grants(head or {})) - set(grants(base or {})))
    return IamChanges([g for g in added if g.broadening], [g for g in added if not g.broadening])


def grants(template: Template) -> Iterator[Grant]:
    """Every Allow grant of the template's identity and trust policies, asset hashes replaced."""
    for logical_id, resource in template.get("Resources", {}).items():
        kind, properties = resource.get("Type"), _without_asset_hashes(resource.get("Properties", {}))
        if kind in IDENTITY_POLICIES:
            attached = [_holder(ref) for key in ("Roles", "Users", "Groups") for ref in properties.get(key, [])]
            for holder in attached or [logical_id]:
                yield from _statements(holder, properties.get("PolicyDocument", {}))
        elif kind in INLINE_HOLDERS:
            for policy in properties.get("Policies", []):
                yield from _statements(logical_id, policy.get("PolicyDocument", {}))
            for arn in properties.get("ManagedPolicyArns", []):
                yield Grant(logical_id, "managed policy", _text(arn))
            yield from _statements(logical_id, properties.get("AssumeRolePolicyDocument", {}), trust=True)


def _statements(holder: str, document: Any, *, trust: bool = False) -> Iterator[Grant]:
    statements = document.get("Statement", []) if isinstance(document, dict) else []
    for statement in statements if isinstance(statements, list) else [statements]:
        if statement.get("Effect") != "Allow":
            continue  # a Deny added narrows
        condition = json.dumps(statement["Condition"], sort_keys=True) if "Condition" in statement else ""
        actions = [f"NotAction {_text(statement['NotAction'])}"] if "NotAction" in statement else []
        actions = actions or [_text(a) for a in _as_list(statement.get("Action"))]
        if trust:
            principals = (
                _principals(statement.get("Principal"))
                if "Principal" in statement
                else [f"NotPrincipal {_text(statement.get('NotPrincipal'))}"]
            )
            yield from (Grant(holder, a, "", p, condition) for a in actions for p in principals)
            continue
        resources = [f"NotResource {_text(statement['NotResource'])}"] if "NotResource" in statement else []
        resources = resources or [_text(r) for r in _as_list(statement.get("Resource"))]
        yield from (Grant(holder, a, r, "", condition) for a in actions for r in resources)


def _holder(ref: Any) -> str:
    """A role, user or group a policy attaches to: its logical ID when referenced, else its name."""
    return str(ref["Ref"]) if isinstance(ref, dict) and set(ref) == {"Ref"} else _text(ref)


def _principals(principal: Any) -> list[str]:
    if principal == "*":
        return ["*"]
    if not isinstance(principal, dict):
        return []
    return [f"{kind} {_text(value)}" for kind, values in sorted(principal.items()) for value in _as_list(values)]


def _without_asset_hashes(value: Any) -> Any:
    if isinstance(value, str):
        return ASSET_HASH.sub("<asset hash>", value)
    if isinstance(value, list):
        return [_without_asset_hashes(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_asset_hashes(v) for k, v in value.items()}
    return value


def _text(value: Any) -> str:
    """A value as a reader sees it: `Fn::Join` joined, `Ref` and `Fn::GetAtt` as ${…}."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref":
            return f"${{{argument}}}"
        if function == "Fn::GetAtt" and isinstance(argument, list):
            return f"${{{'.'.join(map(str, argument))}}}"
        if function == "Fn::Join" and isinstance(argument, list) and len(argument) == 2:
            return str(argument[0]).join(_text(part) for part in _as_list(argument[1]))
    if isinstance(value, list):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    return json.dumps(value, sort_keys=True)


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [] if value is None else [value]


def _listed(found: list[Grant]) -> str:
    """Grants that differ only in their action as one item (`role: a, b on resource`), at most SHOWN items."""
    groups: dict[Grant, list[str]] = {}
    for grant in found:
        groups.setdefault(replace(grant, action="" if grant.action != "managed policy" else grant.action), []).append(
            grant.action
        )
    items = [first.describe(", ".join(actions)) for first, actions in groups.items()]
    return "; ".join(items[:SHOWN]) + (f"; and {len(items) - SHOWN} more" if len(items) > SHOWN else "")
