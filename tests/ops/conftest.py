"""The moto worlds and CLI runner of the ops tests (tests/ops_world.py), and the canary's evidence."""

import pytest

from tests.ops_world import *  # noqa: F403


@pytest.fixture
def invocations(prod):  # noqa: F405
    """Five minutes with enough canary invocations (2 500/min in all), no 5XX."""
    prod.traffic("canary", invocations=1000, errors=0, minutes=5)
    prod.traffic("primary", invocations=11500, errors=0, minutes=5)
    return prod


@pytest.fixture
def evidence(invocations):
    """And alike first-token times on both variants: a step may go on."""
    invocations.streamed()
    return invocations
