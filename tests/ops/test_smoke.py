"""`smoke`: plain answers from moto's results API; streamed ones as real event-stream frames at the HTTP layer
(`before-send`), since neither moto nor the Stubber can return a stream.
"""

from __future__ import annotations

import binascii
import json
import struct

import pytest
import requests
from botocore.awsrequest import AWSResponse

from ops.operations.smoke import ServerSentEvents

ADAPTERS = ["manga_domain_v3", "general_support_v2", "jp_style_v1"]
MOTO_RESULTS = "http://motoapi.amazonaws.com/moto-api/static/sagemaker/endpoint-results"


def completion(model: str, content: str = "Try Dungeon Meshi: food, friendship and dungeons.") -> str:
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 21, "completion_tokens": 12, "total_tokens": 33},
        }
    )


def queue_completions(account: str, region: str, bodies: list[str], variant: str = "primary") -> None:
    results = [
        {"Body": body, "ContentType": "application/json", "InvokedProductionVariant": variant} for body in bodies
    ]
    requests.post(MOTO_RESULTS, json={"account_id": account, "region": region, "results": results}, timeout=5)


def sse(model: str, words: list[str], done: bool = True) -> bytes:
    chunks = [
        {"object": "chat.completion.chunk", "model": model, "choices": [{"index": 0, "delta": {"content": w}}]}
        for w in words
    ]
    chunks.append({"object": "chat.completion.chunk", "model": model, "choices": [], "usage": {"completion_tokens": 9}})
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + ("data: [DONE]\n\n" if done else "")
    return text.encode()


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message: prelude, CRC, string headers, payload, message CRC."""
    encoded = b"".join(
        struct.pack("B", len(name)) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
        for name, value in headers.items()
    )
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    message = prelude + struct.pack(">I", binascii.crc32(prelude)) + encoded + payload
    return message + struct.pack(">I", binascii.crc32(message))


def payload_part(data: bytes) -> bytes:
    headers = {":event-type": "PayloadPart", ":message-type": "event", ":content-type": "application/octet-stream"}
    return frame(headers, data)


class Raw:
    def __init__(self, chunks: list[bytes]):
        self.chunks = chunks

    def stream(self, *args, **kwargs):
        yield from self.chunks


class StreamingEndpoint:
    """InvokeEndpointWithResponseStream in payload parts of 40 bytes: events split across parts."""

    def __init__(self, streams: dict[str, bytes], variant: str = "canary"):
        self.streams, self.variant = streams, variant
        self.requests: list[dict] = []

    def __call__(self, request, **kwargs):
        body = json.loads(request.body)
        self.requests.append({"body": body, "headers": dict(request.headers)})
        data = self.streams[body["model"]]
        parts = [payload_part(data[i : i + 40]) for i in range(0, len(data), 40)]
        headers = {
            "x-Amzn-Invoked-Production-Variant": self.variant,
            "X-Amzn-SageMaker-Content-Type": "text/event-stream",
        }
        return AWSResponse(request.url, 200, headers, Raw(parts))


@pytest.fixture
def runtime_client(prod, cli):
    client = prod.client("sagemaker-runtime")
    cli.runtime.client_overrides["sagemaker-runtime"] = client
    return client


def stream_with(client, endpoint: StreamingEndpoint) -> None:
    client.meta.events.register("before-send.sagemaker-runtime.InvokeEndpointWithResponseStream", endpoint)


def test_every_adapter_answers_plain_and_streamed(prod, cli, runtime_client):
    queue_completions("222222222222", "ap-northeast-1", [completion(a) for a in ADAPTERS])
    endpoint = StreamingEndpoint({a: sse(a, ["Try ", "Dungeon ", "Meshi."]) for a in ADAPTERS})
    stream_with(runtime_client, endpoint)

    result = cli("smoke", "prod", "--variant", "canary")

    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines() if line.strip().startswith(tuple(ADAPTERS))]
    assert [(r[0], r[1]) for r in rows] == [(a, m) for a in ADAPTERS for m in ("invoke", "stream")]
    assert all(r[-1] == "ok" for r in rows)
    stream_row = rows[1]
    assert stream_row[2] == "canary" and stream_row[6] == "ms" and stream_row[7] == "9"  # a TTFT and usage tokens
    assert rows[0][5] == "-"  # no TTFT without streaming
    assert "6 of 6 invocations answered as expected" in result.output
    sent = endpoint.requests[0]
    assert sent["body"]["model"] == "manga_domain_v3" and sent["body"]["stream"] is True
    assert sent["headers"]["X-Amzn-SageMaker-Target-Variant"] == b"canary"


def test_a_malformed_completion_fails_the_smoke_test(prod, cli, runtime_client):
    queue_completions(
        "222222222222",
        "ap-northeast-1",
        [json.dumps({"error": "oops"}), completion("base-model"), completion(ADAPTERS[2], content="  ")],
    )
    stream_with(runtime_client, StreamingEndpoint({a: sse(a, ["ok"]) for a in ADAPTERS}))

    result = cli("smoke", "prod")

    assert result.exit_code == 3
    assert "FAIL: not a chat.completion" in result.output
    assert "FAIL: answered by model 'base-model', not adapter 'general_support_v2'" in result.output
    assert "FAIL: the completion has no message content" in result.output
    assert "3 of 6 invocations answered as expected" in result.output


def test_a_stream_without_done_or_content_fails(prod, cli, runtime_client):
    queue_completions("222222222222", "ap-northeast-1", [completion(a) for a in ADAPTERS])
    streams = {
        ADAPTERS[0]: sse(ADAPTERS[0], ["cut ", "off"], done=False),
        ADAPTERS[1]: sse(ADAPTERS[1], []),
        ADAPTERS[2]: b"data: {not json}\n\n",
    }
    stream_with(runtime_client, StreamingEndpoint(streams))

    result = cli("smoke", "prod")

    assert result.exit_code == 3
    assert "FAIL: the stream ended without data: [DONE]" in result.output
    assert "FAIL: the stream carried no content" in result.output
    assert "FAIL: an event is not JSON" in result.output


def test_unknown_variant_is_a_usage_error(prod, cli):
    result = cli("smoke", "prod", "--variant", "green")

    assert result.exit_code == 2
    # found in the config, before any AWS call
    assert "config/environments/prod.yaml has no variant 'green' (it has: primary, canary)" in result.stderr


def test_events_split_anywhere_are_reassembled():
    data = sse("a", ["one ", "two"])
    reader = ServerSentEvents()
    chunks = [c for i in range(0, len(data), 7) for c in reader.feed(data[i : i + 7])]

    assert [c["choices"][0]["delta"]["content"] for c in chunks if c["choices"]] == ["one ", "two"]
    assert reader.done and reader.completion_tokens == 9 and reader.problem is None
