"""The seeds' SageMaker adapter design, for comparison only (workbench/benchmarks/serving_overhead.py, setup c):
a second HTTP server in front of the engine that opens a new HTTP client for every request and
buffers the whole response before answering. Not used anywhere else; never shipped."""

from __future__ import annotations

import os

import httpx
from fastapi import FastAPI, Request, Response

UPSTREAM = os.environ["SEED_ADAPTER_UPSTREAM"]
app = FastAPI()


@app.post("/invocations")
async def invocations(request: Request) -> Response:
    payload = await request.json()
    async with httpx.AsyncClient(timeout=120.0) as client:  # a new client (and connection) per request
        upstream = await client.post(f"{UPSTREAM}/v1/chat/completions", json=payload)
    return Response(  # the whole body, after the engine has finished
        content=upstream.content,
        status_code=upstream.status_code,
        media_type=upstream.headers.get("content-type"),
    )
