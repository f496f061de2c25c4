"""What the workbench's tests share: the load test in-process on the ops CLI runner's runtime."""

from __future__ import annotations

import pytest

from tests.ops_world import Cli
from workbench.loadtest.cli import app as loadtest_app


@pytest.fixture
def loadtest(cli: Cli) -> Cli:
    """`bin/loadtest ARGS` as `loadtest(*ARGS)`, with `cli`'s runtime (fast waits, stubbed clients)."""
    return Cli(cli.runtime, cli.sleep, app=loadtest_app)
