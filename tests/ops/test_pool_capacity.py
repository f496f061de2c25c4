"""ops/operations/pool_capacity.py: each instance at its own type's figure, new ones at the weakest pool in use."""

from __future__ import annotations

import pytest

from config.schema import InstanceCapacity
from ops.operations.endpoint import LiveVariant, PoolCount
from ops.operations.pool_capacity import PoolCapacity, UnknownCapacity

CAPACITY = {
    "ml.g5.xlarge": InstanceCapacity(requests_per_minute=300, concurrent_sequences=20),
    "ml.g6.xlarge": InstanceCapacity(requests_per_minute=200, concurrent_sequences=14),
}


def primary(pools: tuple[PoolCount, ...], current: int) -> LiveVariant:
    return LiveVariant("primary", "repo:v1", "ml.g5.xlarge", current, current, 1, 1,
                       ("ml.g5.xlarge", "ml.g6.xlarge"), pools)  # fmt: skip


def test_instances_in_service_count_at_their_own_type_and_new_ones_at_the_pool_being_filled():
    only_preferred = PoolCapacity.of(primary((PoolCount("ml.g5.xlarge", 3),), 3), CAPACITY)
    assert only_preferred.serves() == 900 and only_preferred.new_type == "ml.g5.xlarge"
    assert only_preferred.instances_for(1500) == 5 and not only_preferred.mixed

    both = PoolCapacity.of(primary((PoolCount("ml.g5.xlarge", 2), PoolCount("ml.g6.xlarge", 2)), 4), CAPACITY)
    assert both.serves() == 1000 and both.new_type == "ml.g6.xlarge" and both.mixed
    assert both.instances_for(1500) == 4 + 3  # 500 more at 200/min
    assert both.instances_for(700) == 3  # scale-in releases the fallback first: 2 x 300 + 1 x 200
    assert both.serves_with(3) == 800 and both.serves_with(6) == 1400


def test_an_unreported_split_counts_every_instance_at_the_weakest_figure_and_says_so():
    unreported = PoolCapacity.of(primary((), 4), CAPACITY)
    assert unreported.serves() == 800 and not unreported.split_known
    assert unreported.describe(4).endswith(
        "the split by type is not reported, so every instance counts at the weakest figure"
    )


def test_a_pool_type_without_a_figure_is_unknown():
    with pytest.raises(UnknownCapacity, match="planning.capacity has no figure for ml.g6.xlarge"):
        PoolCapacity.of(primary((), 4), {"ml.g5.xlarge": CAPACITY["ml.g5.xlarge"]})
