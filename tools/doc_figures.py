"""`python -m tools.doc_figures [--write]`: the figures README.md and docs/ state about the config, rendered from
the config (issue 40 item 5). Each rule finds its sentence or diagram line by a pattern and renders what it must
say; `--write` (`make docs`) puts the rendering in place, the default lists the figures that differ (exit 1).
tests/test_doc_figures.py runs the same check in `make test`.

Rendered here: the README diagram's variants (instance count, type and fallback pools, weight) and its scaling
line (the policy kinds some environment has, the schedules' zones), the assumed capacity (config,
config/physics.py, config/calibration.py), prod's plan cost and ratios (docs/plan/summary.md, which `make
plan-docs` writes first), a blue/green deploy's length (config/deploy_window.py), staging's first-deploy fleet,
the instance-outlier threshold's spread. `transcript_differences` checks the figures the walk's transcripts (and
operations.md's prose) show against the config. Elsewhere: the quota sentence (tests/test_docs_quotas.py), the
alarm table (workbench/alarm_table.py), the prod plan (`make plan-docs`), test counts and times
(tools/test_figures.py), the transcripts themselves (tools/docs_walk).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from config import EnvironmentConfig, known_environments, load_catalog, load_environment
from config.calibration import assumed_share
from config.deploy_window import deploy_duration
from config.metric_names import HIGH_RESOLUTION
from config.physics import ceiling_if_known
from config.scaling_target import tracking_target

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
# How the diagram names a target-tracking metric.
METRIC_WORDS = {HIGH_RESOLUTION: "concurrent requests (high resolution)"}


@cache
def env(name: str) -> EnvironmentConfig:
    return load_environment(name, against_deployed=False)


@dataclass(frozen=True)
class Rule:
    name: str
    document: Path
    pattern: str  # matches the figure's text exactly once in the document
    render: Callable[[], str]

    def found(self, text: str) -> list[re.Match[str]]:
        return list(re.finditer(self.pattern, text))


def variant_line(variant_name: str) -> Callable[[], str]:
    def render() -> str:
        cfg = env("prod")
        v = next(v for v in cfg.variants if v.name == variant_name)
        pools = " → ".join(v.instance_types)
        return f"{variant_name:<7} {v.initial_instance_count} × {pools}, w{v.initial_weight:g}"

    return render


def scaling_line() -> str:
    """The policy kinds some environment has, and every schedule's zone."""
    configs = [env(name) for name in known_environments()]
    scalings = [s for cfg in configs for s in cfg.autoscaling.values()]
    metrics = sorted({s.target_tracking.metric for s in scalings})
    kinds = [f"target tracking on {' / '.join(METRIC_WORDS.get(m, m) for m in metrics)}"]
    step_metrics = sorted({step.metric for s in scalings for step in s.step_scaling})
    if step_metrics:
        kinds.append(f"step scaling on {', '.join(step_metrics)}")
    zones = sorted({w.timezone for s in scalings for w in s.schedules})
    if zones:
        kinds.append(f"scheduled windows ({', '.join(zones)})")
    return " · ".join(kinds)


def assumed_capacity_sentence() -> str:
    cfg = env("prod")
    catalog = load_catalog()
    primary = cfg.variants[0]
    preferred, *fallbacks = primary.instance_types
    ceiling = ceiling_if_known(cfg, catalog, preferred)
    share = assumed_share(catalog).share
    others = ", ".join(f"{cfg.planning.capacity[t].requests_per_minute:,.0f}/min per {t}" for t in fallbacks)
    return (
        f"assumed: {cfg.planning.capacity[preferred].requests_per_minute:,.0f}/min ({others}),\n"
        f"{100 * share:.0f} % of the {ceiling.requests_per_minute:,.0f}/min ceiling"
    )


def staging_first_fleet() -> str:
    cfg = env("staging")
    types = {v.instance_type for v in cfg.variants}
    count = sum(v.initial_instance_count for v in cfg.variants)
    return f"SageMaker launching {count} × {' / '.join(sorted(types))}"


def outlier_spread() -> str:
    cfg = env("prod")
    types = cfg.variants[0].instance_types
    rates = [cfg.planning.capacity[t].requests_per_minute for t in types]
    spread = max(rates) / min(rates)
    ratio = cfg.endpoint_metrics.outlier_latency_ratio
    return (
        f"{' and '.join(types)} at {' and '.join(f'{r:,.0f}' for r in rates)}/min: "
        f"{ratio:g} × {spread:.2f} = {round(ratio * spread, 2):g}"
    )


def review_deploy_consequence() -> str:
    """reviewing.md's example of `make review` on prod: workbench/review/consequences.py's blue/green line."""
    cfg = env("prod")
    duration, how = deploy_duration(cfg)
    fleet = " + ".join(f"{v.name} {v.initial_instance_count}" for v in cfg.variants)
    return (
        f"about {round(duration.total_seconds() / 60)} min ({how}) with a doubled fleet: a green fleet at the live "
        f"instance counts (config: {fleet})"
    )


def step_scaling_users() -> str:
    """Which environments have step scaling (scaling-and-planning.md says it stays available)."""
    users = [name for name in known_environments() if any(s.step_scaling for s in env(name).autoscaling.values())]
    who = f"{', '.join(users)} and" if users else "no environment uses it today,"
    return f"available (`step_scaling`; {who} the tests use it)"


def prod_primary_range() -> str:
    scaling = env("prod").autoscaling["primary"]
    return f"{scaling.min_capacity}–{scaling.max_capacity} at its end"


PLAN_SUMMARY = (
    DOCS / "plan" / "summary.md"
)  # prod's plan, written by `make plan-docs` (tests/workbench/planner/test_prod_plan.py)


def plan_costs() -> dict[str, str]:
    """prod's monthly cost and its ratios, as the generated plan states them."""
    text = PLAN_SUMMARY.read_text()
    frontier = re.search(r"Cost vs the frontier: \$([\d,]+)/month, ([\d.]+)x .*?against ([\d.]+)x the frontier", text)
    figures = re.search(r"Cost as figures \(not judged\): ([\d.]+)x the oracle.*?, ([\d.]+)x the causal baseline", text)
    if not frontier or not figures:
        raise ValueError(f"{PLAN_SUMMARY}: no cost lines (run `make plan-docs`)")
    cost, ratio, allowed = frontier.groups()
    oracle, causal = figures.groups()
    return {"cost": cost, "ratio": ratio, "allowed": allowed, "oracle": oracle, "causal": causal}


def readme_plan_costs() -> str:
    c = plan_costs()
    return f"${c['cost']} a month, {c['ratio']}× the frontier, {c['oracle']}× the oracle"


def planning_plan_costs() -> str:
    c = plan_costs()
    return (
        f"week costs ${c['cost']} ({c['ratio']}× the frontier, within its {c['allowed']}×), {c['oracle']}× the oracle, "
        f"{c['causal']}× the causal baseline"
    )


def readme_assumed_rate() -> str:
    cfg = env("prod")
    return f"prod at the assumed {cfg.planning.capacity[cfg.variants[0].instance_type].requests_per_minute:,.0f}/min"


RULES = (
    Rule("README diagram: primary", README, r"primary +\d+ × [^\n]*?, w\d+", variant_line("primary")),
    Rule("README diagram: canary", README, r"canary +\d+ × [^\n]*?, w\d+", variant_line("canary")),
    Rule("README diagram: scaling", README, r"target tracking on [^\n]*|target tracking · [^\n]*", scaling_line),
    Rule(
        "README: assumed capacity",
        README,
        r"assumed: [\d,]+/min \([^)]*\),\n[\d.]+ % of the [\d,]+/min ceiling",
        assumed_capacity_sentence,
    ),
    Rule(
        "deploying.md: staging's first fleet",
        DOCS / "deploying.md",
        r"SageMaker launching \d+ × [\w./ ]+?xlarge",
        staging_first_fleet,
    ),
    Rule(
        "alarms.md: instance-outlier spread",
        DOCS / "alarms.md",
        r"ml\.\S+ and ml\.\S+ at [\d,]+ and [\d,]+/min: [\d.]+ × [\d.]+ = [\d.]+",
        outlier_spread,
    ),
    Rule(
        "README: prod's plan cost",
        README,
        r"\$[\d,]+ a month, [\d.]+× the frontier, [\d.]+× the oracle",
        readme_plan_costs,
    ),
    Rule("README: prod's assumed rate", README, r"prod at the assumed [\d,]+/min", readme_assumed_rate),
    Rule(
        "scaling-and-planning.md: prod's plan cost",
        DOCS / "scaling-and-planning.md",
        r"week costs \$[\d,]+ \([\d.]+× the frontier, within its [\d.]+×\), [\d.]+× the oracle, [\d.]+× the causal baseline",
        planning_plan_costs,
    ),
    Rule(
        "scaling-and-planning.md: who has step scaling",
        DOCS / "scaling-and-planning.md",
        r"available \(`step_scaling`[^)]*\)",
        step_scaling_users,
    ),
    Rule(
        "scaling-and-planning.md: prod primary's range",
        DOCS / "scaling-and-planning.md",
        r"(?<=returns it to\n  )\d+–\d+ at its end",
        prod_primary_range,
    ),
    Rule(
        "reviewing.md: a blue/green deploy's length",
        DOCS / "reviewing.md",
        r"about \d+ min \(green fleet start .*?\(config: [^)]*\)",
        review_deploy_consequence,
    ),
)


WINDOW_ROW = re.compile(r"^\| (?:(\w+): )?([a-z0-9-]+)[^|]*\| [^|]+ \| ([\w/]+) \| (\d+)–(\d+) \|", re.MULTILINE)


def window_table_differences() -> list[str]:
    """scaling-and-planning.md's table of prod's scheduled windows: zone and min–max of each, and none missing."""
    cfg = env("prod")
    windows = {(variant, w.name): (w, s) for variant, s in cfg.autoscaling.items() for w in s.schedules}
    rows = {
        (m.group(1) or "primary", m.group(2)): m
        for m in WINDOW_ROW.finditer((DOCS / "scaling-and-planning.md").read_text())
    }
    found = [
        f"scaling-and-planning.md: no row for {variant}'s window {name}"
        for variant, name in windows
        if (variant, name) not in rows
    ]
    for key, row in rows.items():
        if key not in windows:
            found.append(
                f"scaling-and-planning.md: the window table names {key[0]}'s {key[1]}, which prod does not have"
            )
            continue
        w, scaling = windows[key]
        wanted = (w.timezone, w.min_capacity, w.max_capacity or scaling.max_capacity)
        said = (row.group(3), int(row.group(4)), int(row.group(5)))
        if said != wanted:
            found.append(f"scaling-and-planning.md: window {key[1]} says {said}, the config {wanted}")
    return found


def differences(rules=RULES) -> list[str]:
    """What each rule's document says against what the config says, for every figure that differs."""
    found = window_table_differences() if rules is RULES else []
    for rule in rules:
        text = rule.document.read_text()
        matches = rule.found(text)
        if len(matches) != 1:
            found.append(f"{rule.name}: {len(matches)} matches of its pattern in {rule.document.name}, expected one")
        elif matches[0].group(0) != (wanted := rule.render()):
            found.append(f"{rule.name}: {rule.document.name} says {matches[0].group(0)!r}, the config {wanted!r}")
    return found


def write(rules=RULES) -> list[str]:
    changed = []
    for rule in rules:
        text = rule.document.read_text()
        matches = rule.found(text)
        if len(matches) == 1 and matches[0].group(0) != (wanted := rule.render()):
            rule.document.write_text(text[: matches[0].start()] + wanted + text[matches[0].end() :])
            changed.append(rule.name)
    return changed


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        for name in write():
            print(f"doc figures: rewrote {name}")
        argv = []
    if argv:
        print("usage: python -m tools.doc_figures [--write]", file=sys.stderr)
        return 2
    problems = differences()
    for problem in problems:
        print(f"stale: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


# The walk's transcripts (tools/docs_walk) are regenerated by `make docs`, not by `make test`: what they show of
# the config is checked here, line by line, wherever it appears.
CAPACITY = re.compile(r"(ml\.[\w.]+): assumed: ([\d,]+)/min")
EACH = re.compile(r"(ml\.[\w.]+)(?:'s)? at ([\d,]+)/min")
SCALING = re.compile(r"^\s+(\w+): min (\d+), max (\d+)$", re.MULTILINE)
TARGET = re.compile(
    r"^\s+(\w+): min \d+, max \d+\n\s+policy \S+ \(TargetTrackingScaling\):\n\s+(\S+) at ([\d.]+)", re.M
)
SCHEDULE = re.compile(r"schedule ([\w-]+)-(start|end): [^→]*→ min\s+(\d+),?\s+max\s+(\d+)")
PROVISIONING = re.compile(r"planning\.provisioning_minutes\): assumed: (\d+) min")
TEMPLATES = re.compile(r"cfn-lint: no errors in (\d+) templates")
IN_SERVICE = re.compile(r"^  (\w+)\s+\S+\s+(\d+)/(\d+)\s+\d+/\d+", re.MULTILINE)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def template_count() -> int:
    """What `make synth` writes: an image and a serving stack per environment, and a CI access stack with `ci:`."""
    return sum(2 + (env(name).ci is not None) for name in known_environments())


def transcript_differences(name: str, body: str, cfg: EnvironmentConfig) -> list[str]:
    """Figures of `cfg` (the sandbox's environment) a transcript contradicts. `name` "status" is the fresh
    sandbox's first status: its minimums and instance counts are the config's own."""
    found = []
    capacity = cfg.planning.capacity
    for pattern in (CAPACITY, EACH):
        for type_, rate in pattern.findall(body):
            if type_ in capacity and _number(rate) != capacity[type_].requests_per_minute:
                found.append(
                    f"{name}: {type_} at {rate}/min, planning.capacity says {capacity[type_].requests_per_minute:g}"
                )
    for minutes in PROVISIONING.findall(body):
        if int(minutes) != cfg.planning.provisioning_minutes:
            found.append(f"{name}: provisioning {minutes} min, config {cfg.planning.provisioning_minutes}")
    for count in TEMPLATES.findall(body):
        if int(count) != template_count():
            found.append(f"{name}: {count} templates, make synth writes {template_count()}")
    windows = {(v, w.name): w for v, s in cfg.autoscaling.items() for w in s.schedules}
    by_name = {w.name: (v, w) for (v, _), w in windows.items()}
    for window, edge, low, high in SCHEDULE.findall(body):
        if window not in by_name:
            found.append(f"{name}: schedule {window} is not in the config")
            continue
        variant, w = by_name[window]
        scaling = cfg.autoscaling[variant]
        wanted = (
            (w.min_capacity, w.max_capacity or scaling.max_capacity)
            if edge == "start"
            else (scaling.min_capacity, scaling.max_capacity)
        )
        if (int(low), int(high)) != wanted:
            found.append(f"{name}: {window}-{edge} → min {low}, max {high}; config min {wanted[0]}, max {wanted[1]}")
    for variant, metric, value in TARGET.findall(body):
        tracking = cfg.autoscaling[variant].target_tracking
        if metric != tracking.metric or abs(float(value) - tracking_target(cfg, variant)) > 0.5:
            found.append(
                f"{name}: {variant} tracks {metric} at {value}; config {tracking.metric} at {tracking_target(cfg, variant):g}"
            )
    if name == "status":
        for variant, low, high in SCALING.findall(body):
            scaling = cfg.autoscaling[variant]
            if (int(low), int(high)) != (scaling.min_capacity, scaling.max_capacity):
                found.append(
                    f"{name}: {variant} min {low}, max {high}; config {scaling.min_capacity}, {scaling.max_capacity}"
                )
        counts = {v.name: v.initial_instance_count for v in cfg.variants}
        for variant, in_service, desired in IN_SERVICE.findall(body):
            if variant in counts and (int(in_service), int(desired)) != (counts[variant], counts[variant]):
                found.append(f"{name}: {variant} {in_service}/{desired} instances; config {counts[variant]}")
    return found
