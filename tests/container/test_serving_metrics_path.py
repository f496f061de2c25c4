"""What the container answers at `/metrics` on 8080, the path SageMaker's detailed observability would
scrape (botocore's sagemaker model, MetricsConfig): vLLM's Prometheus text, passed through the middleware
untouched in every serving state, since a sick or draining instance's metrics are the ones worth reading.
The stand-in serves vLLM's names (workbench/standin/engine.py); the middleware is the image's."""

import pytest
import test_serving_middleware

from container.serving.state import ServingState

engine = test_serving_middleware.engine  # the stand-in with our middleware, one per module


@pytest.mark.parametrize("state", [ServingState.READY, ServingState.UNHEALTHY, ServingState.DRAINING])
def test_metrics_is_the_engines_prometheus_text_in_every_state(engine, state):
    engine.set_state(state)
    try:
        response = engine.client.get("/metrics")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain")
        lines = response.text.splitlines()
        assert any(line.startswith("vllm:num_requests_running{") for line in lines)
        assert any(line.startswith("# TYPE vllm:") for line in lines)
    finally:
        engine.set_state(ServingState.READY)
