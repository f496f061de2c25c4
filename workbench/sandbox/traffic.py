"""`python -m workbench.sandbox traffic`: users' traffic for the sandbox, the evidence the canary guard needs.

Two parts, each doing what a live endpoint's users would leave behind:

* real streamed chat completions, `streams` per variant, through the sandbox's runtime API with the
  variant pinned (`X-Amzn-SageMaker-Target-Variant`): the runtime front counts and data-captures them,
  and each variant's model server (the serving image's middleware in front of the stand-in) writes
  their time to first token as EMF, which the sandbox's EMF agent puts into CloudWatch. The guard
  compares the canary's TTFT p95 with the primary's only over at least `--min-canary-invocations`
  (100) streams each, and `model canary slow` shows up here because these requests are served;
* the rest of the minute's invocations (`per_minute` split by the live weights, less what was
  streamed) as `AWS/SageMaker` Invocations and Invocation5XXErrors datapoints, for the guard's
  evidence, 5XX margin and capacity check.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import httpx

from workbench.sandbox.runtime import invocation_datapoints, record_invocations
from workbench.sandbox.server import State

STREAM_BODY = {"messages": [{"role": "user", "content": "Recommend a manga."}], "max_tokens": 8, "stream": True}
PARALLEL_STREAMS = 6
# The middleware writes its EMF lines every second (LOG_FLUSH_SECONDS, container/serving/middleware.py)
# and the EMF agent reads the log every 0.2 s (workbench/sandbox/emf_agent.py): after this, CloudWatch has them.
METRICS_ARRIVE_SECONDS = 2.0
# PutMetricData takes at most 1,000 MetricData entries a call (botocore cloudwatch model, "MetricData").
DATAPOINTS_PER_CALL = 1000
MAX_BACKFILL_HOURS = 14 * 24  # what `bin/ops traffic` reads at most (CloudWatch keeps minutes for 15 days)


def live_weights(state: State) -> dict[str, float]:
    sagemaker = state.session().client("sagemaker", endpoint_url=state.moto_url)
    described = sagemaker.describe_endpoint(EndpointName=state.endpoint)
    return {v["VariantName"]: float(v.get("CurrentWeight") or 0) for v in described["ProductionVariants"]}


def stream_once(client: httpx.Client, state: State, variant: str) -> bool:
    """One streamed invocation of `variant` through the runtime front; whether it was answered."""
    answer = client.post(
        f"{state.runtime_url}/endpoints/{state.endpoint}/invocations-response-stream",
        content=json.dumps(STREAM_BODY).encode(),
        headers={"Content-Type": "application/json", "X-Amzn-SageMaker-Target-Variant": variant},
    )
    return answer.status_code == 200


def stream_requests(state: State, variants: list[str], per_variant: int) -> dict[str, int]:
    """`per_variant` answered streams per variant (counted), then a pause for the model servers to
    flush their EMF lines and the agent to forward them, so the guard run next sees them."""
    if per_variant <= 0:
        return dict.fromkeys(variants, 0)
    jobs = [variant for variant in variants for _ in range(per_variant)]
    with httpx.Client(timeout=70) as client, ThreadPoolExecutor(max_workers=PARALLEL_STREAMS) as pool:
        answered = list(pool.map(lambda variant: stream_once(client, state, variant), jobs))
    time.sleep(METRICS_ARRIVE_SECONDS)
    return {variant: sum(ok for v, ok in zip(jobs, answered, strict=True) if v == variant) for variant in variants}


def record_traffic(state: State, per_minute: float, canary_5xx_percent: float, streams: int) -> str:
    """A minute of the endpoint's traffic, split by the live weights: `streams` of each variant's
    share really served, the rest recorded in the sandbox's CloudWatch. Returns what was done."""
    weights = live_weights(state)
    serving = [variant for variant, weight in weights.items() if weight > 0]  # users never reach a 0 % variant
    streamed = {variant: 0 for variant in weights} | stream_requests(state, serving, streams)
    cloudwatch = state.session().client("cloudwatch", endpoint_url=state.moto_url)
    served = []
    for variant, weight in weights.items():
        share = round(per_minute * weight / sum(weights.values()))
        errors = round(share * canary_5xx_percent / 100) if variant == "canary" else 0
        record_invocations(cloudwatch, state.endpoint, variant, max(0, share - streamed[variant]), errors)
        total = max(share, streamed[variant])
        details = [f"{streamed[variant]} streamed"] if streams > 0 else []
        details += [f"{errors} 5XX"] if errors else []
        served.append(f"{variant} {total}" + (f" ({', '.join(details)})" if details else ""))
    return ", ".join(served)


def backfill(state: State, per_minute: float, hours: float) -> str:
    """The last `hours` of whole minutes before this one, each with `per_minute` invocations split by the live
    weights, recorded in the sandbox's CloudWatch: the past `bin/ops traffic` reads without waiting an hour a
    point. Only counts; nothing is served."""
    if not 0 < hours <= MAX_BACKFILL_HOURS:
        raise ValueError(
            f"--backfill takes 0 < HOURS <= {MAX_BACKFILL_HOURS} (what `bin/ops traffic` reads), got {hours:g}"
        )
    weights = live_weights(state)
    shares = {variant: round(per_minute * weight / (sum(weights.values()) or 1)) for variant, weight in weights.items()}
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    minutes = [now - timedelta(minutes=m) for m in range(round(hours * 60), 0, -1)]
    data = [
        datum
        for at in minutes
        for variant, share in shares.items()
        for datum in invocation_datapoints(state.endpoint, variant, share, 0, at)
    ]
    cloudwatch = state.session().client("cloudwatch", endpoint_url=state.moto_url)
    for first in range(0, len(data), DATAPOINTS_PER_CALL):
        cloudwatch.put_metric_data(Namespace="AWS/SageMaker", MetricData=data[first : first + DATAPOINTS_PER_CALL])
    split = ", ".join(f"{variant} {share}" for variant, share in shares.items())
    return f"{len(minutes)} minutes from {minutes[0]:%Y-%m-%d %H:%M} to {minutes[-1]:%H:%M} UTC, each: {split}"
