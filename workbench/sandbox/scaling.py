"""Application Auto Scaling's own scaling in the sandbox, and the record of it that `bin/ops scaling-history`
reads. moto 5.2.5 has no DescribeScalingActivities (its server answers 500 with an HTML page) and never
scales a variant; here the sandbox server does what AWS does when a scalable target's range moves past the
variant's instance count: "Application Auto Scaling ... also initiates scaling activities when you modify the
maximum or minimum size of the scalable target, either manually or following a schedule" (Application Auto
Scaling User Guide, "Scaling activities for Application Auto Scaling"). Rollback's raised floor and
`restore-scaling` are such changes.

Each change sets the variant's instance count and records one activity with the fields and wording of the
SageMaker guide's page "endpoint-scaling-query-history": Cause "minimum capacity was set to N" (or maximum),
Description "Setting desired instance count to N.", StatusCode Successful; or Failed, with SageMaker's
ResourceLimitExceeded message, when the account's "<type> for endpoint usage" quota (the config's
endpoint_instance_quotas) cannot hold the new count. In the sandbox a scale-out is in service at once, so its
StartTime and EndTime are the same second: no provisioning time is ever read from it (the sandbox refuses
`scaling-history --write-config`).

Only the sandbox server applies this (`apply(quotas)`); the ops tests' moto keeps instance counts where a
test puts them.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from moto.applicationautoscaling import models as autoscaling_models
from moto.applicationautoscaling import responses as autoscaling_responses
from moto.sagemaker.models import sagemaker_backends

SAGEMAKER = "sagemaker"
DIMENSION = "sagemaker:variant:DesiredInstanceCount"
ACTIVITIES = "sandbox_scaling_activities"  # the attribute each backend keeps its record under
QUOTAS: dict[str, int] = {}  # instance type -> the account's endpoint instance quota (set by apply)
# `python -m workbench.sandbox quota ENV TYPE=N` writes quotas here (the sandbox's Service Quotas): read at every change.
QUOTA_OVERRIDES: list[Path] = []


def quota_file(state_dir: Path, env_name: str) -> Path:
    return state_dir / f"{env_name}-quotas.json"


def quota(instance_type: str) -> int | None:
    overrides = json.loads(QUOTA_OVERRIDES[0].read_text()) if QUOTA_OVERRIDES and QUOTA_OVERRIDES[0].exists() else {}
    return overrides.get(instance_type, QUOTAS.get(instance_type))


def record(backend: Any) -> list[dict[str, Any]]:
    if not hasattr(backend, ACTIVITIES):
        setattr(backend, ACTIVITIES, [])
    return getattr(backend, ACTIVITIES)


def _variant(sagemaker: Any, resource_id: str) -> tuple[Any, dict[str, Any]] | None:
    """The endpoint and production variant a `endpoint/<name>/variant/<variant>` target names, if they exist."""
    parts = resource_id.split("/")
    if len(parts) != 4 or parts[0] != "endpoint" or parts[2] != "variant":
        return None
    endpoint = sagemaker.endpoints.get(parts[1])
    variant = (
        next((v for v in endpoint.production_variants if v["VariantName"] == parts[3]), None) if endpoint else None
    )
    return (endpoint, variant) if variant else None


def _instance_type(sagemaker: Any, endpoint: Any, variant_name: str) -> str | None:
    config = sagemaker.endpoint_configs.get(endpoint.endpoint_config_name)
    configured = next((v for v in config.production_variants if v["VariantName"] == variant_name), {}) if config else {}
    pools = configured.get("InstancePools")
    return min(pools, key=lambda pool: pool["Priority"])["InstanceType"] if pools else configured.get("InstanceType")


def _in_use(sagemaker: Any, endpoint: Any, instance_type: str) -> int:
    """Instances of `instance_type` this endpoint runs: the sandbox account's whole use of the type."""
    return sum(
        int(v.get("CurrentInstanceCount") or 0)
        for v in endpoint.production_variants
        if _instance_type(sagemaker, endpoint, v["VariantName"]) == instance_type
    )


def _limit_message(target: int, instance_type: str, quota: int, in_use: int, delta: int) -> str:
    """SageMaker's refusal as the guide quotes it (endpoint-scaling-query-history)."""
    return (
        f"Failed to set desired instance count to {target}. Reason: The account-level service limit "
        f"'{instance_type} for endpoint usage' is {quota} Instances, with current utilization of {in_use} Instances "
        f"and a request delta of {delta} Instances. Please contact AWS support to request an increase for this "
        "limit. (Service: AmazonSageMaker; Status Code: 400; Error Code: ResourceLimitExceeded; "
        f"Request ID: {uuid.uuid4()})."
    )


def reconcile(backend: Any, resource_id: str, minimum: int | None, maximum: int | None) -> None:
    """Moves the variant's instance count into [minimum, maximum] and records the activity, if it was outside."""
    sagemaker = sagemaker_backends[backend.account_id][backend.region_name]
    found = _variant(sagemaker, resource_id)
    if found is None:
        return
    endpoint, variant = found
    current = int(variant.get("CurrentInstanceCount") or 0)
    if minimum is not None and current < minimum:
        wanted, cause = minimum, f"minimum capacity was set to {minimum}"
    elif maximum is not None and current > maximum:
        wanted, cause = maximum, f"maximum capacity was set to {maximum}"
    else:
        return
    instance_type = _instance_type(sagemaker, endpoint, variant["VariantName"]) or "?"
    limit, in_use, delta = quota(instance_type), _in_use(sagemaker, endpoint, instance_type), wanted - current
    now = time.time()
    activity = {
        "ActivityId": str(uuid.uuid4()),
        "ServiceNamespace": SAGEMAKER,
        "ResourceId": resource_id,
        "ScalableDimension": DIMENSION,
        "Description": f"Setting desired instance count to {wanted}.",
        "Cause": cause,
        "StartTime": now,
        "EndTime": now,
    }
    if delta > 0 and limit is not None and in_use + delta > limit:
        activity.update(StatusCode="Failed", StatusMessage=_limit_message(wanted, instance_type, limit, in_use, delta))
    else:
        variant["CurrentInstanceCount"] = variant["DesiredInstanceCount"] = wanted
        activity.update(
            StatusCode="Successful",
            StatusMessage=f"Successfully set desired instance count to {wanted}. "
            "Change successfully fulfilled by sagemaker.",
        )
    record(backend).append(activity)


def _register_and_scale(original: Any) -> Any:
    def register_scalable_target(self: Any, *args: Any, **kwargs: Any) -> Any:
        target = original(self, *args, **kwargs)
        if target.service_namespace == SAGEMAKER and target.scalable_dimension == DIMENSION:
            reconcile(self, target.resource_id, target.min_capacity, target.max_capacity)
        return target

    register_scalable_target.sandbox_scaling = True  # type: ignore[attr-defined]
    return register_scalable_target


def describe_scaling_activities(self: Any) -> str:
    """The response side of DescribeScalingActivities (botocore application-autoscaling 2016-02-06): newest
    first, filtered by ResourceId and ScalableDimension; one page (the sandbox records a handful)."""
    namespace = self._get_param("ServiceNamespace")
    resource_id, dimension = self._get_param("ResourceId"), self._get_param("ScalableDimension")
    activities = [
        activity
        for activity in reversed(record(self.applicationautoscaling_backend))
        if activity["ServiceNamespace"] == namespace
        and resource_id in (None, activity["ResourceId"])
        and dimension in (None, activity["ScalableDimension"])
    ]
    return json.dumps({"ScalingActivities": activities})


def patches() -> list[tuple[Any, str, Any]]:
    """(owner, attribute, replacement) for moto: the sandbox server sets them for good, a test with monkeypatch."""
    backend = autoscaling_models.ApplicationAutoscalingBackend
    registered = backend.register_scalable_target
    return [
        (
            backend,
            "register_scalable_target",
            registered if hasattr(registered, "sandbox_scaling") else _register_and_scale(registered),
        ),
        (
            autoscaling_responses.ApplicationAutoScalingResponse,
            "describe_scaling_activities",
            describe_scaling_activities,
        ),
    ]


def apply(quotas: dict[str, int], overrides: Path) -> None:
    """The sandbox server's scaling: `quotas` are the environment's endpoint_instance_quotas, `overrides` the
    file `python -m workbench.sandbox quota` writes."""
    QUOTAS.clear()
    QUOTAS.update(quotas)
    QUOTA_OVERRIDES[:] = [overrides]
    overrides.unlink(missing_ok=True)  # a new sandbox starts with the config's quotas
    for owner, name, replacement in patches():
        setattr(owner, name, replacement)
