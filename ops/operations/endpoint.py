"""The live endpoint as SageMaker reports it: status, config in service, and per-variant facts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from config.variant_lookup import by_name, share_percent
from ops.operations.errors import ExitCode, OpsError, missing_is_not_found


@dataclass(frozen=True)
class PoolCount:
    """One InstancePoolSummary of DescribeEndpoint: instances of one type in service in a variant."""

    instance_type: str
    current_instance_count: int


@dataclass(frozen=True)
class LiveVariant:
    name: str
    image: str
    instance_type: str  # the endpoint config's InstanceType, or with instance pools the priority-1 type
    current_instance_count: int | None
    desired_instance_count: int | None
    current_weight: float
    desired_weight: float
    # Every type the endpoint config allows, by priority; with pools, DescribeEndpoint's counts per type.
    instance_types: tuple[str, ...] = ()
    pools: tuple[PoolCount, ...] = ()
    # VariantInstanceProvisionTimeoutInSeconds of the endpoint config: how long SageMaker tries the pools.
    provision_timeout_seconds: int | None = None

    @property
    def image_tag(self) -> str:
        return image_tag(self.image)

    @property
    def has_pools(self) -> bool:
        return len(self.instance_types) > 1 or bool(self.pools)

    def instances_by_type(self) -> dict[str, int | None]:
        """Instances in service per configured type, priority order: DescribeEndpoint's InstancePools counts
        (0 for a type it does not list), None for every type while it reports no pools."""
        configured = self.instance_types or (self.instance_type,)
        if self.pools:
            counts: dict[str, int | None] = dict.fromkeys(configured, 0)
            for pool in self.pools:
                counts[pool.instance_type] = (counts.get(pool.instance_type) or 0) + pool.current_instance_count
            return counts
        if len(configured) > 1:
            return dict.fromkeys(configured)
        return {self.instance_type: self.current_instance_count}

    def serving_type(self) -> str | None:
        """The one type every instance in service runs on; None when mixed, empty or not reported."""
        counts = self.instances_by_type()
        if any(count is None for count in counts.values()):
            return None
        serving = [instance_type for instance_type, count in counts.items() if count]
        return serving[0] if len(serving) == 1 else None


@dataclass(frozen=True)
class LiveEndpoint:
    name: str
    status: str
    config_name: str
    pending_config_name: str | None  # set while a blue/green deployment is under way
    failure_reason: str | None
    last_modified: datetime
    variants: tuple[LiveVariant, ...]

    def variant(self, name: str) -> LiveVariant:
        found = by_name(self.variants, name)
        if found is None:
            live = ", ".join(v.name for v in self.variants)
            raise OpsError(
                f"endpoint {self.name} has no variant '{name}' (it has: {live}): check the name or deploy the config",
                ExitCode.USAGE,
            )
        return found

    def share(self, name: str) -> float:
        """The variant's share of traffic in percent, by the weights in effect; 0 for any name while all are 0."""
        weights = [v.current_weight for v in self.variants]
        return share_percent(self.variant(name).current_weight, weights) if sum(weights) else 0.0


def image_tag(image_uri: str) -> str:
    """`…/repo:v1.2.0` → `v1.2.0`; `…/repo@sha256:…` → `sha256:…`."""
    if "@" in image_uri:
        return image_uri.split("@", 1)[1]
    return image_uri.rsplit(":", 1)[1] if ":" in image_uri.rsplit("/", 1)[-1] else ""


def configured_types(variant: dict[str, Any]) -> tuple[str, ...]:
    """A ProductionVariant's types, preferred first: InstanceType, InstancePools by Priority, or ("serverless",)."""
    pools = variant.get("InstancePools")
    if pools:
        return tuple(pool["InstanceType"] for pool in sorted(pools, key=lambda pool: pool["Priority"]))
    return (variant.get("InstanceType", "serverless"),)


def describe_endpoint(sagemaker: Any, endpoint_name: str, env_name: str) -> dict[str, Any]:
    with missing_is_not_found(
        "Could not find endpoint",
        f"endpoint {endpoint_name} does not exist in {sagemaker.meta.region_name}: "
        f"deploy it with `make deploy ENV={env_name}` (or check --region / AWS_PROFILE)",
    ):
        return sagemaker.describe_endpoint(EndpointName=endpoint_name)


def read_endpoint(sagemaker: Any, endpoint_name: str, env_name: str) -> LiveEndpoint:
    described = describe_endpoint(sagemaker, endpoint_name, env_name)
    config = sagemaker.describe_endpoint_config(EndpointConfigName=described["EndpointConfigName"])
    configured = {v["VariantName"]: v for v in config["ProductionVariants"]}
    variants = []
    for summary in described.get("ProductionVariants", []):
        name = summary["VariantName"]
        model = sagemaker.describe_model(ModelName=configured[name]["ModelName"])
        container = model.get("PrimaryContainer") or model["Containers"][0]
        types = configured_types(configured[name])
        variants.append(
            LiveVariant(
                name=name,
                image=container["Image"],
                instance_type=types[0],
                current_instance_count=summary.get("CurrentInstanceCount"),
                desired_instance_count=summary.get("DesiredInstanceCount"),
                current_weight=float(summary.get("CurrentWeight") or 0),
                desired_weight=float(summary.get("DesiredWeight") or 0),
                instance_types=types,
                pools=tuple(
                    PoolCount(pool["InstanceType"], pool["CurrentInstanceCount"])
                    for pool in summary.get("InstancePools") or ()
                ),
                provision_timeout_seconds=configured[name].get("VariantInstanceProvisionTimeoutInSeconds"),
            )
        )
    pending = described.get("PendingDeploymentSummary") or {}
    return LiveEndpoint(
        name=endpoint_name,
        status=described["EndpointStatus"],
        config_name=described["EndpointConfigName"],
        pending_config_name=pending.get("EndpointConfigName"),
        failure_reason=described.get("FailureReason"),
        last_modified=described["LastModifiedTime"],
        variants=tuple(variants),
    )
