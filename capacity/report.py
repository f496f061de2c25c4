"""What `ops capacity` writes: capacity.json (the record), capacity.md (the table a reviewer reads in a
pull request) and capacity.png (TTFT and throughput against offered load, readable without the table)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from capacity.sweep import SweepOutcome


@dataclass(frozen=True)
class RunFacts:
    target: dict[str, Any]
    instances: int
    slo_ttft_ms: float
    workload: dict[str, Any]
    measured_at: datetime
    settings: dict[str, Any]


def concurrency_at_answer(outcome: SweepOutcome) -> float | None:
    """Requests in flight per instance at the answer rate, as measured during that step (Little's law
    would give the same: rate × mean time in the system)."""
    best = outcome.best()
    return None if best is None else round(best.mean_in_flight, 1)


def document(outcome: SweepOutcome, facts: RunFacts) -> dict[str, Any]:
    return {
        "requests_per_minute_per_instance": None if outcome.answer_rpm is None else round(outcome.answer_rpm, 1),
        "concurrent_requests_per_instance_at_slo": concurrency_at_answer(outcome),
        "complete": outcome.complete,
        "stopped": outcome.stopped,
        "instances": facts.instances,
        "slo": {"ttft_p95_ms": facts.slo_ttft_ms, "max_error_percent": 1.0},
        "workload": facts.workload,
        "target": facts.target,
        "measured_at": facts.measured_at.isoformat(timespec="seconds"),
        "settings": facts.settings,
        "steps": [step.as_dict() for step in outcome.steps],
    }


def markdown(record: dict[str, Any]) -> str:
    answer = record["requests_per_minute_per_instance"]
    target = record["target"]
    where = target.get("url") or f"{target.get('endpoint')} / {target.get('variant')}"
    lines = [
        f"# Capacity: {where}",
        "",
        f"**{answer:,.0f} requests/min per instance** within TTFT p95 <= {record['slo']['ttft_p95_ms']:g} ms and "
        f"<= 1 % errors"
        if answer is not None
        else "**No rate held the objective.**",
        "",
        f"- measured {record['measured_at']} on {record['instances']} instance(s); image "
        f"{target.get('image_tag', 'not known (URL target)')}",
        f"- in flight per instance at that rate: {record['concurrent_requests_per_instance_at_slo']}",
        f"- sweep ended: {record['stopped']}" + ("" if record["complete"] else " (**incomplete**)"),
        f"- workload: {record['workload'].get('source')}",
        "",
        "| offered/min | answered/min | requests | errors % | TTFT p50 | TTFT p95 | TTFT p99 | ITL p95 | E2E p95 | "
        "tokens/s | in flight | send lag p99 | verdict |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for step in record["steps"]:
        cells = [
            f"{step['offered_rpm']:,.0f}", f"{step['achieved_rpm']:,.0f}", str(step["requests"]),
            f"{step['error_percent']:.1f}", _ms(step["ttft_p50_ms"]), _ms(step["ttft_p95_ms"]),
            _ms(step["ttft_p99_ms"]), _ms(step["itl_p95_ms"]), _ms(step["e2e_p95_ms"]),
            f"{step['output_tokens_per_s']:,.0f}", f"{step['mean_in_flight']:.1f}", _ms(step["send_lag_p99_ms"]),
            ("held" if step["held"] else "broke") + f": {step['verdict']}",
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Rates are per instance; every time is measured from the request's scheduled send time (open loop)."]
    return "\n".join(lines) + "\n"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} ms"


def plot(record: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = sorted(record["steps"], key=lambda s: s["offered_rpm"])
    offered = [s["offered_rpm"] for s in steps]
    figure, latency = plt.subplots(figsize=(9, 5))
    for key, label, style in (("ttft_p50_ms", "TTFT p50", "o-"), ("ttft_p95_ms", "TTFT p95", "s-")):
        points = [(o, s[key]) for o, s in zip(offered, steps, strict=True) if s[key] is not None]
        latency.plot([p[0] for p in points], [p[1] for p in points], style, label=label)
    slo = record["slo"]["ttft_p95_ms"]
    latency.axhline(slo, color="red", linestyle="--", label=f"objective: TTFT p95 {slo:g} ms")
    latency.set_xlabel("offered requests/min per instance (open loop)")
    latency.set_ylabel("time to first token (ms)")
    throughput = latency.twinx()
    throughput.plot(offered, [s["achieved_rpm"] for s in steps], "^:", color="grey", label="answered/min")
    throughput.set_ylabel("answered requests/min per instance")
    answer = record["requests_per_minute_per_instance"]
    if answer is not None:
        latency.axvline(answer, color="green", linestyle=":", label=f"answer: {answer:,.0f}/min")
    handles = latency.get_legend_handles_labels()[0] + throughput.get_legend_handles_labels()[0]
    labels = latency.get_legend_handles_labels()[1] + throughput.get_legend_handles_labels()[1]
    latency.legend(handles, labels, loc="upper left", fontsize="small")
    target = record["target"]
    latency.set_title(f"Capacity of {target.get('url') or target.get('variant')}: {record['measured_at']}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write(outcome: SweepOutcome, facts: RunFacts, out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    record = document(outcome, facts)
    (out / "capacity.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / "capacity.md").write_text(markdown(record))
    if record["steps"]:
        plot(record, out / "capacity.png")
    return record
