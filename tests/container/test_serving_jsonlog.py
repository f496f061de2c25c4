"""Log and EMF lines share stdout with the engine's own output."""

import json

from container.serving import jsonlog


def test_batches_are_written_in_pipe_atomic_groups_of_whole_lines(monkeypatch):
    writes: list[bytes] = []
    monkeypatch.setattr(jsonlog, "_write", writes.append)
    lines = [jsonlog.json_line({"n": n, "pad": "x" * 900}) for n in range(10)]
    jsonlog.write_lines(lines)
    assert len(writes) > 1
    assert all(len(write) <= 4096 and write.endswith(b"\n") for write in writes)
    assert [json.loads(line)["n"] for line in b"".join(writes).splitlines()] == list(range(10))


def test_records_below_the_level_are_dropped():
    logger = jsonlog.JsonLogger("serving", "warning")
    assert logger.record("info", "request") is None
    assert logger.record("error", "boom", detail=1)["detail"] == 1
