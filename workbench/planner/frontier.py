"""What the cost check judges against: the cheapest configuration `bin/plan ENV --tune` found meeting the
budget (planning.frontier), and whether it still applies. The search's result depends on the traffic,
the capacities, prices, provisioning, the objective, the budget and the search space, not on the
scaling config it replaces; a digest of those is stored with the frontier, and a plan whose digest
differs calls the frontier stale (re-run the search) instead of judging against an old figure. The
search runs on planning.traffic; a plan of other traffic (`--traffic week.csv`) whose digest differs
only by its traffic leaves the cost not judged, without failing: that traffic's frontier is unknown, and
re-tuning on it would replace the environment's frontier with one found on a few hours of counts."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from config.domain.prices import prices_for
from config.schema import Catalog, EnvironmentConfig
from workbench.planner.environment_traffic import traffic_of
from workbench.planner.traffic import TrafficError, TrafficProfile

# Bump when the tuner's search space or its rules change (workbench/planner/tune.py): old frontiers become stale.
SEARCH_SPACE_VERSION = 3  # 2: window floors no lower than the variant's min_capacity; 3: the stress set


def inputs_digest(cfg: EnvironmentConfig, catalog: Catalog, traffic: TrafficProfile) -> str:
    types = sorted({t for v in cfg.variants for t in v.instance_types})
    prices = prices_for(cfg, catalog)  # the figures, not the region: the same prices give the same frontier
    planning = cfg.planning
    inputs = {
        "search": SEARCH_SPACE_VERSION,
        # The minutes' bytes, hashed (a JSON list of 10,080 floats costs more than a replay's share of a plan).
        "traffic": hashlib.sha256(np.asarray(traffic.requests_per_minute, dtype=float).tobytes()).hexdigest(),
        "peaks": [(p.start_minute, p.end_minute) for p in traffic.peaks],
        "capacity": {t: planning.capacity[t].model_dump(mode="json", exclude={"measured"}) for t in types},
        "prices": {t: prices.usd_per_hour(t) for t in types},
        "variants": [(v.name, v.instance_types, v.initial_weight) for v in cfg.variants],
        "provisioning": planning.provisioning_minutes,
        "timeout": planning.request_timeout_seconds,
        "objective": cfg.alarms.ttft_p95_ms,
        # The reasons are prose a reader sees, not figures the search uses: a reworded one moves no frontier.
        "budget": planning.budget.model_dump(
            mode="json", exclude={"cost_vs_frontier", "unannounced_reason", "max_queue_wait_reason"}
        ),
        "stress": planning.stress.model_dump(mode="json", exclude={"reason"}),
        "routing": cfg.routing_strategy,
    }
    if cfg.container.admission_deadline_ms is not None:  # unset, the deadline follows the objective (above)
        inputs["admission_deadline_ms"] = cfg.container.admission_deadline_ms  # what the replay sheds by
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class FrontierStanding:
    """What the cost check may do with planning.frontier on one plan's traffic."""

    monthly_cost_usd: float | None  # planning.frontier's; None: never tuned
    stale: str = ""  # why the frontier no longer applies: the cost check fails ("" when it applies)
    # planning.traffic's name when the frontier still applies to it but the plan replays other traffic
    # (`--traffic`): the cost is not judged and does not fail, as the frontier of that traffic is not known.
    found_on: str = ""
    bare_monthly_cost_usd: float | None = None  # planning.frontier's at the bare assumptions


def frontier_of(cfg: EnvironmentConfig, catalog: Catalog, traffic: TrafficProfile) -> FrontierStanding:
    """Judged when the plan's inputs are the frontier's; stale when planning.traffic's are not either (the
    search's other inputs changed: re-run it); else found on planning.traffic, not this traffic."""
    frontier = cfg.planning.frontier
    if frontier is None:
        return FrontierStanding(None, "no frontier in planning.frontier")
    digest = inputs_digest(cfg, catalog, traffic)
    if frontier.inputs == digest:
        return FrontierStanding(frontier.monthly_cost_usd, bare_monthly_cost_usd=frontier.bare_monthly_cost_usd)
    try:
        reference = traffic_of(cfg)
    except TrafficError as error:
        return FrontierStanding(frontier.monthly_cost_usd, f"planning.frontier not checked: {error}")
    reference_digest = inputs_digest(cfg, catalog, reference)
    if frontier.inputs != reference_digest:
        whose = "the plan's" if reference_digest == digest else f"planning.traffic's ({reference.name})"
        return FrontierStanding(
            frontier.monthly_cost_usd,
            f"planning.frontier is stale: found on inputs {frontier.inputs}, {whose} are {reference_digest} (traffic,"
            " capacity, prices, provisioning, objective, admission deadline, budget or search space changed)",
        )
    return FrontierStanding(frontier.monthly_cost_usd, found_on=reference.name)
