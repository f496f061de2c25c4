"""Hostile or careless configs, generated: refused with the field named, never a traceback (issue 12).

Each test generates one class of input with hypothesis and loads it through the real loader. Example
counts stay small (each load simulates the schedules); runs are derandomised so CI sees the same cases.
"""

from __future__ import annotations

import copy
import math
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from config import ConfigError, load_config_file, load_environment
from config.checks import known_regions
from config.checks.engine import check_vllm_startup
from config.checks.scaling import _check_dst
from config.container_env import container_environment
from config.loader import ENVIRONMENTS_DIR, display_path
from config.problems import MAX_MESSAGE_CHARS
from config.schedules import Cron, CronError, _tzdata_names, time_zone
from config.schema import Engine
from container.serving import contract
from container.serving.settings import Settings, SettingsError
from tests.config.config_mutations import MUTATIONS

PROD_TEXT = (ENVIRONMENTS_DIR / "prod.yaml").read_text()
PROD = YAML(typ="safe", pure=True).load(PROD_TEXT)
# Each example that loads a whole config costs ~0.2 s (the schedule simulation): a few per class.
FEW = settings(max_examples=8, deadline=None, database=None, derandomize=True,
               suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
MANY = settings(FEW, max_examples=25)  # for tests that do not load a config


def load_text(text: str | bytes, name: str = "prod.yaml") -> tuple[str, list[tuple[str, str]]]:
    """(the file's displayed path, problems) for a prod file with this content; [] when accepted."""
    folder = Path(tempfile.mkdtemp())
    path = folder / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    try:
        load_config_file(path, "prod")
    except ConfigError as error:
        assert error.source == display_path(path)
        return error.source, error.problems
    return display_path(path), []


def load_raw(raw: dict) -> list[tuple[str, str]]:
    folder = Path(tempfile.mkdtemp())
    with (folder / "prod.yaml").open("w") as handle:
        YAML().dump(raw, handle)
    return load_text((folder / "prod.yaml").read_bytes())[1]


def leaves(node: object, path: tuple = ()) -> list[tuple[tuple, object]]:
    """Every scalar in the YAML with its key path."""
    if isinstance(node, dict):
        return [leaf for key, value in node.items() for leaf in leaves(value, (*path, key))]
    if isinstance(node, list):
        return [leaf for index, value in enumerate(node) for leaf in leaves(value, (*path, index))]
    return [(path, node)]


def dotted(path: tuple) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else (f".{part}" if i else part) for i, part in enumerate(path))


def with_value(path: tuple, value: object) -> dict:
    raw = copy.deepcopy(PROD)
    node = raw
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return raw


NUMBERS = [(path, value) for path, value in leaves(PROD) if type(value) in (int, float)]
STRINGS = [(path, value) for path, value in leaves(PROD) if isinstance(value, str)]


# --- every problem at once ------------------------------------------------------------------------


@FEW
@given(st.lists(st.sampled_from(MUTATIONS), min_size=2, max_size=8, unique_by=lambda m: m.name))
def test_every_mistake_is_reported_whatever_else_is_wrong(chosen) -> None:
    raw = copy.deepcopy(PROD)
    for mutation in chosen:
        mutation.apply(raw)
    paths = {path for path, _ in load_raw(raw)}
    assert {m.path for m in chosen} <= paths


# --- numbers: .inf/.nan and upper bounds ----------------------------------------------------------


@FEW
@given(st.sampled_from(NUMBERS), st.sampled_from([math.inf, -math.inf, math.nan]))
def test_inf_and_nan_are_refused_at_their_field(leaf, value) -> None:
    path, _ = leaf
    found = load_raw(with_value(path, value))
    assert any(p == dotted(path) and m.endswith(f", got {value!r}") for p, m in found), found


@FEW
@given(st.sampled_from(NUMBERS), st.integers(min_value=7, max_value=40))
def test_absurdly_large_numbers_are_refused_naming_the_field(leaf, exponent) -> None:
    """Counts, capacities and thresholds all have a ceiling (10^12 instances, 10^15 ms thresholds)."""
    path, _ = leaf
    found = load_raw(with_value(path, 10**exponent))
    field = dotted(path)
    assert any(p == field or field in message for p, message in found), found
    assert all(len(message) <= MAX_MESSAGE_CHARS for _, message in found)


# --- files: encoding, aliases, message length -----------------------------------------------------


@FEW
@given(
    st.integers(min_value=0, max_value=len(PROD_TEXT)),
    st.sampled_from([b"\x80", b"\xbf", b"\xc0", b"\xff", b"\xe3\x81"]),
)
def test_a_stray_byte_names_the_file_and_line(position, stray) -> None:
    data = PROD_TEXT.encode()
    source, found = load_text(data[:position] + stray + data[position:])
    assert source.endswith("prod.yaml")
    assert found[0][0] == "(file)" and "is not UTF-8" in found[0][1] and "line" in found[0][1]


def test_utf16_is_named() -> None:
    for encoding in ("utf-16", "utf-16-le", "utf-16-be"):  # with and without a byte-order mark
        _, found = load_text(PROD_TEXT.encode(encoding))
        assert len(found) == 1 and found[0][0] == "(file)" and "UTF-16" in found[0][1], (encoding, found)


def test_billion_laughs_is_refused_before_it_expands() -> None:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    _, found = load_text("\n".join(lines) + "\n")
    assert found == [
        ("(file)", "line 1, column 5: YAML anchors and aliases (&name, *name) are not allowed; write the values out")
    ]


@FEW
@given(st.sampled_from(STRINGS))
def test_an_anchor_anywhere_is_refused(leaf) -> None:
    path, value = leaf
    text = PROD_TEXT + f"\nextra_key: &x {value!r}\nother: *x\n"
    assert load_text(text)[1][0][1].endswith(
        "YAML anchors and aliases (&name, *name) are not allowed; write the values out"
    )


@FEW
@given(st.sampled_from(STRINGS), st.text(min_size=300, max_size=5000))
def test_huge_values_make_short_messages(leaf, value) -> None:
    path, _ = leaf
    found = load_raw(with_value(path, value))
    assert found, "a 300+ character value passed every field"
    for field, message in found:
        assert len(field) <= 200 and len(message) <= MAX_MESSAGE_CHARS
    assert any(p == dotted(path) for p, _ in found) or any(dotted(path) in m for _, m in found)


def test_a_huge_unknown_key_stays_short() -> None:
    _, found = load_text(PROD_TEXT + f"\n{'k' * 1000}: 1\n")
    assert len(found) == 1 and len(found[0][0]) < 120 and found[0][1].startswith("unknown setting")
    _, found = load_text(PROD_TEXT + f"\n{'k' * 100_000}: 1\n")  # past YAML's 1024-character simple keys
    assert len(found) == 1 and len(found[0][1]) < MAX_MESSAGE_CHARS


def test_thousands_of_problems_are_cut_to_a_readable_list() -> None:
    raw = copy.deepcopy(PROD)
    raw["engine"]["adapters"] = [f"bad name {i}" for i in range(500)]
    folder = Path(tempfile.mkdtemp())
    with (folder / "prod.yaml").open("w") as handle:
        YAML().dump(raw, handle)
    try:
        load_config_file(folder / "prod.yaml", "prod")
    except ConfigError as error:
        text = str(error)
    assert "... and" in text and text.count("\n") <= 52


def test_the_file_is_named_by_its_path_not_a_stream() -> None:
    source, found = load_text("variants: [unclosed\n")
    assert source.endswith("prod.yaml") and "unicode string" not in found[0][1]
    assert found[0][1].startswith("not valid YAML: line 2, column 1:")


# --- regions --------------------------------------------------------------------------------------


@FEW
@given(st.from_regex(r"\A[a-z]{2}(-[a-z]{1,12}){1,2}-[0-9]\Z"))
def test_a_region_unknown_to_aws_cdk_lib_is_refused(region) -> None:
    found = dict(load_raw(with_value(("region",), region)))
    if region in known_regions():
        assert "region" not in found
    else:
        assert found["region"].startswith("not a region aws-cdk-lib ") and found["region"].endswith(f"got '{region}'")


# --- adapter names: one rule for synth and the container ------------------------------------------

TRICKY_NAMES = ["base", "a b", "a/b", "..", "a,b", " a", "a=b", ".hidden", "x" * 65, "ok_name-1.2", "Base", ""]


def container_reads(names: list[str]) -> tuple[str, ...] | None:
    """What the container's reader makes of these adapters (None: it refuses to start)."""
    cfg = load_environment("prod")
    env = container_environment(cfg, cfg.variants[0])
    env[contract.ENV_LORA_ADAPTERS] = ",".join(names)
    try:
        return Settings.from_env(env).adapters
    except SettingsError:
        return None


@FEW
@given(st.one_of(st.sampled_from(TRICKY_NAMES), st.text(max_size=70)))
def test_synth_refuses_exactly_the_adapter_names_the_container_refuses_or_splits(name) -> None:
    raw = copy.deepcopy(PROD)
    raw["engine"]["adapters"] = ["manga_domain_v3", name]
    refused_at_synth = any(path == "engine.adapters[1]" for path, _ in load_raw(raw))
    container_ok = container_reads(raw["engine"]["adapters"]) == tuple(raw["engine"]["adapters"])
    assert refused_at_synth == (not container_ok)


# --- time zones and DST ---------------------------------------------------------------------------

CANONICAL, ALIASES = _tzdata_names()


@MANY
@given(st.sampled_from(sorted(CANONICAL)), st.sampled_from(["", "right/", "posix/"]))
def test_only_canonical_tzdata_names_are_time_zones(zone, prefix) -> None:
    if prefix:
        try:
            time_zone(prefix + zone)
        except CronError as error:
            assert "unknown IANA time zone" in str(error)
        else:
            raise AssertionError(f"{prefix + zone} accepted")
    else:
        assert time_zone(zone).key == zone


@MANY
@given(st.sampled_from(sorted(ALIASES)))
def test_aliases_name_their_canonical_zone(alias) -> None:
    if alias == "UTC":
        return
    try:
        time_zone(alias)
    except CronError as error:
        assert f"use {ALIASES[alias]}" in str(error)
    else:
        raise AssertionError(f"alias {alias} accepted")


NEW_YORK = time_zone("America/New_York")


@MANY
@given(st.integers(min_value=0, max_value=59), st.sampled_from([(2, 3, "does not exist"), (1, 11, "happens twice")]))
def test_a_window_edge_in_a_dst_gap_or_fold_is_refused_with_the_day(minute, case) -> None:
    hour, month, what = case
    found = _check_dst(
        "autoscaling.primary.schedules[3].start", Cron(f"cron({minute} {hour} ? {month} SUN *)"), NEW_YORK
    )
    assert (
        len(found) == 1 and what in found[0][1] and f"{hour:02d}:{minute:02d} America/New_York on 2026-" in found[0][1]
    )
    assert _check_dst("x", Cron(f"cron({minute} {hour + 2} ? {month} SUN *)"), NEW_YORK) == []


def test_dst_check_covers_the_years_a_date_cron_can_hit() -> None:
    """8 March is the change day in 2026 only; 14 March in 2027: both found, not just one year."""
    assert "on 2026-03-08" in _check_dst("x", Cron("cron(30 2 8 3 ? *)"), NEW_YORK)[0][1]
    assert "on 2027-03-14" in _check_dst("x", Cron("cron(30 2 14 3 ? *)"), NEW_YORK)[0][1]
    assert _check_dst("x", Cron("cron(30 2 8 3 ? 2027)"), NEW_YORK) == []


# --- schedules the fixed simulated weeks never see ------------------------------------------------


@FEW
@given(
    st.integers(min_value=1, max_value=12),
    st.integers(min_value=1, max_value=31),
    st.sampled_from(["*", "2024", "2026", "2027", "2031"]),
)
def test_a_window_outside_the_simulated_weeks_is_checked_not_crashed(month, day, year) -> None:
    raw = copy.deepcopy(PROD)
    raw["autoscaling"]["primary"]["schedules"].append(
        {
            "name": "sale",
            "timezone": "Asia/Tokyo",
            "start": f"cron(0 8 {day} {month} ? {year})",
            "end": f"cron(0 12 {day} {month} ? {year})",
            "min_capacity": 6,
        }
    )
    found = load_raw(raw)
    assert all(path.startswith("autoscaling.primary.schedules") for path, _ in found), found
    if year == "2024":
        assert any("sale never starts on or after 2026-01-01" in message for _, message in found)


def test_a_december_sale_that_overlaps_the_evening_peak_is_found() -> None:
    """Before: never fired in the January/July fortnights, so the overlap check crashed on zip()."""
    raw = copy.deepcopy(PROD)
    raw["autoscaling"]["primary"]["schedules"].append(
        {
            "name": "december-sale",
            "timezone": "Asia/Tokyo",
            "start": "cron(0 12 ? 12 SAT *)",
            "end": "cron(0 20 ? 12 SAT *)",
            "min_capacity": 8,
        }  # fmt: skip
    )
    found = load_raw(raw)
    assert any("december-sale and tokyo-evening-peak overlap" in m or "tokyo-evening-peak and december-sale" in m
               for _, m in found), found  # fmt: skip


def test_a_cron_firing_every_minute_is_refused_without_simulating_it() -> None:
    raw = copy.deepcopy(PROD)
    raw["autoscaling"]["primary"]["schedules"] = [
        {
            "name": "busy",
            "timezone": "UTC",
            "start": "cron(* * * * ? *)",
            "end": "cron(30 * * * ? *)",
            "min_capacity": 3,
        }
    ]
    assert load_raw(raw) == [
        (
            "autoscaling.primary.schedules",
            "busy fires more than 24 times a day; a scheduled window raises capacity for hours (each change "
            "takes minutes to provision): use target tracking for faster changes",
        )
    ]


# --- vLLM start-up rules, bake, warmup ------------------------------------------------------------


@MANY
@given(
    st.integers(min_value=1, max_value=512),
    st.integers(min_value=1, max_value=40_000),
    st.integers(min_value=1, max_value=256),
)
def test_vllm_start_up_rules(max_num_seqs, max_num_batched_tokens, block_size) -> None:
    """vllm/config/scheduler.py (batched tokens vs sequences) and the CUDA backends' block sizes."""
    engine = Engine.model_validate(
        {
            **PROD["engine"],
            "max_num_seqs": max_num_seqs,
            "max_num_batched_tokens": max_num_batched_tokens,
            "block_size": block_size,
            "max_loras": 1,
        }  # fmt: skip
    )
    fields = {path for path, _ in check_vllm_startup(engine)}
    batched_ok = max_num_seqs <= max_num_batched_tokens <= max_num_seqs * engine.max_model_len
    assert ("engine.max_num_batched_tokens" not in fields) == batched_ok
    assert ("engine.block_size" not in fields) == (block_size % 16 == 0)


@FEW
@given(st.sampled_from(["ALL_AT_ONCE", "CANARY", "LINEAR"]), st.sampled_from([0, 60, 599, 600, 900]))
def test_prod_bakes_whatever_the_routing(routing, wait) -> None:
    raw = copy.deepcopy(PROD)
    raw["deployment"].update(
        traffic_routing=routing, wait_interval_seconds=wait, maximum_execution_timeout_seconds=7200
    )
    raw["deployment"]["step_size"] = {"type": "CAPACITY_PERCENT", "value": 25 if routing == "LINEAR" else 10}
    refused = "deployment.wait_interval_seconds" in {path for path, _ in load_raw(raw)}
    assert refused == (wait < 600)


@FEW
@given(st.integers(min_value=60, max_value=3600), st.integers(min_value=1, max_value=3600))
def test_warmup_must_fit_inside_the_startup_timeout(startup, warmup) -> None:
    raw = copy.deepcopy(PROD)
    raw["container"].update(startup_health_check_timeout_seconds=startup, warmup_timeout_seconds=warmup)
    refused = "container.warmup_timeout_seconds" in {path for path, _ in load_raw(raw)}
    assert refused == (warmup >= startup)
