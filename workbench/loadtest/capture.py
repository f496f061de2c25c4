"""`--workload capture`: the request bodies the endpoint's data capture stored in S3, replayed.

SageMaker writes captured traffic as JSON Lines under
`<DestinationS3Uri>/<endpoint>/<variant>/yyyy/mm/dd/hh/<file>.jsonl` (SageMaker developer guide, "Capture
data from real-time endpoint" and "View captured data"), one record per line:
`{"captureData": {"endpointInput": {"observedContentType", "mode": "INPUT", "data", "encoding"},
"endpointOutput": {...}}, "eventMetadata": {"eventId", "inferenceTime"}, "eventVersion": "0"}`, where
`encoding` says how `data` holds the body: "JSON" (the body's text), "CSV" (text) or "BASE64".
The destination is read from the live endpoint config (DataCaptureConfig.DestinationS3Uri).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from workbench.loadtest.workload import CapturedWorkload, WorkloadError, json_body, replayable

MAX_OBJECTS = 200  # the newest capture files read; enough for thousands of requests


def request_body(record: dict[str, Any]) -> Any:
    """The request body of one capture record, or None when it holds none we can replay."""
    endpoint_input = (record.get("captureData") or {}).get("endpointInput") or {}
    data, encoding = endpoint_input.get("data"), str(endpoint_input.get("encoding", "")).upper()
    if not isinstance(data, str):
        return None
    if encoding == "BASE64":
        try:
            data = base64.b64decode(data, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None
    elif encoding not in ("JSON", "CSV"):
        return None
    return json_body(data)


def split_s3_uri(uri: str) -> tuple[str, str]:
    if not uri.startswith("s3://"):
        raise WorkloadError(f"data capture destination {uri!r} is not an s3:// URI")
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    return bucket, prefix.rstrip("/")


def captured_workload(s3: Any, destination_uri: str, endpoint: str, variant: str) -> CapturedWorkload:
    bucket, base = split_s3_uri(destination_uri)
    prefix = "/".join(part for part in (base, endpoint, variant) if part) + "/"
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [item["Key"] for item in page.get("Contents", []) if item["Key"].endswith(".jsonl")]
    bodies, skipped = [], 0
    for key in sorted(keys)[-MAX_OBJECTS:]:  # yyyy/mm/dd/hh in the key: sorted is chronological
        text = s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode(errors="replace")
        for line in text.splitlines():
            record = json_body(line) if line.strip() else None
            body = request_body(record) if isinstance(record, dict) else None
            if replayable(body):
                bodies.append(body)
            elif line.strip():
                skipped += 1
    if not bodies:
        raise WorkloadError(
            f"no replayable request in s3://{bucket}/{prefix} ({len(keys)} capture files, {skipped} records "
            "without a chat or completion body): is data capture enabled and has the variant served traffic?"
        )
    return CapturedWorkload(
        f"capture s3://{bucket}/{prefix} ({len(bodies)} requests, {skipped} skipped)", tuple(bodies)
    )


def capture_record(body: dict[str, Any], encoding: str = "JSON") -> str:
    """One record in SageMaker's capture format (for the sandbox and tests)."""
    text = json.dumps(body)
    data = base64.b64encode(text.encode()).decode() if encoding == "BASE64" else text
    return json.dumps(
        {
            "captureData": {
                "endpointInput": {"observedContentType": "application/json", "mode": "INPUT", "data": data,
                                  "encoding": encoding},
                "endpointOutput": {"observedContentType": "text/event-stream", "mode": "OUTPUT", "data": "",
                                   "encoding": "BASE64"},
            },
            "eventMetadata": {"eventId": "00000000-0000-0000-0000-000000000000", "inferenceTime": "2026-11-25T00:00:00Z"},
            "eventVersion": "0",
        }
    )  # fmt: skip
