"""The SageMaker runtime API in front of a local model server, for `ops smoke` in the sandbox.

moto answers InvokeEndpoint only with queued canned bodies and has no InvokeEndpointWithResponseStream,
so the sandbox serves both itself: it picks a variant the way SageMaker does (TargetVariant, else by
the live weights read from the moto server), forwards the body to that variant's model server's `/invocations`,
and relays a streamed answer as `PayloadPart` events in AWS's event-stream framing
(`application/vnd.amazon.eventstream`), which botocore decodes as it would AWS's. Every invocation
is counted in CloudWatch (`AWS/SageMaker` Invocations and Invocation5XXErrors per variant), so the
canary guard sees the traffic the sandbox served, and captured to S3 as the endpoint config's data capture
says (workbench/sandbox/capture.py), so `bin/loadtest --workload capture` has traffic to replay.

Routes and headers follow botocore's sagemaker-runtime service model (2017-05-13):
POST /endpoints/{EndpointName}/invocations and /invocations-response-stream, request headers
X-Amzn-SageMaker-Target-Variant and Content-Type, response headers X-Amzn-Invoked-Production-Variant
and (streaming) X-Amzn-SageMaker-Content-Type.
"""

from __future__ import annotations

import binascii
import json
import random
import re
import struct
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from botocore.exceptions import ClientError

from workbench.sandbox.capture import DataCapture

DEPLOY_PATH = "/_sandbox/deploy"
ROUTE = re.compile(r"^/endpoints/(?P<endpoint>[^/]+)/(?P<kind>invocations|invocations-response-stream)$")


def event_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: prelude (total and header lengths), its CRC32, string headers
    (type 7), payload, CRC32 of everything before it."""
    encoded = b"".join(
        struct.pack("B", len(name)) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
        for name, value in headers.items()
    )
    prelude = struct.pack(">II", 12 + len(encoded) + len(payload) + 4, len(encoded))
    message = prelude + struct.pack(">I", binascii.crc32(prelude)) + encoded + payload
    return message + struct.pack(">I", binascii.crc32(message))


def payload_part(data: bytes) -> bytes:
    headers = {":event-type": "PayloadPart", ":message-type": "event", ":content-type": "application/octet-stream"}
    return event_frame(headers, data)


def invocation_datapoints(
    endpoint: str, variant: str, invocations: float, errors: float, at: datetime
) -> list[dict[str, Any]]:
    """One variant's Invocations and 5XX errors at `at`, as SageMaker reports them (AWS/SageMaker)."""
    dimensions = [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": variant}]
    return [
        {"MetricName": "Invocations", "Dimensions": dimensions, "Value": invocations, "Timestamp": at},
        {"MetricName": "Invocation5XXErrors", "Dimensions": dimensions, "Value": errors, "Timestamp": at},
    ]


def record_invocations(
    cloudwatch: Any, endpoint: str, variant: str, invocations: float, errors: float, at: datetime | None = None
) -> None:
    """Invocations and 5XX errors of one variant, timestamped `at` (default now)."""
    data = invocation_datapoints(endpoint, variant, invocations, errors, at or datetime.now(UTC))
    cloudwatch.put_metric_data(Namespace="AWS/SageMaker", MetricData=data)


class RuntimeFront:
    """Owns the HTTP server; `sagemaker` and `cloudwatch` are boto3 clients on the moto server."""

    def __init__(
        self,
        model_urls: dict[str, str],
        sagemaker: Any,
        cloudwatch: Any,
        deploy: Callable[[Path], str],
        capture: DataCapture | None = None,
        port: int = 0,  # 0: any free port
    ) -> None:
        self.model_urls = model_urls  # variant -> its model server
        self.capture = capture
        self.deploy = deploy  # POST /_sandbox/deploy {"templates": DIR}: the sandbox's `make deploy`
        self.sagemaker = sagemaker
        self.cloudwatch = cloudwatch
        # No keep-alive to the model servers: uvicorn closes an idle connection after 5 s, and a relay that
        # reused one at that moment got "Server disconnected" (seen in a test's holds seconds apart). A new
        # local connection per invocation costs little.
        self.http = httpx.Client(timeout=70, limits=httpx.Limits(max_keepalive_connections=0))
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.http.close()

    def pick_variant(self, endpoint: str, requested: str | None) -> str:
        described = self.sagemaker.describe_endpoint(EndpointName=endpoint)
        variants = {v["VariantName"]: float(v.get("CurrentWeight") or 0) for v in described["ProductionVariants"]}
        if requested:
            if requested not in variants:
                raise LookupError(f"Variant {requested} not found for endpoint {endpoint}")
            return requested
        live = {name: weight for name, weight in variants.items() if weight > 0}
        return random.choices(list(live), weights=list(live.values()))[0]

    def model_url(self, variant: str) -> str:
        """The variant's model server; a variant the config did not have at start (a sandbox deploy that
        added one) is served by the first."""
        return self.model_urls.get(variant) or next(iter(self.model_urls.values()))

    def count(self, endpoint: str, variant: str, failed: bool) -> None:
        record_invocations(self.cloudwatch, endpoint, variant, 1, int(failed))

    def captured(self, endpoint: str, variant: str, request: tuple[bytes, str], response: tuple[bytes, str]) -> None:
        """Data capture of one invocation, after its answer went out; a failure is logged, never raised
        (the invocation has been answered)."""
        if self.capture is None:
            return
        try:
            self.capture.record(endpoint, variant, request, response)
        except Exception as error:  # noqa: BLE001 - the sandbox's log says what capture could not write
            print(f"sandbox: data capture of {endpoint}/{variant} failed: {type(error).__name__}: {error}", flush=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        """RuntimeHandler bound to this front (http.server makes one handler object per request)."""
        return type("Handler", (RuntimeHandler,), {"front": self})


class RuntimeHandler(BaseHTTPRequestHandler):
    """One request to the runtime API: the sandbox's deploy, or an invocation relayed to a variant."""

    protocol_version = "HTTP/1.1"
    front: RuntimeFront  # set on the subclass RuntimeFront._handler makes

    answered = False  # whether a status line went out (http.server makes one handler object per request)

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the sandbox runs in the background
        return

    def send_response(self, code: int, message: str | None = None) -> None:
        self.answered = True
        super().send_response(code, message)

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == DEPLOY_PATH:
            config_name = self.front.deploy(Path(json.loads(body)["templates"]))
            self.reply(200, {"EndpointConfigName": config_name})
            return
        match = ROUTE.match(self.path.split("?", 1)[0])
        if not match:
            self.error(404, "UnknownOperationException", f"no route {self.path}")
            return
        self.relay(match["endpoint"], match["kind"], body)

    def relay(self, endpoint: str, kind: str, body: bytes) -> None:
        """An invocation (`kind` as in the route) to the variant SageMaker would pick."""
        try:
            variant = self.front.pick_variant(endpoint, self.headers.get("X-Amzn-SageMaker-Target-Variant"))
        except (ClientError, LookupError) as error:
            message = str(error) if isinstance(error, LookupError) else f"Endpoint {endpoint} not found."
            self.error(400, "ValidationError", message)
            return
        headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
        try:
            if kind == "invocations":
                self.invoke(endpoint, variant, body, headers)
            else:
                self.stream(endpoint, variant, body, headers)
        except httpx.TransportError as error:
            if self.answered:  # mid-stream: the status line has gone out; the caller sees the stream end
                raise
            # The container gave no answer at all. SageMaker documents no code for that: the runtime API's errors
            # (botocore sagemaker-runtime service-2.json) are ModelError (424, "returned 4xx or 5xx error code"),
            # InternalFailure (500), ServiceUnavailable (503), ... ModelError it is, the container's fault, and
            # counted in Invocation5XXErrors (assumed: that metric is documented for 5XX answers). Never a dropped
            # connection: the caller could not tell it from the front failing.
            self.front.count(endpoint, variant, failed=True)
            self.error(424, "ModelError", f"the model server of {variant} gave no answer: {type(error).__name__}")

    def invoke(self, endpoint: str, variant: str, body: bytes, headers: dict[str, str]) -> None:
        front = self.front
        answer = front.http.post(f"{front.model_url(variant)}/invocations", content=body, headers=headers)
        front.count(endpoint, variant, answer.status_code >= 500)
        if answer.status_code != 200:  # SageMaker relays a container error as ModelError (424)
            self.error(424, "ModelError", f"Received client error ({answer.status_code}) from primary "
                       f"with message \"{answer.text}\"")  # fmt: skip
            return
        self.send_response(200)
        self.send_header("Content-Type", answer.headers.get("content-type", "application/json"))
        self.send_header("X-Amzn-Invoked-Production-Variant", variant)
        self.send_header("Content-Length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)
        self.wfile.flush()
        answered = (answer.content, answer.headers.get("content-type", "application/json"))
        front.captured(endpoint, variant, (body, headers["Content-Type"]), answered)

    def stream(self, endpoint: str, variant: str, body: bytes, headers: dict[str, str]) -> None:
        front = self.front
        with front.http.stream(
            "POST", f"{front.model_url(variant)}/invocations", content=body, headers=headers
        ) as answer:
            front.count(endpoint, variant, answer.status_code >= 500)
            if answer.status_code != 200:
                answer.read()
                self.error(424, "ModelError", f"Received client error ({answer.status_code}) with message "
                           f"\"{answer.text}\"")  # fmt: skip
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.amazon.eventstream")
            self.send_header("X-Amzn-SageMaker-Content-Type", answer.headers.get("content-type", ""))
            self.send_header("X-Amzn-Invoked-Production-Variant", variant)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            streamed = []
            for data in answer.iter_bytes():
                self.chunk(payload_part(data))
                streamed.append(data)
            self.chunk(b"")
        answered = (b"".join(streamed), answer.headers.get("content-type", "text/event-stream"))
        front.captured(endpoint, variant, (body, headers["Content-Type"]), answered)

    def chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def error(self, status: int, code: str, message: str) -> None:
        self.reply(status, {"__type": code, "message": message}, {"x-amzn-ErrorType": code})

    def reply(self, status: int, document: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
