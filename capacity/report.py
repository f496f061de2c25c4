"""What `ops capacity` writes: capacity.json (the record), capacity.md (the table a reviewer reads in a
pull request) and capacity.png (TTFT and throughput against offered load, readable without the table)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from capacity.sweep import SweepOutcome
from config.loader import load_catalog
from config.physics import ceiling, known_hardware


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
        "physical_ceiling": physical_ceiling(facts.target),
        "steps": [step.as_dict() for step in outcome.steps],
    }


def physical_ceiling(target: dict[str, Any]) -> dict[str, Any] | None:
    """The measured instance type's requests/min at 100 % utilisation (config/physics.py), for
    capacity/workload.yaml's requests and the variant's engine; None when the target does not say its
    instance type and engine (a URL target) or the catalog does not know them."""
    instance_type, engine = target.get("instance_type"), target.get("engine") or {}
    model, batch = engine.get("model"), engine.get("max_num_seqs")
    catalog = load_catalog()
    if (
        not isinstance(instance_type, str)
        or not isinstance(batch, int)
        or not known_hardware(catalog, instance_type, model)
    ):
        return None
    found = ceiling(catalog, instance_type, model, batch)
    return {
        "instance_type": instance_type,
        "requests_per_minute": round(found.requests_per_minute, 1),
        "bound": found.bound,
        "compute_bound_requests_per_minute": round(found.compute_rpm, 1),
        "memory_bound_requests_per_minute": round(found.memory_rpm, 1),
        "workload": found.tokens.source,
        "how": found.describe(),
    }


def _ceiling_line(record: dict[str, Any]) -> str:
    found, answer = record.get("physical_ceiling"), record["requests_per_minute_per_instance"]
    if found is None:
        return "- physical ceiling: not known (the target does not say its instance type and engine)"
    line = (
        f"- physical ceiling of one {found['instance_type']}: {found['requests_per_minute']:,.0f}/min at 100 % "
        f"utilisation for {found['workload']}'s requests ({found['how']}; config/physics.py)"
    )
    if answer is None:
        return line
    share = 100 * answer / found["requests_per_minute"]
    suspect = (
        ": **above the ceiling, a suspect measurement** (shorter answers? too few instances?)" if share > 100 else ""
    )
    return f"{line}; the answer is {share:.0f} % of it{suspect}"


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
        _ceiling_line(record),
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
