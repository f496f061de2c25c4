"""The review as one Markdown document, fit for a pull-request comment (and readable in a terminal)."""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.review.capacity import PlanComparison
from workbench.review.stack_diff import StackDiff


@dataclass
class EnvironmentReview:
    env: str
    diffs: list[StackDiff] = field(default_factory=list)
    consequences: list[str] = field(default_factory=list)
    plan: PlanComparison | None = None

    @property
    def changed(self) -> bool:
        return any(d.changed for d in self.diffs) or bool(self.plan and self.plan.changed)


@dataclass
class Review:
    base: str
    head: str
    cdk_version: str
    environments: list[EnvironmentReview]
    notes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # a side that did not synthesise

    @property
    def changed(self) -> bool:
        return bool(self.failures) or any(e.changed for e in self.environments)


def render(review: Review) -> str:
    lines = [
        f"# Change review: {review.base} → {review.head}",
        "",
        f"Synthesised offline (no AWS credentials) and compared stack by stack with the CDK CLI's own differ "
        f"(`cdk diff --template`, aws-cdk {review.cdk_version}).",
    ]
    lines += [f"> {note}" for note in review.notes]
    for failure in review.failures:
        lines += ["", "**Not compared:**", "", "```", failure, "```"]
    if not review.changed:
        names = ", ".join(e.env for e in review.environments)
        lines += ["", f"**No changes** ({names}): every stack's template and every capacity plan are the same."]
        return "\n".join(lines) + "\n"
    for env in review.environments:
        lines += ["", *_environment(env)]
    return "\n".join(lines) + "\n"


def _environment(env: EnvironmentReview) -> list[str]:
    if not env.changed:
        return [f"## {env.env}: no changes"]
    lines = [f"## {env.env}", "", "**Deploy consequences**", ""]
    lines += [f"- {c}" for c in env.consequences] or ["- none beyond the resource changes below"]
    lines += ["", "**Resource changes**", ""]
    rows = []
    for diff in env.diffs:
        if diff.note:
            rows.append(f"| {diff.stack} | (stack) | | {diff.note} |")
        for c in diff.changes:
            impact = " — **replacement**" if c.impact in ("replace", "may be replaced") else ""
            impact = impact or (f" — {c.impact}" if c.impact else "")
            rows.append(f"| {diff.stack} | {c.path or c.logical_id} | {c.type} | {c.operation}{impact} |")
    lines += ["| Stack | Resource | Type | Change |", "|---|---|---|---|", *rows] if rows else ["- none"]
    if env.plan is not None:
        lines += ["", env.plan.markdown]
    for diff in env.diffs:
        if diff.changed and diff.text:
            lines += [
                "",
                f"<details><summary>cdk diff {diff.stack}</summary>",
                "",
                "```",
                diff.text,
                "```",
                "",
                "</details>",
            ]
    return lines
