"""config.loader.read_yaml parses a file's bytes once per process (issue 36): what it returns is still
what the file says now, and each caller gets its own copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.loader import ConfigError, read_yaml


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
