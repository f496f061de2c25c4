"""The moto worlds and CLI runner of the ops tests (tests/ops_world.py)."""

from tests.ops_world import *  # noqa: F403
