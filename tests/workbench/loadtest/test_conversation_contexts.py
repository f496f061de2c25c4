"""The contexts the conversation workload produces, computed from config/domain/workload.yaml alone, and the
VRAM budget check that holds `planning.capacity.<type>.concurrent_sequences` to them: an assumed
figure the KV cache cannot hold at the p95 context is refused with the numbers, a measured one warned."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from config import ConfigError, load_config_file, load_environment
from config.checks.vram_budget import check_vram_budget, kv_context_warnings
from config.domain.workload import default_contexts, engine_contexts, mean_turns, workload_contexts
from config.loader import ENVIRONMENTS_DIR, load_catalog
from workbench.loadtest.conversations import load_workload
from workbench.loadtest.workload import DEFAULT_WORKLOAD

RAW = YAML(typ="safe", pure=True).load(DEFAULT_WORKLOAD.read_text())
PROD = YAML(typ="safe", pure=True).load((ENVIRONMENTS_DIR / "prod.yaml").read_text())
MEASURED = {"where": "staging/canary", "measured_at": "2026-11-25T03:00:00+00:00", "slo_ttft_p95_ms": 500.0}


def test_the_turns_distribution_has_the_seeds_mean_and_share_beyond_eight_turns():
    stay = 1 - 1 / 4.2
    assert stay**8 == pytest.approx(0.12, abs=0.01)  # "conversations exceeding 8 turns (top 12% of sessions)"
    assert mean_turns(4.2, 35) == pytest.approx(4.2, abs=0.001)  # "average MangaAssist session: 4.2 turns"
    turns = load_workload("conversations").describe()["conversation"]["turns"]
    assert (turns["p50"], turns["p95"], turns["p99"]) == (3, 12, 17)  # what config/domain/workload.yaml says


def test_the_p95_context_is_computed_from_the_file_alone_and_stays_within_the_budget():
    contexts = workload_contexts(RAW, 3496)
    assert contexts == workload_contexts(RAW, 3496)  # no server, no clock: the same figure every time
    answer_max = RAW["answer_tokens"]["max"]
    assert contexts.p95_prompt_tokens <= 3496 < contexts.p95_tokens <= 3496 + answer_max
    # Well above what one single turn holds (system + user + answer medians: ~855), and the configured
    # minimum per sequence (768): what the check used to stop at.
    assert contexts.mean_tokens > 2 * (400 + 275 + 180) and 0 < contexts.trimmed_percent < 50
    # A smaller engine budget trims more and shortens the contexts.
    tighter = workload_contexts(RAW, 2048)
    assert tighter.p95_tokens < contexts.p95_tokens and tighter.trimmed_percent > contexts.trimmed_percent


def test_the_engine_budget_lowers_the_workload_s():
    cfg = load_environment("prod")
    assert engine_contexts(cfg) == default_contexts(4096 - 600)
    assert default_contexts(1448).budget_tokens == 1448


def prod_with(tmp_path: Path, capacity: dict) -> Path:
    raw = copy.deepcopy(PROD)
    raw.setdefault("planning", {})["capacity"] = {"ml.g5.xlarge": capacity}
    path = tmp_path / "prod.yaml"
    with path.open("w") as handle:
        YAML().dump(raw, handle)
    return path


def test_shipped_configs_hold_their_assumed_sequences_at_the_p95_context():
    catalog = load_catalog()
    for env in ("dev", "staging", "prod"):
        cfg = load_environment(env)
        assert check_vram_budget(cfg, catalog) == [] and kv_context_warnings(cfg, catalog) == []


def test_an_assumed_concurrency_the_kv_cache_cannot_hold_at_the_p95_context_is_refused_with_the_numbers(tmp_path):
    contexts = default_contexts(3496)
    # 14.28 GiB of KV cache at 128 KiB a token holds 116,981 tokens: 32 sequences of ~3,600 tokens.
    held = math.floor(116_981 / contexts.p95_tokens)
    with pytest.raises(ConfigError) as refused:
        load_config_file(prod_with(tmp_path, {"requests_per_minute": 132, "concurrent_sequences": held + 1}), "prod")
    problems = [f"{path}: {message}" for path, message in refused.value.problems]
    assert len(problems) == 2, problems  # both variants run on ml.g5.xlarge (the rate is within the ceiling)
    assert problems[0].startswith(
        f"variants[0].instance_type: ml.g5.xlarge's KV cache cannot hold planning.capacity.ml.g5.xlarge."
        f"concurrent_sequences {held + 1} (assumed: 132/min, never measured (`bin/loadtest`)) at the conversation "
        f"workload's p95 context {contexts.p95_tokens:,} tokens"
    )
    assert f"{held + 1} x {contexts.p95_tokens:,} tokens x 128 KiB/token = " in problems[0]
    assert f"leaves 14.28 GiB for the KV cache: it holds {held} such sequences" in problems[0]
    assert problems[0].endswith("lower concurrent_sequences, or pick a larger GPU")
    # One sequence fewer fits.
    load_config_file(prod_with(tmp_path, {"requests_per_minute": 132, "concurrent_sequences": held}), "prod")


def test_a_measured_concurrency_beyond_the_arithmetic_is_a_warning_not_a_refusal(tmp_path):
    path = prod_with(tmp_path, {"requests_per_minute": 274, "concurrent_sequences": 60, "measured": MEASURED})
    cfg = load_config_file(path, "prod")
    warnings = kv_context_warnings(cfg, load_catalog())
    assert len(warnings) == 1 and warnings[0].startswith("prod: ml.g5.xlarge's KV cache cannot hold")
    assert "concurrent_sequences 60 (measured: 274/min on staging/canary 2026-11-25" in warnings[0]
    assert warnings[0].endswith("(a measured figure: check that its run used conversations)")
