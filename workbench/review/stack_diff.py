"""Each stack compared with the CDK CLI's own differ: `cdk diff --template BASE --exclusively STACK`.

`--app` points at HEAD's cloud assembly, so nothing is synthesised again, and `--template` makes the
CLI compare two local templates ("Implies --method=template"): no AWS call, no credentials. The CLI
also judges replacements. IAM is judged here, from the two templates (workbench/review/iam.py): the CLI's
`--fail-on broadening` counts a new asset hash inside an ARN as broadening; what needs a security
reviewer (roles, boundaries, attachments, trust, key policies) is workbench/review/security.py's.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from workbench.review.iam import IamChanges, iam_changes
from workbench.review.revisions import CDK, CDK_FLAGS, Assembly, tool_env
from workbench.review.security import boundary_policies_changed, security_findings

# `[~] AWS::SageMaker::Model Models/Model-primary ModelsModelprimary19DEA415 replace`
RESOURCE_LINE = re.compile(r"^\[(?P<op>[-+~])\] (?P<type>\w+::\w+::\w+) (?P<rest>.+)$")
IMPACTS = ("may be replaced", "replace", "destroy", "orphan")
OPERATIONS = {"+": "added", "-": "removed", "~": "modified"}


@dataclass(frozen=True)
class ResourceChange:
    operation: str  # added, removed, modified
    type: str
    logical_id: str
    path: str  # construct path when the CLI knows it, else ""
    impact: str  # "", "replace", "may be replaced", "destroy", "orphan"


@dataclass
class StackDiff:
    stack: str
    text: str = ""  # the CLI's rendering, colour off
    changes: list[ResourceChange] = field(default_factory=list)
    iam: IamChanges = field(default_factory=IamChanges)  # grants added, asset hashes ignored
    security: list[str] = field(default_factory=list)  # "needs security review: …" (workbench/review/security.py)
    note: str | None = None  # stack added or removed, or why it could not be compared

    @property
    def changed(self) -> bool:
        return bool(self.note) or "Number of stacks with differences: 0" not in self.text


def diff_stack(stack: str, base: Assembly, head: Assembly, scratch: Path) -> StackDiff:
    base_template, head_template = base.template(stack), head.template(stack)
    if head_template is None:
        return StackDiff(stack, note="removed by this change (CloudFormation deletes it; retained resources stay)")
    if base_template is None:
        base_template = scratch / f"{stack}.empty.json"
        base_template.write_text(json.dumps({"Resources": {}}))
    command = [
        str(CDK), "diff", *CDK_FLAGS, "--no-color",
        "--app", str(head.out), "--template", str(base_template), "--exclusively", stack,
    ]  # fmt: skip
    result = subprocess.run(command, cwd=head.source, env=tool_env(), capture_output=True, text=True)
    text = (result.stdout + result.stderr).strip()
    if f"Stack {stack}" not in text:
        return StackDiff(stack, text=text, note=f"`cdk diff` failed (exit {result.returncode})")
    before, after = json.loads(base_template.read_text()), json.loads(head_template.read_text())
    security = security_findings(stack, before, after) + boundary_policies_changed(stack, before, after)
    diff = StackDiff(stack, text=text, changes=parse_resources(text), iam=iam_changes(before, after), security=security)
    if base.template(stack) is None:
        diff.note = "added by this change"
    return diff


def parse_resources(text: str) -> list[ResourceChange]:
    changes = []
    for line in text.splitlines():
        match = RESOURCE_LINE.match(line.strip())
        if not match:
            continue
        rest = match["rest"].strip()
        impact = next((i for i in IMPACTS if rest.endswith(f" {i}")), "")
        words = rest.removesuffix(f" {impact}").split() if impact else rest.split()
        changes.append(ResourceChange(OPERATIONS[match["op"]], match["type"], words[-1], " ".join(words[:-1]), impact))
    return changes
