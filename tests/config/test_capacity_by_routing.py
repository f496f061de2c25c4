"""Issue 52 items 4 and 5: the ceiling counts cached prefixes only as far as the routing keeps them, and the
batch comes from the TTFT objective; both move the assumed capacity, and so the plan."""

from __future__ import annotations

from config.checks.vram_budget import kv_sequences
from config.domain.calibration import (
    assumed_share,
    derived_capacity,
    evidence_batch,
    fill_derived_capacity,
    first_token_seconds,
)
from config.domain.physics import instance_ceiling
from config.domain.workload import default_workload_raw, engine_budget, routed_tokens, simulated_turns, without_affinity
from config.loader import load_catalog, load_environment
from config.schema import EnvironmentConfig

CATALOG = load_catalog()
PROD = load_environment("prod", against_deployed=False)


def _with(cfg: EnvironmentConfig, **changes) -> EnvironmentConfig:
    """`cfg` re-validated with `changes` (top-level fields or `alarms` items), so derived figures follow."""
    raw = cfg.model_dump(mode="json")
    raw["planning"]["capacity"] = {}  # derived again from the changed config, as config.loader does
    for key, value in changes.items():
        if key == "ttft_p95_ms":
            raw["alarms"]["ttft_p95_ms"] = value
        else:
            raw[key] = value
    changed = EnvironmentConfig.model_validate(raw)
    fill_derived_capacity(changed, CATALOG, lambda t: kv_sequences(changed, CATALOG, t))
    return changed


def test_a_routing_without_affinity_prefills_later_turns_in_full():
    budget = engine_budget(PROD)
    system = int(default_workload_raw()["system_prompt_tokens"])
    turns = simulated_turns(budget)
    lost = without_affinity(turns, system)
    assert all(t.cached == min(system, t.prompt) for t in lost)
    _, kept_tokens = routed_tokens(budget, True)
    _, lost_tokens = routed_tokens(budget, False)
    assert lost_tokens.uncached == sum(t.prompt - t.cached for t in lost) / len(lost)
    assert lost_tokens.uncached > 2 * kept_tokens.uncached
    assert lost_tokens.cached <= system  # the system prompt at most


def test_routing_changes_the_capacity():
    least = _with(PROD, routing_strategy="LEAST_OUTSTANDING_REQUESTS")
    for instance_type in ("ml.g5.xlarge", "ml.g6.xlarge"):
        kept, lost = PROD.planning.capacity[instance_type], least.planning.capacity[instance_type]
        assert lost.requests_per_minute < kept.requests_per_minute / 2
        assert lost.concurrent_sequences < kept.concurrent_sequences
    ceiling_kept = instance_ceiling(PROD, CATALOG, "ml.g5.xlarge", 16)
    ceiling_lost = instance_ceiling(least, CATALOG, "ml.g5.xlarge", 16)
    assert ceiling_lost.default.prefill_seconds > 2 * ceiling_kept.default.prefill_seconds


def test_the_objective_changes_the_batch_the_capacity_and_the_target():
    tight = _with(PROD, ttft_p95_ms=280)
    g5, tight_g5 = PROD.planning.capacity["ml.g5.xlarge"], tight.planning.capacity["ml.g5.xlarge"]
    assert tight_g5.concurrent_sequences < g5.concurrent_sequences
    assert tight_g5.requests_per_minute < g5.requests_per_minute
    share = assumed_share(CATALOG).share
    at = instance_ceiling(tight, CATALOG, "ml.g5.xlarge", tight_g5.concurrent_sequences)
    above = instance_ceiling(tight, CATALOG, "ml.g5.xlarge", tight_g5.concurrent_sequences + 1)
    assert first_token_seconds(at.default, share) <= 0.28 < first_token_seconds(above.default, share)


def test_the_batch_never_passes_the_published_evidence():
    loose = _with(PROD, ttft_p95_ms=5000)
    assert loose.planning.capacity["ml.g5.xlarge"].concurrent_sequences == evidence_batch(CATALOG) == 16
    kv = lambda t: kv_sequences(PROD, CATALOG, t)  # noqa: E731
    assert derived_capacity(PROD, CATALOG, "ml.g5.xlarge", kv) == PROD.planning.capacity["ml.g5.xlarge"]
