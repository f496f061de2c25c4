"""`bin/ops smoke` sends one PrefixAwareId (config.routing) on both of an adapter's requests, as the header."""

from __future__ import annotations

import boto3
from botocore.awsrequest import AWSResponse

from ops.operations.smoke import SmokeRequest, smoke_adapter

HEADER = "X-Amzn-SageMaker-Prefix-Aware-Id"


class Refusal:
    """A 400's body, as urllib3 would stream it."""

    def stream(self, *_args, **_kwargs):
        yield b'{"message": "refused by the test"}'


def test_both_requests_of_an_adapter_carry_one_conversation_id_and_adapters_differ():
    client = boto3.client(
        "sagemaker-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    seen = []

    def capture(request, **_):
        seen.append(request.headers.get(HEADER))
        return AWSResponse(request.url, 400, {}, Refusal())

    client.meta.events.register("before-send.sagemaker-runtime.*", capture)
    for adapter in ("manga_domain_v3", "jp_style_v1"):
        smoke_adapter(client, SmokeRequest("endpoint", adapter, "hi", 8, None), lambda: 0.0)
    first, second = seen[:2], seen[2:]
    assert first[0] and first[0] == first[1]
    assert second[0] and second[0] == second[1]
    assert first[0] != second[0]
