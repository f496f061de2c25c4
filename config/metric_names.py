"""SageMaker's predefined scaling metrics, spelled once for the config, the planner and the constructs.

Plain strings, no CDK: the config and the planner import this without synthesising anything.
"""

from __future__ import annotations

INVOCATIONS_PER_INSTANCE = "SageMakerVariantInvocationsPerInstance"
# Concurrent requests per model copy, reported every 10 s: target tracking on it scales out faster.
HIGH_RESOLUTION = "SageMakerVariantConcurrentRequestsPerModelHighResolution"
