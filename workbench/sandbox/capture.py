"""SageMaker's data capture, for the sandbox's runtime front: the invocations it relays, sampled as the
endpoint config's `DataCaptureConfig` says, written as JSON Lines to the sandbox's capture bucket, so
that `bin/loadtest ENV --variant V --workload capture` (workbench/loadtest/capture.py) has files to replay.

The layout and the record follow the SageMaker developer guide ("Capture data from real-time endpoint",
"View captured data"): `<DestinationS3Uri>/<endpoint>/<variant>/yyyy/mm/dd/hh/<file>.jsonl`, one record a
line, `{"captureData": {"endpointInput": {...}, "endpointOutput": {...}}, "eventMetadata": {"eventId",
"inferenceTime"}, "eventVersion": "0"}`; `CaptureContentTypeHeader` decides each payload's `encoding`
(a type listed in `JsonContentTypes` is stored as JSON text, in `CsvContentTypes` as CSV text, anything
else as BASE64, the API reference's default). How SageMaker names the file and how many records it
buffers into one are not documented: the sandbox writes one file per record, named
`<minute>-<second>-<millisecond>-<uuid>.jsonl`. SageMaker samples `InitialSamplingPercentage` of the
requests at random; the sandbox takes the first invocation of each variant and then every
(100 / percentage)-th, so a single `bin/ops smoke ENV --variant V` leaves one capture to replay.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any


def encoding(content_type: str, header: dict[str, Any]) -> str:
    """JSON, CSV or BASE64 for a payload of `content_type`, by the config's CaptureContentTypeHeader."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type in {t.lower() for t in header.get("JsonContentTypes", [])}:
        return "JSON"
    if media_type in {t.lower() for t in header.get("CsvContentTypes", [])}:
        return "CSV"
    return "BASE64"


def payload(mode: str, data: bytes, content_type: str, header: dict[str, Any]) -> dict[str, str]:
    how = encoding(content_type, header)
    text = base64.b64encode(data).decode() if how == "BASE64" else data.decode(errors="replace")
    return {"observedContentType": content_type, "mode": mode, "data": text, "encoding": how}


def sampled(invocation: int, percentage: float) -> bool:
    """Whether the `invocation`-th (from 0) of a variant is captured: the first, then every
    (100 / percentage)-th, `percentage` % of them in all."""
    return percentage > 0 and (invocation * percentage) % 100 < percentage


class DataCapture:
    """Writes capture records for the front; `sagemaker` and `s3` are boto3 clients on the moto server."""

    def __init__(self, sagemaker: Any, s3: Any, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.sagemaker = sagemaker
        self.s3 = s3
        self.now = now
        self.lock = threading.Lock()  # the front serves each request on its own thread
        self.invocations: dict[tuple[str, str], int] = {}
        self.configs: dict[str, dict[str, Any]] = {}  # endpoint config name -> its DataCaptureConfig ({}: none)

    def settings(self, endpoint: str) -> dict[str, Any]:
        """The DataCaptureConfig of the endpoint config in service (a sandbox deploy may change it)."""
        config_name = self.sagemaker.describe_endpoint(EndpointName=endpoint)["EndpointConfigName"]
        if config_name not in self.configs:
            described = self.sagemaker.describe_endpoint_config(EndpointConfigName=config_name)
            self.configs[config_name] = described.get("DataCaptureConfig") or {}
        return self.configs[config_name]

    def record(
        self, endpoint: str, variant: str, request: tuple[bytes, str], response: tuple[bytes, str]
    ) -> str | None:
        """Capture one invocation (body and content type of the request and of the answer) if the
        config captures and samples it; returns the object's S3 key, or None."""
        settings = self.settings(endpoint)
        if not settings.get("DestinationS3Uri") or settings.get("EnableCapture") is False:
            return None
        with self.lock:
            invocation = self.invocations.get((endpoint, variant), 0)
            self.invocations[(endpoint, variant)] = invocation + 1
        if not sampled(invocation, float(settings.get("InitialSamplingPercentage", 0))):
            return None
        modes = {option["CaptureMode"] for option in settings.get("CaptureOptions", [])}
        header = settings.get("CaptureContentTypeHeader") or {}
        at = self.now()
        data: dict[str, Any] = {}
        if "Input" in modes:
            data["endpointInput"] = payload("INPUT", request[0], request[1], header)
        if "Output" in modes:
            data["endpointOutput"] = payload("OUTPUT", response[0], response[1], header)
        line = {
            "captureData": data,
            "eventMetadata": {"eventId": str(uuid.uuid4()), "inferenceTime": at.strftime("%Y-%m-%dT%H:%M:%SZ")},
            "eventVersion": "0",
        }
        bucket, _, prefix = settings["DestinationS3Uri"].removeprefix("s3://").partition("/")
        folder = "/".join(part for part in (prefix.strip("/"), endpoint, variant) if part)
        key = f"{folder}/{at:%Y/%m/%d/%H}/{at:%M-%S}-{at.microsecond // 1000:03d}-{uuid.uuid4()}.jsonl"
        self.s3.put_object(Bucket=bucket, Key=key, Body=(json.dumps(line) + "\n").encode())
        return key
