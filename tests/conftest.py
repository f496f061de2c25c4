"""Every test runs Node from the pinned toolchain (config/toolchain.py), also when pytest is started
without make: set before any test module imports aws_cdk."""

import pytest

from config.toolchain import use_pinned_node
from tests import shared_synthesis

use_pinned_node()


@pytest.fixture(scope="session", autouse=True)
def _synthesis_shared_between_workers(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Synthesised environments go to this run's directory, which every xdist worker sees (tests/shared_synthesis.py)."""
    shared_synthesis.share_between_workers(tmp_path_factory)
