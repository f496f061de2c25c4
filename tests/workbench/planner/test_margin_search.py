"""The margin's search gallops from the assumption's side and still finds what a plain bisection finds."""

import pytest

from workbench.planner.margin import _lowest


@pytest.mark.parametrize("from_high", [False, True])
def test_the_gallop_finds_every_threshold_a_bisection_would(from_high: bool) -> None:
    for low, high in ((25, 100), (4, 61), (8, 9)):
        for threshold in range(low, high + 1):
            probes = []

            def passes(n: int, t: int = threshold, lo: int = low, hi: int = high, seen: list = probes) -> bool:
                assert lo <= n < hi, n  # `high` is taken as passing, never evaluated
                seen.append(n)
                return n >= t

            assert _lowest(passes, low, high, from_high=from_high) == threshold
            assert len(probes) <= 2 * (high - low).bit_length() + 1


def test_a_threshold_near_the_assumption_takes_few_replays() -> None:
    probes = []

    def passes(n: int) -> bool:
        probes.append(n)
        return n >= 97

    assert _lowest(passes, 25, 100, from_high=True) == 97
    assert min(probes) >= 90  # no replay at a quarter of the capacity
