"""The live endpoint as SageMaker reports it: status, config in service, and per-variant facts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from config.variant_lookup import by_name, share_percent
from ops.errors import ExitCode, OpsError, missing_is_not_found


@dataclass(frozen=True)
class LiveVariant:
    name: str
    image: str
    instance_type: str
    current_instance_count: int | None
    desired_instance_count: int | None
    current_weight: float
    desired_weight: float

    @property
    def image_tag(self) -> str:
        return image_tag(self.image)


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
        variants.append(
            LiveVariant(
                name=name,
                image=container["Image"],
                instance_type=configured[name].get("InstanceType", "serverless"),
                current_instance_count=summary.get("CurrentInstanceCount"),
                desired_instance_count=summary.get("DesiredInstanceCount"),
                current_weight=float(summary.get("CurrentWeight") or 0),
                desired_weight=float(summary.get("DesiredWeight") or 0),
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
