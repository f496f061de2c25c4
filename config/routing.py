"""How the endpoint routes requests to instances (`routing_strategy`, `prefix_aware_routing`): the settings
each production variant's RoutingConfig gets, with the prefix-aware defaults derived here.

PREFIX_AWARE (botocore's sagemaker model, PrefixAwareRoutingConfig): requests whose first `PrefixLength`
bytes of the InvokeEndpoint(WithResponseStream) body are the same go to the same instance, until it has
`ConcurrencyThreshold` requests in flight; then to another. Both are required with PREFIX_AWARE
(PrefixLength 1024-65536, ConcurrencyThreshold 1-1024). How SageMaker matches prefixes (one hash of
exactly PrefixLength bytes, or a longest-prefix tree) is not documented, so the default holds under both
readings: it lies past everything every conversation shares and inside the first turn's own text, so
every turn of one conversation starts with the same PrefixLength bytes. docs/explanation/capacity-model.md "Routing"
gives the derivation and when each strategy pays.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from config.schema import EnvironmentConfig, Variant

# The request body `bin/loadtest` sends (config/domain/workload.yaml: 400-token system prompt, first user turn
# of 150-400 tokens; json.dumps with its ", " and ": " separators, ASCII) puts the user turn's text at
# byte 2,320-2,327 (the adapter name comes first, 11-18 characters) and ends the shortest first user turn
# at byte 3,135. 2,560 keeps the system prompt and at least 233 bytes (about 40 words) of the
# conversation's first user turn, and stays below 3,135. tests/stacks/test_routing.py recomputes both
# bounds from capacity.workload, so a changed workload cannot leave this stale.
DEFAULT_PREFIX_LENGTH = 2560
PREFIX_LENGTH_RANGE = (1024, 65536)  # botocore: PrefixAwareRoutingPrefixLength
CONCURRENCY_THRESHOLD_RANGE = (1, 1024)  # botocore: PrefixAwareRoutingConcurrencyThreshold


# The client contract under PREFIX_AWARE (botocore's sagemaker-runtime model, InvokeEndpoint and
# InvokeEndpointWithResponseStream): `PrefixAwareId`, sent as the header X-Amzn-SageMaker-Prefix-Aware-Id,
# 1-64 printable characters, "a stable identifier ... requests with the same prefix and the same identifier
# [go] to the same instance". The gateway sends each conversation's own on every turn, so a turn lands on
# the instance whose prefix cache holds its history (config.domain.physics counts that cache only then).
PREFIX_AWARE_ID_PARAMETER = "PrefixAwareId"
PREFIX_AWARE_ID_MAX_LENGTH = 64


def conversation_id() -> str:
    """A new conversation's PrefixAwareId: random, so no two conversations share an instance by accident."""
    return f"conv-{uuid.uuid4().hex}"


@dataclass(frozen=True)
class PrefixAwareSettings:
    """One variant's PrefixAwareRoutingConfig and where each figure comes from."""

    prefix_length: int
    concurrency_threshold: int
    prefix_source: str  # "prefix_aware_routing.prefix_length" or the derivation
    threshold_source: str

    def describe(self) -> str:
        return (
            f"PrefixLength {self.prefix_length:,} bytes ({self.prefix_source}), "
            f"ConcurrencyThreshold {self.concurrency_threshold} ({self.threshold_source})"
        )


def prefix_aware_settings(cfg: EnvironmentConfig, variant: Variant) -> PrefixAwareSettings | None:
    """The variant's PrefixAwareRoutingConfig; None unless routing_strategy is PREFIX_AWARE.

    A threshold left out is the fewest concurrent sequences any of the variant's instance types runs at
    the latency objective (planning.capacity), since "the threshold applies to every instance" of the
    variant (botocore, ConcurrencyThreshold); measured or assumed, as planning.capacity says.
    """
    if cfg.routing_strategy != "PREFIX_AWARE":
        return None
    given = cfg.prefix_aware_routing
    length = given.prefix_length if given and given.prefix_length is not None else None
    threshold = given.concurrency_threshold if given and given.concurrency_threshold is not None else None
    prefix_source = "prefix_aware_routing.prefix_length"
    if length is None:
        length, prefix_source = DEFAULT_PREFIX_LENGTH, "derived from config/domain/workload.yaml's request body"
    threshold_source = "prefix_aware_routing.concurrency_threshold"
    if threshold is None:
        threshold, threshold_source = derived_threshold(cfg, variant)
    return PrefixAwareSettings(length, threshold, prefix_source, threshold_source)


def derived_threshold(cfg: EnvironmentConfig, variant: Variant) -> tuple[int, str]:
    """(threshold, source): planning.capacity's concurrent_sequences of the variant's weakest pool type.

    KeyError when a pool type has no planning.capacity entry (config.checks.routing reports it first)."""
    capacity = cfg.planning.capacity
    weakest = min(variant.instance_types, key=lambda t: capacity[t].concurrent_sequences)
    figure = capacity[weakest]
    low, high = CONCURRENCY_THRESHOLD_RANGE
    threshold = max(low, min(high, figure.concurrent_sequences))
    how = "assumed" if figure.measured is None else f"measured {figure.measured.measured_at[:10]}"
    return threshold, f"planning.capacity {weakest} concurrent_sequences, {how}"
