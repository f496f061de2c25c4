"""The physical ceiling (config.physics) against published measurements (config/calibration.yaml), and
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
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import Field
from ruamel.yaml import YAML

from config.physics import Ceiling, Hardware, Roofline, arithmetic, ceiling_if_known, roofline
from config.schema import Catalog, EnvironmentConfig, Strict
from config.workload import fixed_tokens

CALIBRATION_FILE = Path(__file__).with_name("calibration.yaml")
# The seeds' TTFT objective (alarms.ttft_p95_ms in prod and staging): a run whose MEAN TTFT is above it
# cannot have held a p95 at it.
SLO_TTFT_MS = 500


class Measurement(Strict):
    """One published run (config/calibration.yaml)."""

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
        raise ValueError(f"config/calibration.yaml: no measurement with a mean TTFT within {SLO_TTFT_MS} ms")
    lowest = min(within, key=lambda c: c.efficiency)
    return AssumedShare(
        share=lowest.efficiency,
        basis=(
            f"the lowest measured ÷ ceiling of the {len(within)} published run(s) within the {SLO_TTFT_MS} ms TTFT "
            f"objective: {lowest.measurement.id}, config/calibration.yaml"
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
    return line
