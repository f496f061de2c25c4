"""Props the construct tests with minimal props share: figures stated here, not read from an environment's config."""

from constructs.serving_alarms import AlarmThresholds

THRESHOLDS = AlarmThresholds(
    error_rate_5xx_percent=0.5,
    evaluation_minutes=4,
    ttft_p95_ms=700,
    ttft_min_requests_per_minute=20,
    release_5xx_percent=5,
    release_ttft_p95_ms=1000,
    release_min_requests_per_minute=20,
    error_rate_4xx_percent=5,
    overhead_latency_p99_ms=100,
    cpu_percent=90,
    gpu_idle_percent=10,
    gpu_idle_minutes=60,
    queue_depth_critical=80,
    kv_cache_percent=95,
    shed_page_percent=5,
    prefix_cache_hit_min_percent=50,
    capacity_ceiling_percent=100,
    capacity_ceiling_minutes=15,
)
