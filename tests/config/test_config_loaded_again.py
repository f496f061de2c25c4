"""A process loads the same config many times, so the loader parses a text once and simulates a set of
schedules once (issue 36): what it returns still follows every change of the file, and each caller gets
its own copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.loader import ENVIRONMENTS_DIR, ConfigError, load_config_file, read_yaml


def test_a_changed_file_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "settings.yaml"
    path.write_text("replicas: 1\n")
    assert read_yaml(path) == {"replicas": 1}

    path.write_text("replicas: 2\n")
    assert read_yaml(path) == {"replicas": 2}

    path.write_text("replicas: &n 2\nagain: *n\n")
    with pytest.raises(ConfigError, match="anchors and aliases"):
        read_yaml(path)
    with pytest.raises(ConfigError, match="anchors and aliases"):  # a refusal is not remembered as data
        read_yaml(path)


def test_each_read_returns_its_own_copy(tmp_path: Path) -> None:
    path = tmp_path / "settings.yaml"
    path.write_text("variants:\n  - name: primary\n    weight: 1\n")
    first = read_yaml(path)
    first["variants"][0]["weight"] = 99
    first["variants"].append({"name": "canary"})

    assert read_yaml(path) == {"variants": [{"name": "primary", "weight": 1}]}


def test_the_same_text_in_another_file_is_named_by_that_file(tmp_path: Path) -> None:
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text("replicas: 1\nreplicas: 2\n")  # a duplicate key: not valid YAML
        with pytest.raises(ConfigError) as refused:
            read_yaml(tmp_path / name)
        assert refused.value.source.endswith(name)
        assert "not valid YAML" in refused.value.problems[0][1]


def test_a_schedule_changed_after_a_load_is_checked_again(tmp_path: Path) -> None:
    """prod's first window moved onto New York's spring-forward gap, then overlapping the next window."""
    path = tmp_path / "prod.yaml"
    prod = (ENVIRONMENTS_DIR / "prod.yaml").read_text()
    path.write_text(prod)
    load_config_file(path, "prod")  # accepted: its windows are simulated and remembered

    window = read_yaml(path)["autoscaling"]["primary"]["schedules"][0]
    in_the_gap = prod.replace(f"timezone: {window['timezone']}", "timezone: America/New_York", 1).replace(
        window["start"], "cron(30 2 8 3 ? 2026)", 1
    )
    path.write_text(in_the_gap)
    with pytest.raises(ConfigError) as refused:
        load_config_file(path, "prod")
    assert "autoscaling.primary.schedules[0].start" in [field for field, _ in refused.value.problems]

    path.write_text(prod)
    load_config_file(path, "prod")  # the same text as the first load: accepted again
