"""`bin/ops traffic` when CloudWatch does not answer in time (issue 53): one line saying what to do."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import boto3
import pytest
from botocore.config import Config


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A real HTTP endpoint that takes every connection and its request, and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    listener.close()


def test_a_cloudwatch_too_slow_to_answer_says_what_to_do(prod, cli, tmp_path, silent_server) -> None:
    # One try, a short read timeout: the server never answers, so only the wait until the error is shortened.
    config = Config(read_timeout=0.5, retries={"mode": "standard", "total_max_attempts": 1})
    cli.runtime.client_overrides["cloudwatch"] = boto3.client(
        "cloudwatch", region_name=prod.cfg.region, endpoint_url=silent_server, config=config
    )
    result = cli("traffic", "prod", "--out", str(tmp_path / "week.csv"))
    assert result.exit_code == 1, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: CloudWatch did not answer GetMetricData in time (Read timeout on endpoint URL: ")
    assert line.endswith("it reads every minute of --days 7; ask for fewer days (--days 3).")
    assert not (tmp_path / "week.csv").exists()
