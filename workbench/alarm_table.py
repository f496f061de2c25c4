"""`python -m workbench.alarm_table [--env prod] [--write]`: the table of every alarm in docs/reference/alarms.md,
generated from the code.

It builds the environment's serving stack as `make synth` does and reads each alarm twice: its route
and its missing-data reason from the code that defined it (`RoutedAlarm`, constructs/alarm_topic.py),
its threshold, datapoints and missing-data treatment from the synthesised template. Alarms the
variants share with the same figures make one row. `--write` replaces the table in docs/reference/alarms.md;
tests/stacks/test_alarm_routing.py fails when the document and prod's code disagree.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "docs" / "reference" / "alarms.md"
BEGIN = "<!-- alarm table: `.venv/bin/python -m workbench.alarm_table --write` writes it from prod's code -->"
END = "<!-- end of the alarm table -->"
COMPARISONS = {
    "GreaterThanThreshold": ">",
    "GreaterThanOrEqualToThreshold": ">=",
    "LessThanThreshold": "<",
    "LessThanOrEqualToThreshold": "<=",
}
DESTINATIONS = {"page": "paging topic", "ticket": "ticket topic"}
# Thresholds whose unit the metric's name does not say (SageMaker: latencies in microseconds; CPU summed over vCPUs).
UNITS = {"OverheadLatency": " µs", "CPUUtilization": " (% summed over the vCPUs)", "TimeToFirstToken": " ms"}
HEADER = (
    "| alarm | variants | severity: destination | why there | condition | datapoints to alarm | missing data |\n"
    "| --- | --- | --- | --- | --- | --- | --- |"
)


@dataclass(frozen=True)
class Row:
    alarm: str  # `<variant>-5xx-rate`
    severity: str
    why: str
    condition: str
    datapoints: str
    missing: str

    def cells(self, variants: list[str]) -> str:
        where = f"{self.severity}: {DESTINATIONS[self.severity]}"
        cells = [f"`{self.alarm}`", ", ".join(variants), where, self.why, self.condition, self.datapoints, self.missing]
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def alarm_rows(stack, template: dict, variant_names: list[str]) -> list[tuple[Row, list[str]]]:
    """(row, variants it holds for) for every alarm `stack.routed_alarms` names, in definition order."""
    resources = template["Resources"]
    rows: dict[Row, list[str]] = {}
    for routed in stack.routed_alarms:
        logical_id = stack.resolve(stack.get_logical_id(routed.alarm.node.default_child))
        properties = resources[logical_id]["Properties"]
        name, variant = _generic(routed.alarm.node.id, variant_names)
        row = Row(
            alarm=name,
            severity=routed.route.severity.value,
            why=routed.route.why,
            condition=_condition(properties).replace(f"'{variant}'", "'<variant>'"),  # a query naming it
            datapoints=_datapoints(properties),
            missing=f"{properties['TreatMissingData']}: {routed.missing.why}",
        )
        rows.setdefault(row, []).append(variant)
    return list(rows.items())


def render(rows: list[tuple[Row, list[str]]]) -> str:
    return "\n".join([HEADER, *(row.cells(variants) for row, variants in rows)])


def _generic(alarm_id: str, variant_names: list[str]) -> tuple[str, str]:
    for variant in variant_names:
        if alarm_id.startswith(f"{variant}-"):
            return "<variant>" + alarm_id[len(variant) :], variant
    return alarm_id, "-"


def _period(properties: dict) -> int:
    if "Period" in properties:
        return properties["Period"]
    return next(
        q.get("Period") or q["MetricStat"]["Period"] for q in properties["Metrics"] if not q.get("ReturnData", True)
    )


def _condition(properties: dict) -> str:
    comparison = COMPARISONS[properties["ComparisonOperator"]]
    if "Metrics" not in properties:
        statistic = properties.get("ExtendedStatistic") or properties["Statistic"]
        metric = properties["MetricName"]
        measured = f"{metric} ({properties['Namespace']}) {statistic}"
    else:  # metric math: the expression the alarm watches, and what each of its inputs is
        queries = properties["Metrics"]
        (watched,) = [q["Expression"] for q in queries if q.get("ReturnData", True)]
        inputs = [q for q in queries if not q.get("ReturnData", True)]
        names = [q["MetricStat"]["Metric"]["MetricName"] for q in inputs if "MetricStat" in q]
        metric = names[0] if names else ""
        defined = [
            f"{q['Id']} = "
            + (
                f"{q['MetricStat']['Metric']['MetricName']} {q['MetricStat']['Stat']}"
                if "MetricStat" in q
                else q["Expression"]
            )
            for q in inputs
        ]
        measured = f"{watched}, where {'; '.join(defined)}"
    return f"{measured} {comparison} {properties['Threshold']:g}{UNITS.get(metric, '')}"


def _datapoints(properties: dict) -> str:
    periods = properties["EvaluationPeriods"]
    needed = properties.get("DatapointsToAlarm", periods)
    return f"{needed} of {periods} × {_period(properties) // 60} min"


def document_table(text: str) -> str:
    """The generated block of docs/reference/alarms.md, without its markers."""
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def with_table(text: str, table: str) -> str:
    before, rest = text.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    return f"{before}{BEGIN}\n{table}\n{END}{after}"


def build(env_name: str) -> str:
    """Synthesise `env_name`'s serving stack (no cdk-nag: the table reads definitions) and render the table."""
    import aws_cdk as cdk  # here, not at import: reading a document should not start Node
    from aws_cdk.assertions import Template

    from config import load_environment
    from stacks.environment import build_environment

    cfg = load_environment(env_name)
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    _, serving = build_environment(cdk.App(context={**context, "env": env_name}), cfg)
    template = Template.from_stack(serving).to_json()
    return render(alarm_rows(serving, template, [v.name for v in cfg.variants]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workbench.alarm_table", description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="prod", help="the environment whose alarms to list (default prod)")
    parser.add_argument("--write", action="store_true", help=f"replace the table in {DOCUMENT.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if args.write and args.env != "prod":
        parser.error("--write: docs/reference/alarms.md holds prod's table; print other environments' without it")
    table = build(args.env)
    if args.write:
        DOCUMENT.write_text(with_table(DOCUMENT.read_text(), table))
        print(f"wrote {args.env}'s alarm table into {DOCUMENT.relative_to(ROOT)}")
    else:
        print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
