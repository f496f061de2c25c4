"""The sandbox's state file appears whole or not at all: `start` waits for it to exist and reads it at once, so a
file written in place could be read empty (`make sandbox-reset` failed with a JSONDecodeError traceback in the
docs walk)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.sandbox.server import State


def test_the_state_file_is_never_written_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "prod.json"
    seen: list[tuple[Path, str | None]] = []
    write_text = Path.write_text

    def watching(self: Path, text: str, *args, **kwargs) -> int:
        seen.append((self, path.read_text() if path.exists() else None))  # what a reader finds meanwhile
        return write_text(self, text, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", watching)
    state = State(pid=1, env="prod", region="ap-northeast-1", account="222222222222", moto_url="http://m",
                  runtime_url="http://r", endpoint="mangaassist-llm-prod")  # fmt: skip
    state.save(path)
    assert all(written != path for written, _ in seen)
    assert State.load(path) == state and sorted(p.name for p in tmp_path.iterdir()) == ["prod.json"]
