"""Places where moto 5.2.5 differs from AWS in a way the ops CLI depends on, lifted for the process
that calls `apply()` (the sandbox server, the ops tests):

- `FakeEndpointConfig.validate_instance_type` checks a hard-coded list without ml.g5.* (DESIGN.md
  §3.3); SageMaker's API model has them (botocore sagemaker/2017-07-24 ProductionVariantInstanceType).
- Instance pools: moto refuses a production variant without InstanceType or ServerlessConfig, but
  one with `InstancePools` has no InstanceType ("you replace the InstanceType parameter ... with an
  InstancePools list", SageMaker guide realtime-endpoints-heterogeneous), and DescribeEndpoint's
  variant summaries carry `InstancePools[{InstanceType, CurrentInstanceCount}]` (botocore
  InstancePoolSummary) that moto does not report. Here every instance is of the priority-1 type
  (the sandbox's region always has the preferred type to give) unless a test set the variant's pools.
- `update_endpoint_weights_and_capacities` overwrites DesiredWeight and DesiredInstanceCount with
  None when an entry gives only the other one. The API documents both as optional per variant
  ("DesiredWeightAndCapacity": DesiredWeight, DesiredInstanceCount), and a weight change does not
  touch instance counts (that would fight the autoscaler): an omitted field keeps its value.
- CloudWatch GetMetricData answers nothing for a percentile statistic (`Statistics.get_statistics_for_type`
  knows Sum, Average, Minimum, Maximum and SampleCount only). CloudWatch computes `pNN` and `pNN.N`
  from the values stored (PutMetricData `Values`/`Counts`, or EMF value arrays); here they come from
  the values moto stored, by nearest rank. Percentiles of pre-aggregated StatisticValues are not
  available on AWS either, and stay None.
- CloudWatch GetMetricData scans every stored datapoint once per period per query: the sandbox's answers it from
  an index by metric instead (workbench/sandbox/metric_index.py), in time linear in what it reads.
"""

from __future__ import annotations

import math
import re
from typing import Any

from moto.cloudwatch import models as cloudwatch_models
from moto.sagemaker import models

from workbench.sandbox.metric_index import indexed

PERCENTILE = re.compile(r"^p(\d{1,2}(?:\.\d+)?|100)$")


def _any_ml_instance_type(self: Any, instance_type: str) -> None:
    if not instance_type.startswith("ml."):
        raise models.ValidationError(message=f"Value '{instance_type}' at 'instanceType' is not an ml.* type")


def _with_instance_pools(original: Any) -> Any:
    def validate_production_variants(self: Any, production_variants: list[dict[str, Any]]) -> None:
        plain = []
        for variant in production_variants:
            if "InstancePools" in variant and "InstanceType" not in variant:
                for pool in variant["InstancePools"]:
                    _any_ml_instance_type(self, pool["InstanceType"])
            else:
                plain.append(variant)
        original(self, plain)

    validate_production_variants.moto_fixed = True  # type: ignore[attr-defined]
    return validate_production_variants


def _reports_instance_pools(original: Any) -> Any:
    def describe_endpoint(self: Any, endpoint_name: str) -> dict[str, Any]:
        described = dict(original(self, endpoint_name))
        config = self.endpoint_configs.get(described.get("EndpointConfigName"))
        configured = {v["VariantName"]: v for v in config.production_variants} if config else {}
        summaries = []
        for summary in described.get("ProductionVariants", []):
            pools = configured.get(summary["VariantName"], {}).get("InstancePools")
            if pools and "InstancePools" not in summary:  # one a test put on moto's variant stays
                preferred = min(pools, key=lambda pool: pool["Priority"])["InstanceType"]
                count = summary.get("CurrentInstanceCount") or 0
                summary = {**summary, "InstancePools": [{"InstanceType": preferred, "CurrentInstanceCount": count}]}
            summaries.append(summary)
        described["ProductionVariants"] = summaries
        return described

    describe_endpoint.moto_fixed = True  # type: ignore[attr-defined]
    return describe_endpoint


def _keep_omitted_fields(original: Any) -> Any:
    def update(self: Any, endpoint_name: str, desired_weights_and_capacities: list[dict[str, Any]]) -> str:
        endpoint = self.endpoints.get(endpoint_name)
        live = {v["VariantName"]: dict(v) for v in endpoint.production_variants} if endpoint else {}
        arn = original(self, endpoint_name, desired_weights_and_capacities)
        for variant in endpoint.production_variants:
            before = live[variant["VariantName"]]
            for desired, current in (
                ("DesiredWeight", "CurrentWeight"),
                ("DesiredInstanceCount", "CurrentInstanceCount"),
            ):
                if variant.get(desired) is None:
                    variant[desired], variant[current] = before.get(desired), before.get(current)
        return arn

    update.moto_fixed = True  # type: ignore[attr-defined]
    return update


def nearest_rank(values: list[float], percent: float) -> float:
    """The smallest value with at least `percent` % of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(percent / 100 * len(ordered)) - 1)]


def _with_percentiles(original: Any) -> Any:
    def get_statistics_for_type(self: Any, stat: str) -> Any:
        match = PERCENTILE.match(stat)
        if match is None:
            return original(self, stat)
        values = self.metric_single_values_list
        return nearest_rank(values, float(match.group(1))) if values else None

    get_statistics_for_type.moto_fixed = True  # type: ignore[attr-defined]
    return get_statistics_for_type


def apply() -> None:
    models.FakeEndpointConfig.validate_instance_type = _any_ml_instance_type
    config = models.FakeEndpointConfig
    if not getattr(config.validate_production_variants, "moto_fixed", False):
        config.validate_production_variants = _with_instance_pools(config.validate_production_variants)
    backend = models.SageMakerModelBackend
    if not getattr(backend.describe_endpoint, "moto_fixed", False):
        backend.describe_endpoint = _reports_instance_pools(backend.describe_endpoint)
    if not getattr(backend.update_endpoint_weights_and_capacities, "moto_fixed", False):
        backend.update_endpoint_weights_and_capacities = _keep_omitted_fields(
            backend.update_endpoint_weights_and_capacities
        )
    statistics = cloudwatch_models.Statistics
    if not getattr(statistics.get_statistics_for_type, "moto_fixed", False):
        statistics.get_statistics_for_type = _with_percentiles(statistics.get_statistics_for_type)
    cloudwatch = cloudwatch_models.CloudWatchBackend
    if not getattr(cloudwatch.get_metric_data, "moto_fixed", False):
        cloudwatch.get_metric_data = indexed(cloudwatch.get_metric_data)
