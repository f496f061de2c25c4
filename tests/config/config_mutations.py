"""Independent mistakes in prod.yaml, each with the field path it must be reported under.

Any subset applied together must report every path: a mistake in one section may not hide the
cross-field checks of another: test_config_hostile.py, beside this module, asserts it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # the problem's field path (config.problems notation)
    apply: Callable[[dict], None]

    @property
    def leaf(self) -> str:
        """The field's own name, the same in any path notation (for comparing with older code)."""
        return self.path.split(".")[-1].split("[")[0]


def _set(*keys: str | int, value: object) -> Callable[[dict], None]:
    def apply(raw: dict) -> None:
        node = raw
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return apply


def _all_at_once_without_bake(raw: dict) -> None:
    raw["deployment"].update(traffic_routing="ALL_AT_ONCE", wait_interval_seconds=0)
    raw["deployment"].pop("step_size", None)


MUTATIONS = (
    Mutation("negative canary weight", "variants[1].initial_weight", _set("variants", 1, "initial_weight", value=-5)),
    Mutation("mutable image tag", "variants[0].image_tag", _set("variants", 0, "image_tag", value="latest")),
    Mutation(
        "instance too small", "variants[0].instance_type", _set("variants", 0, "instance_type", value="ml.g4dn.xlarge")
    ),
    Mutation("lora rank", "engine.max_lora_rank", _set("engine", "max_lora_rank", value=24)),
    Mutation("adapter named base", "engine.adapters[2]", _set("engine", "adapters", 2, value="base")),
    Mutation(
        "batched tokens below seqs", "engine.max_num_batched_tokens", _set("engine", "max_num_batched_tokens", value=64)
    ),
    Mutation("block size", "engine.block_size", _set("engine", "block_size", value=24)),
    Mutation("drain past SIGKILL", "container.drain_seconds", _set("container", "drain_seconds", value=45)),
    Mutation(
        "warmup past startup",
        "container.warmup_timeout_seconds",
        _set("container", "warmup_timeout_seconds", value=1000),
    ),
    Mutation(
        "timeout range",
        "deployment.maximum_execution_timeout_seconds",
        _set("deployment", "maximum_execution_timeout_seconds", value=28801),
    ),
    Mutation("prod all-at-once no bake", "deployment.wait_interval_seconds", _all_at_once_without_bake),
    Mutation("latency threshold", "alarms.model_latency_p99_ms", _set("alarms", "model_latency_p99_ms", value=10**15)),
    Mutation(
        "nan threshold", "alarms.error_rate_5xx_percent", _set("alarms", "error_rate_5xx_percent", value=float("nan"))
    ),
    Mutation(
        "right/ time zone",
        "autoscaling.primary.schedules[0].timezone",
        _set("autoscaling", "primary", "schedules", 0, "timezone", value="right/Asia/Tokyo"),
    ),
    Mutation(
        "start in the DST gap",
        "autoscaling.primary.schedules[3].start",
        _set("autoscaling", "primary", "schedules", 3, "start", value="cron(30 2 ? 3 SUN *)"),
    ),
    Mutation(
        "max capacity 10^12",
        "autoscaling.canary.max_capacity",
        _set("autoscaling", "canary", "max_capacity", value=10**12),
    ),
    Mutation("unknown region", "region", _set("region", value="xx-fake-1")),
    Mutation("name of another environment", "name", _set("name", value="prod-eu")),
    Mutation("malformed account", "account", _set("account", value="12345")),
    Mutation("malformed KMS key ARN", "endpoint_kms_key_arn", _set("endpoint_kms_key_arn", value="key-1234")),
    Mutation("empty tag", "tags.CostCenter", _set("tags", "CostCenter", value="")),
    Mutation(
        "metric not emitted",
        "autoscaling.primary.step_scaling[0].metric",
        _set(
            "autoscaling",
            "primary",
            "step_scaling",
            value=[{"metric": "queue_depth", "scale_out": [{"at_or_above": 50, "add_instances": 1}]}],
        ),
    ),
    Mutation(
        "capture sampling 0", "data_capture.sampling_percentage", _set("data_capture", "sampling_percentage", value=0)
    ),
)
