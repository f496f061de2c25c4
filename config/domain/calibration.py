"""The physical ceiling (config.domain.physics) against published measurements (config/domain/calibration.yaml), and
the share of the ceiling an instance is assumed to serve until `bin/loadtest` measures it.

Each measurement gets the model's ceiling for its own GPUs, model, request shape and concurrency, and
an efficiency: measured ÷ ceiling. A ceiling below a measurement would be a wrong model
(tests/stacks/test_calibration.py holds every one at or below). The assumed share is the LOWEST efficiency
among the measurements that ran within the latency objective (a published mean TTFT at or below
SLO_TTFT_MS): how much of the ceiling a real engine delivered while serving as we must, on the worst
evidence we have. Runs beyond the objective (queues of seconds) show the ceiling holds there too,
but serve no one within it, so they do not set the share.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import Field
from ruamel.yaml import YAML

from config.domain.physics import (
    Ceiling,
    Hardware,
    Roofline,
    arithmetic,
    ceiling_if_known,
    hardware,
    instance_ceiling,
    keeps_conversation,
    known_hardware,
    roofline,
    routing_cache,
)
from config.domain.workload import engine_budget, fixed_tokens, routed_tokens
from config.schema import ASSUMED_CAPACITY, Catalog, EnvironmentConfig, InstanceCapacity, Strict

CALIBRATION_FILE = Path(__file__).with_name("calibration.yaml")
# The seeds' TTFT objective (alarms.ttft_p95_ms in prod and staging): a run whose MEAN TTFT is above it
# cannot have held a p95 at it.
SLO_TTFT_MS = 500


class Measurement(Strict):
    """One published run (config/domain/calibration.yaml)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    gpu: str
    gpu_count: int = Field(ge=1)
    model: str
    engine: str = Field(min_length=1)
    prompt_tokens: float = Field(gt=0)
    output_tokens: float = Field(gt=0)
    concurrency: int = Field(ge=1)
    output_tokens_per_second: float = Field(gt=0)
    mean_ttft_ms: float | None = Field(default=None, gt=0)
    source: str = Field(min_length=1)

    @property
    def requests_per_minute(self) -> float:
        """What the engine answered (its published output tokens a second over the tokens of an
        answer: answers served), never a rate offered to it."""
        return 60 * self.output_tokens_per_second / self.output_tokens

    @property
    def within_objective(self) -> bool:
        return self.mean_ttft_ms is not None and self.mean_ttft_ms <= SLO_TTFT_MS


class CalibrationFile(Strict):
    measurements: list[Measurement] = Field(min_length=1)


@dataclass(frozen=True)
class Calibrated:
    """A measurement beside the model's ceiling for it."""

    measurement: Measurement
    ceiling: Roofline
    hardware: Hardware

    @property
    def efficiency(self) -> float:
        return self.measurement.requests_per_minute / self.ceiling.requests_per_minute


@cache
def measurements() -> tuple[Measurement, ...]:
    raw = YAML(typ="safe", pure=True).load(CALIBRATION_FILE.read_text())
    return tuple(CalibrationFile.model_validate(raw).measurements)


def calibrate(catalog: Catalog, measured: tuple[Measurement, ...] | None = None) -> list[Calibrated]:
    """Every measurement with the model's ceiling for it (KeyError for a GPU or model not in the catalog)."""
    found = []
    for m in measured if measured is not None else measurements():
        hw = Hardware.of(catalog.gpus[m.gpu], m.gpu_count, catalog.models[m.model])
        tokens = fixed_tokens(
            f"{m.prompt_tokens:,.0f} in / {m.output_tokens:,.0f} out", m.prompt_tokens, m.output_tokens, m.source
        )
        found.append(Calibrated(m, roofline(hw, tokens, m.concurrency), hw))
    return found


@dataclass(frozen=True)
class AssumedShare:
    share: float
    basis: str  # which measurement sets it, and why that one

    def describe(self) -> str:
        return f"{100 * self.share:.0f} % calibrated ({self.basis})"


def assumed_share(catalog: Catalog, measured: tuple[Measurement, ...] | None = None) -> AssumedShare:
    """The lowest efficiency among the measurements within the objective (see the module's docstring)."""
    within = [c for c in calibrate(catalog, measured) if c.measurement.within_objective]
    if not within:
        raise ValueError(f"config/domain/calibration.yaml: no measurement with a mean TTFT within {SLO_TTFT_MS} ms")
    lowest = min(within, key=lambda c: c.efficiency)
    return AssumedShare(
        share=lowest.efficiency,
        basis=(
            f"the lowest measured ÷ ceiling of the {len(within)} published run(s) within the {SLO_TTFT_MS} ms TTFT "
            f"objective: {lowest.measurement.id}, config/domain/calibration.yaml"
        ),
    )


def assumed_capacity(ceiling: Ceiling, share: float) -> tuple[int, int]:
    """(requests/min, concurrent sequences) assumed at `share` of a ceiling, rounded down to whole
    requests; the sequences are the batch the ceiling was computed at."""
    return math.floor(share * ceiling.requests_per_minute), ceiling.batch


def describe(c: Calibrated) -> str:
    return arithmetic(c.hardware, c.ceiling)


def capacity_provenance(cfg: EnvironmentConfig, catalog: Catalog, instance_type: str) -> str:
    """planning.capacity for `instance_type` in one line for plans and reviews: the figure and where it
    comes from, the physical ceiling with its bound, batch and arithmetic, and for an assumed figure the
    calibrated share it stands on."""
    capacity = cfg.planning.capacity[instance_type]
    found = ceiling_if_known(cfg, catalog, instance_type)
    line = capacity.provenance(found)
    if found is None:
        return f"{line}; no physical ceiling (the catalog lacks the type's GPU figures)"
    line += f"; ceiling ({found.bound}): {found.describe()}"
    if capacity.measured is None:
        line += f"; assumed share {assumed_share(catalog).describe()}"
        line += f"; {batch_provenance(cfg, catalog, instance_type, capacity.concurrent_sequences)}"
    return line


# --- the batch the objective allows (issue 52) ----------------------------------------------------------


def evidence_batch(catalog: Catalog) -> int:
    """The most concurrent sequences a published run held within the objective: beyond it the calibrated
    share is unmeasured (a10g-fp16-c64 at 64 had a 1.08 s mean TTFT), so no assumed batch goes past it."""
    return max(c.measurement.concurrency for c in calibrate(catalog) if c.measurement.within_objective)


def first_token_seconds(r: Roofline, share: float) -> float:
    """A mean arrival's time to first token with `r.batch` sequences running: its own prefill, the decode
    step it joins, and its wait for the prefills ahead of it (M/D/1 on the GPU's prefill time, the share
    rho of its time the roofline spends prefilling), all 1/share slower than the roofline, as calibrated.
    A mean, not a p95: a turn whose own prefill is long (history trimmed, cache lost) waits longer."""
    rho = r.prefill_seconds / (r.prefill_seconds + r.decode_seconds)
    wait = rho * r.prefill_seconds / (2 * (1 - rho))
    return (r.prefill_seconds + r.step_seconds + wait) / share


def objective_batch(hw: Hardware, tokens, share: float, objective_seconds: float, most: int) -> int:
    """The most sequences (1..most) at which a mean arrival's first token still meets the objective; 0
    when even one does not (its prefill alone is too long). The TTFT grows with the batch."""
    found = 0
    for batch in range(1, most + 1):
        if first_token_seconds(roofline(hw, tokens, batch), share) > objective_seconds:
            break
        found = batch
    return found


def derived_capacity(
    cfg: EnvironmentConfig, catalog: Catalog, instance_type: str, kv_limit: Callable[[str], int] | None = None
) -> InstanceCapacity | None:
    """What one `instance_type` is assumed to serve under `cfg`: the batch the TTFT objective allows
    (objective_batch, at most engine.max_num_seqs and the published evidence), and the calibrated share of
    the ceiling at that batch, for the workload cached as the routing keeps it. None without the hardware."""
    if not known_hardware(catalog, instance_type, cfg.engine.model):
        return None
    share = assumed_share(catalog).share
    _, conversations = routed_tokens(engine_budget(cfg), keeps_conversation(cfg))
    single, _ = routed_tokens(engine_budget(cfg), True)
    most = min(cfg.engine.max_num_seqs, evidence_batch(catalog), kv_limit(instance_type) if kv_limit else 1_000_000)
    hw = hardware(catalog, instance_type, cfg.engine.model)
    batch = max(1, objective_batch(hw, conversations or single, share, cfg.alarms.ttft_p95_ms / 1000, most))
    rate, _ = assumed_capacity(instance_ceiling(cfg, catalog, instance_type, batch), share)
    return InstanceCapacity(requests_per_minute=max(rate, 1), concurrent_sequences=batch)


def batch_provenance(cfg: EnvironmentConfig, catalog: Catalog, instance_type: str, batch: int) -> str:
    """Why the batch is what it is, in a phrase: the objective's TTFT at it, and the cap."""
    share = assumed_share(catalog).share
    found = instance_ceiling(cfg, catalog, instance_type, batch)
    ttft = first_token_seconds(found.default, share)
    cap = min(cfg.engine.max_num_seqs, evidence_batch(catalog))
    return (
        f"batch {batch}: a mean arrival's first token {1000 * ttft:,.0f} ms against the {cfg.alarms.ttft_p95_ms} ms "
        f"objective (prefill + a decode step + the prefills ahead, at the calibrated share), at most {cap} (the "
        f"published runs within the objective and engine.max_num_seqs, and what the KV cache holds at the p95 context); "
        f"{routing_cache(cfg)}"
    )


def fill_derived_capacity(
    cfg: EnvironmentConfig, catalog: Catalog, kv_limit: Callable[[str], int] | None = None
) -> None:
    """Replace every assumption the file does not give (ASSUMED_CAPACITY's own object, which
    Planning._assumed_unless_given puts there) by the figure derived for `cfg`, and add one for every other
    type a variant may run on; a figure in the file (measured, or the team's own) stays. `kv_limit`: the
    sequences a type's KV cache holds (config.checks.vram_budget.kv_sequences), a cap on the batch."""
    types = [*ASSUMED_CAPACITY, *(t for v in cfg.variants for t in v.instance_types)]
    for instance_type in dict.fromkeys(types):
        present = cfg.planning.capacity.get(instance_type)
        if present is not None and present is not ASSUMED_CAPACITY.get(instance_type):
            continue
        found = derived_capacity(cfg, catalog, instance_type, kv_limit)
        if found is not None:
            cfg.planning.capacity[instance_type] = found
