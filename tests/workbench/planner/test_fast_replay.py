"""The fast replay (planner.quiet fast-forwards quiet minutes with numpy) gives exactly what replaying
every minute one at a time gives: every series, every event, on the shipped configs and under an outage, and
so the same plans."""

from dataclasses import asdict
from functools import partial

import pytest

from config.loader import load_catalog, load_environment
from workbench.planner import build
from workbench.planner.build import build_plan, limits, variant_models
from workbench.planner.environment_traffic import traffic_of
from workbench.planner.outages import availability, parse_outage
from workbench.planner.simulate import simulate
from workbench.planner.summary import render_summary


def replay(env: str, *, fast: bool, outage: str = "", capacity_factor: float = 1.0, provisioning: int | None = None):
    cfg = load_environment(env, against_deployed=False)
    traffic = traffic_of(cfg, None)
    types = [t for v in cfg.variants for t in v.instance_types]
    outages = parse_outage(outage, traffic, types) if outage else []
    models = variant_models(cfg, load_catalog(), traffic, with_schedules=True, capacity_factor=capacity_factor)
    return simulate(
        models, list(traffic.requests_per_minute), traffic.start, key="configured", title="t",
        provisioning_minutes=cfg.planning.provisioning_minutes if provisioning is None else provisioning,
        available=availability(outages), fast=fast, **limits(cfg),
    )  # fmt: skip


@pytest.mark.parametrize(
    "env, options",
    [
        ("prod", {}),  # staging and dev: their plans below
        ("prod", {"outage": "ml.g5.xlarge@friday-chapters"}),
        ("prod", {"capacity_factor": 0.8, "provisioning": 12}),  # queues and rejections: the margin's replays
    ],
)
def test_fast_replay_equals_the_minute_by_minute_replay(env: str, options: dict) -> None:
    fast, slow = replay(env, fast=True, **options), replay(env, fast=False, **options)
    assert [asdict(e) for e in fast.events] == [asdict(e) for e in slow.events]
    for name, series in slow.variants.items():
        assert asdict(fast.variants[name]) == asdict(series), name


@pytest.mark.parametrize("env", ["dev", "staging", "prod"])
def test_the_plan_from_the_fast_replay_is_the_reference_replays(env: str, monkeypatch) -> None:
    """The whole plan (every scenario's totals, the verdict, the headroom line) as the reference replay gives it."""
    cfg = load_environment(env, against_deployed=False)
    traffic, catalog = traffic_of(cfg, None), load_catalog()
    fast = render_summary(build_plan(cfg, catalog, traffic))
    monkeypatch.setattr(build, "simulate", partial(simulate, fast=False))
    assert render_summary(build_plan(cfg, catalog, traffic)) == fast
