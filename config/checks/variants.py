"""The variants: unique names, how many the rollback alarms allow, a weight to serve, and each one's
image tag, storage volume and storage key against its instance type."""

from __future__ import annotations

from collections import Counter

from config.alarm_counts import MAX_ROLLBACK_ALARMS, ROLLBACK_ALARMS_PER_VARIANT
from config.problems import Problem, did_you_mean, quote, refuse
from config.schema import MUTABLE_TAGS, Catalog, EnvironmentConfig, InstanceType, Variant
from config.sections import InvalidInput, is_none, skip_invalid


def check_variants(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    problems = skip_invalid(_check_variant_set, cfg)
    for index in range(len(cfg.variants)):
        problems += skip_invalid(_check_variant, cfg, index, catalog)
    return problems


def _check_variant_set(cfg: EnvironmentConfig) -> list[Problem]:
    problems = []
    for name, count in Counter(v.name for v in cfg.variants).items():
        if count > 1:
            problems.append(("variants", f"variant names must be unique, '{name}' appears {count} times"))
    if len(cfg.variants) * ROLLBACK_ALARMS_PER_VARIANT > MAX_ROLLBACK_ALARMS:
        problems.append(
            (
                "variants",
                f"at most {MAX_ROLLBACK_ALARMS // ROLLBACK_ALARMS_PER_VARIANT} variants (each adds "
                f"{ROLLBACK_ALARMS_PER_VARIANT} rollback alarms, SageMaker takes {MAX_ROLLBACK_ALARMS}), "
                f"got {len(cfg.variants)}",
            )
        )
    if all(v.initial_weight == 0 for v in cfg.variants):
        problems.append(("variants", "at least one variant needs initial_weight > 0, all are 0"))
    return problems


def _check_variant(cfg: EnvironmentConfig, index: int, catalog: Catalog) -> list[Problem]:
    v, path = cfg.variants[index], f"variants[{index}]"
    return [
        *skip_invalid(_check_image_tag, v, path),
        *skip_invalid(_check_volume, v, path, catalog),
        *skip_invalid(_check_storage_key, cfg, v, catalog),
    ]


def _instance(v: Variant, catalog: Catalog) -> InstanceType:
    """The catalog entry of the variant's instance type; InvalidInput (reported once) when unknown."""
    instance = catalog.instance_types.get(v.instance_type)
    if instance is None:
        raise InvalidInput
    return instance


def _check_instance_type(v: Variant, path: str, catalog: Catalog) -> list[Problem]:
    if v.instance_type not in catalog.instance_types:
        known = ", ".join(sorted(catalog.instance_types))
        hint = did_you_mean(v.instance_type, catalog.instance_types)
        return [(f"{path}.instance_type", f"unknown instance type {quote(v.instance_type)}{hint}; known: {known}")]
    return []


def _check_volume(v: Variant, path: str, catalog: Catalog) -> list[Problem]:
    problems = _check_instance_type(v, path, catalog)
    if not problems and _instance(v, catalog).local_nvme and not is_none(v.volume_size_gb):
        problems.append(
            (
                f"{path}.volume_size_gb",
                f"{v.instance_type} has local NVMe storage; SageMaker refuses VolumeSizeInGB on it, "
                f"got {v.volume_size_gb} (remove the field)",
            )
        )
    return problems


def _check_storage_key(cfg: EnvironmentConfig, v: Variant, catalog: Catalog) -> list[Problem]:
    if _instance(v, catalog).local_nvme and not is_none(cfg.endpoint_kms_key_arn):
        return refuse(
            "endpoint_kms_key_arn",
            f"variant '{v.name}' runs on {v.instance_type}, which has local NVMe storage; "
            "a storage KMS key does not apply to it (remove the field)",
        )
    return []


def _check_image_tag(v: Variant, path: str) -> list[Problem]:
    # ECR tags are case-sensitive, but `Latest` is the same mistake as `latest`.
    if v.image_tag.lower() in MUTABLE_TAGS:
        return [(f"{path}.image_tag", f"must be an immutable tag or sha256 digest, got mutable '{v.image_tag}'")]
    return []
