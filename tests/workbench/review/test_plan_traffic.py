"""The review's plan comparison replays each environment's own planning.traffic, as `make plan-diff` does, so
its cost is judged against the frontier the tuner found on that traffic."""

from __future__ import annotations

from pathlib import Path

from config.loader import load_environment
from workbench.planner.environment_traffic import traffic_for
from workbench.review.capacity import compare_plans

REPO = Path(__file__).resolve().parents[3]


def test_dev_is_compared_on_its_own_traffic_and_its_cost_judged(tmp_path: Path) -> None:
    dev = REPO / "config" / "environments" / "dev.yaml"
    head = tmp_path / "dev.yaml"
    head.write_text(dev.read_text() + "# a comment: the same config, another file\n")
    own = traffic_for(load_environment("dev", against_deployed=False).planning.traffic).name

    comparison = compare_plans("dev", dev, head)

    assert comparison.changed
    assert f"### Capacity plan change: dev ({own})" in comparison.markdown
    assert "not judged" not in comparison.markdown
    assert "**Budget:** base met; head met." in comparison.markdown
