"""The quota figures docs/deploying.md gives ("Quota") are the config's (issue 39 item 8): the largest
fleets of prod's variants, twice their sum, and staging's and dev's doubled sums, each equal to what
config.checks.platform computes and to the quota each environment records."""

from __future__ import annotations

import re
from pathlib import Path

from config import load_environment
from config.checks.platform import BLUE_GREEN_FLEETS, largest_fleet

DEPLOYING = Path(__file__).resolve().parents[1] / "docs" / "deploying.md"
SENTENCE = re.compile(
    r"prod's max_capacity (\d+) \+ (\d+) = (\d+), so (\d+) \(staging (\d+), dev (\d+)\)", re.MULTILINE
)


def needed(env: str) -> tuple[list[int], int]:
    cfg = load_environment(env, against_deployed=False)
    fleets = [largest_fleet(cfg, v) for v in cfg.variants]
    quota = BLUE_GREEN_FLEETS * sum(fleets)
    assert cfg.endpoint_instance_quotas["ml.g5.xlarge"] == quota, f"{env} records a quota other than it needs"
    return fleets, quota


def test_the_quota_sentence_matches_the_config() -> None:
    found = SENTENCE.search(" ".join(DEPLOYING.read_text().split()))
    assert found, "docs/deploying.md lost its quota sentence"
    primary, canary, fleet, prod, staging, dev = (int(n) for n in found.groups())
    assert ([primary, canary], prod) == needed("prod")
    assert fleet == primary + canary
    assert staging == needed("staging")[1]
    assert dev == needed("dev")[1]
