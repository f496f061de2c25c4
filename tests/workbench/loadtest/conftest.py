"""Fixtures of the capacity tool's tests (helpers in capacity_harness.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from capacity_harness import FIXED_WORKLOAD

from tests.operator_policy_check import every_cli_call_is_allowed_by_the_operator_policy  # noqa: F401
from tests.ops_world import *  # noqa: F403  (the moto worlds and CLI runner: the load test runs through the ops CLI's runtime)


@pytest.fixture(scope="module")
def fixed_workload(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("workload") / "fixed.yaml"
    path.write_text(FIXED_WORKLOAD)
    return path
