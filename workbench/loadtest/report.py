"""What `bin/loadtest` writes: capacity.json (the record), capacity.md (the table a reviewer reads in a
pull request) and capacity.png (TTFT and throughput against offered load, readable without the table).
The figure's title names what was measured and says when the answer is only a lower bound."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from config.domain.physics import arithmetic, ceiling, known_hardware
from config.domain.workload import WORKLOAD_SOURCE
from config.loader import load_catalog
from workbench.loadtest.sweep import BROKE, HELD, INTERRUPTED, SweepOutcome, shown


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
        # Answered within the objective in the best held step, per minute of its schedule (capacity.load).
        "requests_per_minute_per_instance": None if outcome.answer_rpm is None else round(outcome.answer_rpm, 1),
        "answer_step": outcome.answer_step(),  # 1-based, as `steps` and the progress lines count them
        "concurrent_requests_per_instance_at_slo": concurrency_at_answer(outcome),
        "complete": outcome.complete,
        "stopped": outcome.stopped,
        "steps_measured": len(outcome.measured),  # run to their end and judged
        "steps_partial": len(outcome.partial),  # cut short by Ctrl-C or SIGTERM: in `steps`, never judged
        "instances": facts.instances,
        "slo": {"ttft_p95_ms": facts.slo_ttft_ms, "max_error_percent": 1.0},
        "workload": facts.workload,
        "target": facts.target,
        "measured_at": facts.measured_at.isoformat(timespec="seconds"),
        "settings": facts.settings,
        "physical_ceiling": physical_ceiling(
            facts.target, concurrency_at_answer(outcome), facts.workload.get("kind", "conversations")
        ),
        "steps": [
            {**step.as_dict(), "result": result} for step, result in zip(outcome.steps, outcome.results, strict=True)
        ],
    }


def step_result(step: dict[str, Any]) -> str:
    """held, broke, client-limited or interrupted (capacity.sweep); a record without `result` (written
    before it existed) has only `held`."""
    return step.get("result") or (HELD if step["held"] else BROKE)


def where(target: dict[str, Any]) -> str:
    """'staging/canary (mangaassist-llm-staging)', or the URL: what was measured."""
    if target.get("url"):
        return str(target["url"])
    endpoint = f" ({target['endpoint']})" if target.get("endpoint") else ""
    return f"{target.get('environment')}/{target.get('variant')}{endpoint}"


def answer_text(record: dict[str, Any]) -> str:
    """The answer as the figure and the table state it: a lower bound unless the search was refined."""
    answer = record["requests_per_minute_per_instance"]
    if answer is None:
        return "no rate held the objective"
    if record["stopped"] == "refined":
        return f"{answer:,.0f} requests/min per instance"
    why = "the highest rate offered held" if record["stopped"] == "max rate held" else "the sweep did not finish"
    return f"at least {answer:,.0f} requests/min per instance (a lower bound: {why})"


def steps_text(record: dict[str, Any]) -> str:
    """'2 step(s) measured, 1 partial (interrupted, not judged)': exact counts, from the steps' results."""
    results = [step_result(step) for step in record["steps"]]
    partial = results.count(INTERRUPTED)
    return f"{len(results) - partial} step(s) measured" + (
        f", {partial} partial (interrupted, not judged)" if partial else ""
    )


def title(record: dict[str, Any]) -> str:
    """capacity.png's title: the target and the answer; PARTIAL and why when the sweep stopped before
    its search ended, LOWER BOUND when the answer is one; when it was measured."""
    answer = record["requests_per_minute_per_instance"]
    amount = "no rate held the objective" if answer is None else f"{answer:,.0f} requests/min per instance"
    lower_bound = answer is not None and record["stopped"] != "refined"
    lines = [f"Capacity of {where(record['target'])}: {'at least ' if lower_bound else ''}{amount}"]
    marks = [f"PARTIAL: the sweep ended early ({record['stopped'].split(':', 1)[0]})"] if not record["complete"] else []
    if lower_bound:
        marks.append("LOWER BOUND" + ("" if marks else " (the highest rate offered held)"))
    if record["target"].get("stand_in"):  # the sandbox (workbench/loadtest/endpoint_target.py): no instance type's capacity
        marks.append("SANDBOX STAND-IN, not an instance type")
    return "\n".join([*lines, *(["; ".join(marks)] if marks else []), f"measured {record['measured_at']}"])


def physical_ceiling(
    target: dict[str, Any], in_flight: float | None = None, kind: str = "conversations"
) -> dict[str, Any] | None:
    """The measured instance type's requests/min at 100 % utilisation (config/domain/physics.py) for
    config/domain/workload.yaml's requests (`kind` single turns, else conversations) and the variant's engine,
    at the batch the run held at its answer (`in_flight`, rounded up; engine.max_num_seqs when the run
    found no answer); None when the target does not say its instance type and engine (a URL target) or
    the catalog does not know them."""
    instance_type, engine = target.get("instance_type"), target.get("engine") or {}
    model, most = engine.get("model"), engine.get("max_num_seqs")
    catalog = load_catalog()
    if (
        not isinstance(instance_type, str)
        or not isinstance(most, int)
        or not known_hardware(catalog, instance_type, model)
    ):
        return None
    batch = max(1, min(most, math.ceil(in_flight))) if in_flight else most
    found = ceiling(catalog, instance_type, model, batch)
    chosen = found.single if kind == "single" else found.default
    return {
        "instance_type": instance_type,
        "requests_per_minute": round(chosen.requests_per_minute, 1),
        "batch": batch,
        "bound": found.bound,
        "conversations_requests_per_minute": round(found.default.requests_per_minute, 1),
        "single_turn_requests_per_minute": round(found.single.requests_per_minute, 1),
        "workload": f"{WORKLOAD_SOURCE} ({chosen.tokens.name})",
        "how": arithmetic(found.hardware, chosen),
    }


def _ceiling_line(record: dict[str, Any]) -> str:
    found, answer = record.get("physical_ceiling"), record["requests_per_minute_per_instance"]
    if found is None:
        return "- physical ceiling: not known (the target does not say its instance type and engine)"
    line = (
        f"- physical ceiling of one {found['instance_type']}: {found['requests_per_minute']:,.0f}/min at 100 % "
        f"utilisation for {found['workload']} ({found['how']}; config/domain/physics.py)"
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
    lines = [
        f"# Capacity: {where(target)}",
        "",
        f"**{answer_text(record)}** answered within the objective: TTFT p95 <= {record['slo']['ttft_p95_ms']:g} ms "
        "and <= 1 % errors"
        if answer is not None
        else "**No rate held the objective.**",
        "",
        f"- measured {record['measured_at']} on {record['instances']} instance(s); image "
        f"{target.get('image_tag', 'not known (URL target)')}",
        _ceiling_line(record),
        *([f"- **not a measurement of any instance type**: {target['stand_in']}"] if target.get("stand_in") else []),
        f"- in flight per instance at that rate: {record['concurrent_requests_per_instance_at_slo']}",
        f"- sweep ended: {record['stopped']}" + ("" if record["complete"] else " (**incomplete**)"),
        f"- {steps_text(record)}" + _answer_step_text(record),
        f"- workload: {record['workload'].get('source')}",
        *_conversation_lines(record),
        "",
        "| step | offered/min | answered within objective/min | answered/min | requests | errors | shed | TTFT p50 "
        "| TTFT p95 | TTFT p99 | TTFT p95 turn 1 / later | ITL p95 | E2E p95 | prompt p95 | prefix cache hits "
        "| tokens/s | in flight | send lag p99 | verdict |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: | --- |",
    ]
    for number, step in enumerate(record["steps"], start=1):
        cells = [
            str(number) + (" (partial)" if step_result(step) == INTERRUPTED else ""),
            f"{step['offered_rpm']:,.0f}", _rate(step.get("answered_within_objective_rpm")),
            f"{step['achieved_rpm']:,.0f}", str(step["requests"]),
            _count(step["errors"], step["error_percent"]), _count(step.get("shed", 0), step.get("shed_percent", 0.0)),
            _ms(step["ttft_p50_ms"]), _ms(step["ttft_p95_ms"]),
            _ms(step["ttft_p99_ms"]), _first_and_later(step), _ms(step["itl_p95_ms"]), _ms(step["e2e_p95_ms"]),
            _tokens(step.get("prompt_tokens_p95")), _percent(step.get("prefix_cache_hit_percent")),
            f"{step['output_tokens_per_s']:,.0f}", f"{step['mean_in_flight']:.1f}", _ms(step["send_lag_p99_ms"]),
            shown(step_result(step), step["verdict"]),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Rates are per instance, per minute of the step's schedule; every time is measured from the request's "
        "scheduled send time (open loop). Answered within objective: answered without error, first token within "
        f"{record['slo']['ttft_p95_ms']:g} ms of its scheduled send time; shed requests (429) never count. The answer "
        "is the highest such rate among the steps that held, never a rate offered.",
    ]
    return "\n".join([*lines, *_turn_table(record)]) + "\n"


def _answer_step_text(record: dict[str, Any]) -> str:
    number = record.get("answer_step")
    return "" if number is None else f"; the answer is step {number}'s"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _count(count: int, percent: float) -> str:
    return f"{count} ({percent:.1f} %)"


def _first_and_later(step: dict[str, Any]) -> str:
    first, later = step.get("ttft_first_turn_p95_ms"), step.get("ttft_later_turns_p95_ms")
    return "-" if first is None and later is None else f"{_ms(first)} / {_ms(later)}"


def _tokens(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} %"


def _conversation_lines(record: dict[str, Any]) -> list[str]:
    """The conversation workload's shape, under the workload's line; nothing for single turns."""
    conversation = record["workload"].get("conversation")
    if not conversation:
        return []
    turns, think, contexts = conversation["turns"], conversation["think_seconds"], conversation["contexts"]
    warmup = record["settings"].get("warmup_seconds") or 0
    return [
        f"- conversations: {turns['mean_after_cap']:g} turns a session on average (p95 {turns['p95']}, at most "
        f"{turns['max']}), think time median {think['median']:g} s; prompts within "
        f"{conversation['context_budget_tokens']:,} tokens (p95 context {contexts['p95_tokens']:,} tokens); each "
        f"step measured after {warmup:g} s of warm-up; the next turn is sent its think time after the previous "
        "answer's last token"
    ]


def _turn_table(record: dict[str, Any]) -> list[str]:
    """TTFT and prompt tokens by turn index at the answer's rate (or, with no answer, the last step)."""
    number = record.get("answer_step")
    steps = [s for s in record["steps"] if s.get("by_turn")]
    chosen = record["steps"][number - 1] if number else None
    chosen = chosen if chosen and chosen.get("by_turn") else (steps[-1] if steps else None)
    if chosen is None:
        return []
    lines = [
        "",
        f"## By turn at {chosen['offered_rpm']:,.0f} requests/min per instance offered",
        "",
        "| turns | requests | TTFT p50 | TTFT p95 | prompt tokens p50 | prompt tokens p95 | trimmed |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for group in chosen["by_turn"]:
        cells = [group["turns"], str(group["requests"]), _ms(group["ttft_p50_ms"]), _ms(group["ttft_p95_ms"]),
                 _tokens(group["prompt_tokens_p50"]), _tokens(group["prompt_tokens_p95"]), str(group["trimmed"])]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    hits = chosen.get("prefix_cache_hit_percent")
    lines += ["", f"Prefix cache over the step: {_percent(hits)} of prompt tokens found cached"
              + ("" if hits is not None else " (not exposed: the target has no /metrics; see docs/how-to/measure-capacity.md)")]  # fmt: skip
    return lines


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} ms"


def plot(record: dict[str, Any], path: Path) -> None:
    import matplotlib.pyplot as plt

    drawn = figure(record)
    drawn.savefig(path, dpi=110)
    plt.close(drawn)


def figure(record: dict[str, Any]) -> Any:
    """capacity.png as a matplotlib Figure (the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = sorted(record["steps"], key=lambda s: s["offered_rpm"])
    offered = [s["offered_rpm"] for s in steps]
    drawn, latency = plt.subplots(figsize=(9, 5))
    for key, label, style in (
        ("ttft_p50_ms", "TTFT p50", "o-"), ("ttft_p95_ms", "TTFT p95", "s-"),
        ("ttft_first_turn_p95_ms", "TTFT p95, first turns", "v--"),
        ("ttft_later_turns_p95_ms", "TTFT p95, later turns", "^--"),
    ):  # fmt: skip
        points = [(o, s.get(key)) for o, s in zip(offered, steps, strict=True) if s.get(key) is not None]
        if not points:
            continue
        latency.plot([p[0] for p in points], [p[1] for p in points], style, label=label)
    slo = record["slo"]["ttft_p95_ms"]
    latency.axhline(slo, color="red", linestyle="--", label=f"objective: TTFT p95 {slo:g} ms")
    latency.set_xlabel("offered requests/min per instance (open loop)")
    latency.set_ylabel("time to first token (ms)")
    throughput = latency.twinx()
    throughput.plot(offered, [s["achieved_rpm"] for s in steps], "^:", color="grey", label="answered/min")
    within = [(o, s["answered_within_objective_rpm"]) for o, s in zip(offered, steps, strict=True)
              if s.get("answered_within_objective_rpm") is not None]  # fmt: skip
    if within:
        throughput.plot([w[0] for w in within], [w[1] for w in within], "D:", color="black",
                        label="answered within objective/min")  # fmt: skip
    throughput.set_ylabel("answered requests/min per instance")
    answer = record["requests_per_minute_per_instance"]
    if answer is not None:  # an answered rate: on the answered axis, never the offered one
        throughput.axhline(answer, color="green", linestyle=":", label=f"answer: {answer:,.0f}/min answered")
    handles = latency.get_legend_handles_labels()[0] + throughput.get_legend_handles_labels()[0]
    labels = latency.get_legend_handles_labels()[1] + throughput.get_legend_handles_labels()[1]
    latency.legend(handles, labels, loc="upper left", fontsize="small")
    latency.set_title(title(record), fontsize="medium", color="black" if record["complete"] else "darkred")
    drawn.tight_layout()
    return drawn


def write(outcome: SweepOutcome, facts: RunFacts, out: Path, drawn: bool = True) -> dict[str, Any]:
    """capacity.json and capacity.md, and with `drawn` capacity.png: 1-3 s of plotting on this machine,
    left out after each step (a step's time is the budget's) and drawn once at the end."""
    out.mkdir(parents=True, exist_ok=True)
    record = document(outcome, facts)
    (out / "capacity.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / "capacity.md").write_text(markdown(record))
    if drawn and record["steps"]:
        plot(record, out / "capacity.png")
    return record
