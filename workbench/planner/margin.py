"""How far the plan's two weakest assumptions can move before what its verdict found met stops holding.

Capacity: every instance type's `requests_per_minute` and `concurrent_sequences` scaled by one factor
(the targets stay as configured: the deployed template keeps them). Provisioning: the delay from a
scale-out decision to an instance in service. Each is bisected on the configured scenario and the
oracle alone, to whole percent and whole minutes, for the checks the plan meets at its assumptions
(all of them when the verdict is met), on the assumption that less capacity and slower provisioning
never help (true of shortfall and rejections; the cost ratio can wobble by a step).
"""

from __future__ import annotations

from collections.abc import Callable

from workbench.planner.verdict import CHECK_NAMES

# Searched: capacity down to a quarter of the assumption, provisioning up to an hour (the range
# planning.provisioning_minutes allows).
LOWEST_FACTOR_PERCENT = 25
LONGEST_PROVISIONING_MINUTES = 60

# The checks a margin is stated for: the bare assumptions' (the stress set is judged on its own scenarios).
MARGIN_CHECKS = ("peaks", "unannounced", "shortfall", "cost")

ChecksAt = Callable[[float, int], set[str]]  # (capacity factor, provisioning minutes) -> names of the met checks


def margin_of(
    held: set[str],
    provisioning: int,
    capacities: dict[str, float],
    checks_at: ChecksAt,
    not_judged: set[str] = frozenset(),
) -> str:
    """One line: 'holds down to 225/min per ml.g5.xlarge (−18 %); up to 11 min provisioning (assumed 8)'.
    `not_judged`: checks the verdict did not judge (planner.verdict's cost on supplied traffic): neither
    held nor missed."""
    if not held:
        return "no check is met at the assumptions, so there is no margin to state"

    def holds(factor: float, minutes: int) -> bool:
        return held <= checks_at(factor, minutes)

    # Galloping from the assumption's side: the answer is usually near it, and replays far from it (a
    # quarter of the capacity, an hour's provisioning) are the slow ones, full of queues.
    percent = _lowest(lambda p: holds(p / 100, provisioning), LOWEST_FACTOR_PERCENT, 100, from_high=True)
    minutes = _lowest(lambda m: not holds(1.0, m), provisioning, LONGEST_PROVISIONING_MINUTES + 1) - 1
    capacity = f"down to {_rates(capacities, percent)}" + (" or less" if percent == LOWEST_FACTOR_PERCENT else "")
    delay = f"{minutes}+ min" if minutes == LONGEST_PROVISIONING_MINUTES else f"{minutes} min"
    core = f"{capacity}; up to {delay} provisioning (assumed {provisioning})"
    missed = [CHECK_NAMES[name] for name in MARGIN_CHECKS if name not in held | not_judged]
    if not missed:
        return f"holds {core}"
    kept = ", ".join(CHECK_NAMES[name] for name in MARGIN_CHECKS if name in held)
    return f"{kept} hold{'s' if len(held) == 1 else ''} {core}; not met at the assumptions: {', '.join(missed)}"


def _rates(capacities: dict[str, float], percent: int) -> str:
    rates = ", ".join(f"{rate * percent / 100:,.0f}/min per {name}" for name, rate in capacities.items())
    change = f"{percent - 100:+d}".replace("-", "−")
    return f"{rates} ({change} %)"


def _lowest(passes: Callable[[int], bool], low: int, high: int, *, from_high: bool = False) -> int:
    """The least n in [low, high] with passes(n), for a `passes` that is false then true and taken as
    true at `high` (not evaluated). Gallops (steps 1, 2, 4, ...) from `low` upwards, or from `high`
    downwards with `from_high`, then bisects the bracket it found: the same n as a plain bisection."""
    step = 1
    if from_high:
        while high - step > low and passes(high - step):
            high, step = high - step, step * 2
        if high - step > low:
            low = high - step  # the probe that failed
        elif passes(low):
            return low
    else:
        if passes(low):
            return low
        while low + step < high and not passes(low + step):
            low, step = low + step, step * 2
        high = min(high, low + step)
    while high - low > 1:
        middle = (low + high) // 2
        if passes(middle):
            high = middle
        else:
            low = middle
    return high
