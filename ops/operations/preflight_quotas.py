"""`bin/ops preflight`'s SageMaker endpoint quotas for every pool type, against this deploy and the maxima.

ListServiceQuotas omits a quota whose applied value is not available (botocore service-quotas model), so
defaults come from ListAWSDefaultServiceQuotas; a type with neither is not offered for endpoints. The quota name
is SageMaker's own spelling, as ResourceLimitExceeded quotes it (DESIGN.md 3.2d).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from config import EnvironmentConfig, environment_label
from config.checks.platform import BLUE_GREEN_FLEETS, largest_fleet
from ops.operations.errors import error_code
from ops.operations.preflight_finding import Finding

SERVICE_CODE = "sagemaker"
SUFFIX = " for endpoint usage"
INCREASE = "request an increase (Service Quotas > Amazon SageMaker) and wait for it before deploying"


def endpoint_quotas(service_quotas: Any) -> dict[str, int]:
    """Instance type -> the account's endpoint quota in this region: applied values over defaults."""
    found: dict[str, int] = {}
    for operation in ("list_aws_default_service_quotas", "list_service_quotas"):  # applied last: it wins
        try:
            for page in service_quotas.get_paginator(operation).paginate(ServiceCode=SERVICE_CODE):
                for quota in page["Quotas"]:
                    if quota["QuotaName"].endswith(SUFFIX):
                        found[quota["QuotaName"].removesuffix(SUFFIX)] = int(quota["Value"])
        except ClientError as error:
            if error_code(error) != "NoSuchResourceException":
                raise
    return found


def needs(cfg: EnvironmentConfig) -> dict[str, tuple[int, int]]:
    """Instance type -> (initial instances, maximum) over the variants whose pools list it."""
    found: dict[str, tuple[int, int]] = {}
    for variant in cfg.variants:
        for instance_type in dict.fromkeys(variant.instance_types):
            initial, largest = found.get(instance_type, (0, 0))
            found[instance_type] = (initial + variant.initial_instance_count, largest + largest_fleet(cfg, variant))
    return found


def quota_findings(service_quotas: Any, cfg: EnvironmentConfig, region: str) -> list[Finding]:
    quotas = endpoint_quotas(service_quotas)
    findings = []
    for instance_type, (initial, largest) in sorted(needs(cfg).items()):
        name = f"Service Quota '{instance_type}{SUFFIX}' in {region}"
        if instance_type not in quotas:
            findings.append(
                Finding(
                    name,
                    "no such quota: the region does not offer the type for endpoints",
                    f"{instance_type} in {region}",
                    "choose another type or region (variants[].instance_type, fallback_instance_types)",
                )
            )
            continue
        applied = quotas[instance_type]
        deploy, ceiling = BLUE_GREEN_FLEETS * initial, BLUE_GREEN_FLEETS * largest
        if applied < deploy:
            why = f"{deploy} for this deploy ({BLUE_GREEN_FLEETS} x {initial} initial instances: blue/green runs two fleets)"
            findings.append(Finding(name, str(applied), why, INCREASE))
        elif applied < ceiling:
            why = f"{ceiling} for a deploy at the autoscaling ceiling ({BLUE_GREEN_FLEETS} x {largest} max_capacity)"
            findings.append(Finding(name, str(applied), why, f"{INCREASE}, or lower max_capacity"))
        claimed = cfg.endpoint_instance_quotas.get(instance_type)
        if claimed is not None and claimed > applied:  # a YAML below the account's errs on the safe side
            findings.append(
                Finding(
                    f"endpoint_instance_quotas.{instance_type} in {environment_label(cfg.name)}",
                    f"{claimed}, the account's quota is {applied}",
                    "the account's value (config checks and the planner trust it)",
                    f"set it to {applied}, or raise the quota to {claimed}",
                )
            )
    return findings
