"""The synthesised environments and config helpers (tests/synthesised.py)."""

from tests.synthesised import *  # noqa: F403
