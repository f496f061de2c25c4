"""The variants: unique names, how many the rollback alarms allow, a weight to serve, and each one's
image tag, instance pools, storage volume and storage key against its instance types.

Instance pools (`fallback_instance_types`, emitted as ProductionVariant.InstancePools): every rule on
`instance_type` applies to each fallback too (here, in vram_budget and in platform), and a failing
fallback is refused at `variants[i].fallback_instance_types[j]`, naming the type and the reason.
SageMaker's guide ("Deploy to multiple instance types with instance pools",
https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-heterogeneous.html) states no
limitations; what it leaves open is decided conservatively where the refusal or assumption sits
(docs/explanation/platform-notes.md "Instance pools").
"""

from __future__ import annotations

from collections import Counter

from config.alarm_counts import MAX_ROLLBACK_ALARMS, ROLLBACK_ALARMS_PER_VARIANT
from config.naming import PROJECT
from config.problems import Problem, did_you_mean, quote, refuse
from config.schema import MUTABLE_TAGS, Catalog, EnvironmentConfig, InstanceType, Variant
from config.sections import InvalidInput, is_none, skip_invalid

# The only model data buckets the stack roles' permissions boundary lets them read (issue 51).
MODEL_BUCKET_PREFIX = f"s3://{PROJECT.lower()}-"


def check_variants(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    problems = skip_invalid(_check_variant_set, cfg) + skip_invalid(_check_model_data_buckets, cfg)
    for index in range(len(cfg.variants)):
        problems += skip_invalid(_check_variant, cfg, index, catalog)
    return problems


def _check_model_data_buckets(cfg: EnvironmentConfig) -> list[Problem]:
    return [
        (
            f"variants[{index}].model_data_s3_uri",
            f"the model data must be in a bucket named {PROJECT.lower()}-…, the only buckets the stack roles' "
            f"permissions boundary lets them read (constructs/stack_role_boundary.py), got {quote(variant.model_data_s3_uri)}",
        )
        for index, variant in enumerate(cfg.variants)
        if not variant.model_data_s3_uri.startswith(MODEL_BUCKET_PREFIX)
    ]


def _check_variant_set(cfg: EnvironmentConfig) -> list[Problem]:
    problems = []
    for name, count in Counter(v.name for v in cfg.variants).items():
        if count > 1:
            problems.append(("variants", f"variant names must be unique, '{name}' appears {count} times"))
    if len(cfg.variants) * ROLLBACK_ALARMS_PER_VARIANT > MAX_ROLLBACK_ALARMS:
        problems += refuse(
            "variants",
            f"at most {MAX_ROLLBACK_ALARMS // ROLLBACK_ALARMS_PER_VARIANT} variants (each adds "
            f"{ROLLBACK_ALARMS_PER_VARIANT} rollback alarms, SageMaker takes {MAX_ROLLBACK_ALARMS}), "
            f"got {len(cfg.variants)}",
        )
    if all(v.initial_weight == 0 for v in cfg.variants):
        problems.append(("variants", "at least one variant needs initial_weight > 0, all are 0"))
    return problems


def _check_variant(cfg: EnvironmentConfig, index: int, catalog: Catalog) -> list[Problem]:
    v, path = cfg.variants[index], f"variants[{index}]"
    return [
        *skip_invalid(_check_busy_wait, cfg, v, path),
        *skip_invalid(_check_image_tag, v, path),
        *skip_invalid(_check_fallbacks, v, path, catalog),
        *skip_invalid(_check_provision_timeout, v, path),
        *skip_invalid(_check_volume, v, path, catalog),
        *skip_invalid(_check_storage_key, cfg, v, catalog),
    ]


def pool_types(v: Variant) -> list[tuple[str, str]]:
    """(field, instance type) for every pool, preferred first: the field a refusal of that type names.

    A fallback list that failed validation leaves the preferred type alone (it is already reported);
    an invalid item stays INVALID, so a per-type check wrapped in `skip_invalid` skips just that one.
    """
    try:
        fallbacks = [(f"fallback_instance_types[{j}]", t) for j, t in enumerate(v.fallback_instance_types)]
    except InvalidInput:
        fallbacks = []
    return [("instance_type", v.instance_type), *fallbacks]


def _check_fallbacks(v: Variant, path: str, catalog: Catalog) -> list[Problem]:
    """Each fallback a known type, other than the preferred one and the fallbacks before it, and on the
    same kind of storage: VolumeSizeInGB and the endpoint's KmsKeyId are one setting for every pool."""
    problems: list[Problem] = []
    preferred = catalog.instance_types.get(v.instance_type)
    for j, instance_type in enumerate(v.fallback_instance_types):
        where = f"{path}.fallback_instance_types[{j}]"
        if instance_type == v.instance_type:
            problems.append((where, f"{instance_type} is the variant's instance_type (priority 1) already"))
        elif instance_type in v.fallback_instance_types[:j]:
            problems.append((where, f"{instance_type} is listed twice; each pool needs a type of its own"))
        elif instance_type not in catalog.instance_types:
            problems += _unknown_type(where, instance_type, catalog)
        elif preferred is not None and catalog.instance_types[instance_type].local_nvme != preferred.local_nvme:
            problems += refuse(
                where,
                f"{instance_type} has {_storage(instance_type, catalog)} but {v.instance_type} has "
                f"{_storage(v.instance_type, catalog)}; volume_size_gb and endpoint_kms_key_arn are one "
                "setting for every pool of the variant, so its types must agree",
            )
    return problems


def _storage(instance_type: str, catalog: Catalog) -> str:
    return "local NVMe storage" if catalog.instance_types[instance_type].local_nvme else "no local NVMe storage"


def _check_busy_wait(cfg: EnvironmentConfig, v: Variant, path: str) -> list[Problem]:
    """A pooled scale-out holds the endpoint Updating up to its provisioning timeout; a rollback that
    waits less would give up before the endpoint takes its weights (ops/operations/busy_endpoint.py)."""
    timeout, waits = v.instance_provision_timeout_seconds, cfg.operations.busy_endpoint_wait_seconds
    if is_none(timeout) or is_none(waits) or waits > timeout:
        return []
    return refuse(
        "operations.busy_endpoint_wait_seconds",
        f"must exceed {path}.instance_provision_timeout_seconds ({timeout}): a scale-out through the pools can "
        f"hold the endpoint Updating that long and a rollback waiting less gives up first, got {waits}",
    )


def _check_provision_timeout(v: Variant, path: str) -> list[Problem]:
    # VariantInstanceProvisionTimeoutInSeconds has no documented default (botocore 1.44 service model),
    # so with pools the time SageMaker keeps trying them before a scale-out fails would be unknown.
    if v.fallback_instance_types and is_none(v.instance_provision_timeout_seconds):
        return refuse(
            f"{path}.instance_provision_timeout_seconds",
            "required with fallback_instance_types: it is how long SageMaker tries the pools before a launch "
            "or scale-out fails (300-3600 s), and its default is not documented",
        )
    return []


def _unknown_type(path: str, instance_type: str, catalog: Catalog) -> list[Problem]:
    known = ", ".join(sorted(catalog.instance_types))
    hint = did_you_mean(instance_type, catalog.instance_types)
    return [(path, f"unknown instance type {quote(instance_type)}{hint}; known: {known}")]


def _instance(v: Variant, catalog: Catalog) -> InstanceType:
    """The catalog entry of the variant's instance type; InvalidInput (reported once) when unknown."""
    instance = catalog.instance_types.get(v.instance_type)
    if instance is None:
        raise InvalidInput
    return instance


def _check_instance_type(v: Variant, path: str, catalog: Catalog) -> list[Problem]:
    if v.instance_type not in catalog.instance_types:
        return _unknown_type(f"{path}.instance_type", v.instance_type, catalog)
    return []


def _check_volume(v: Variant, path: str, catalog: Catalog) -> list[Problem]:
    problems = _check_instance_type(v, path, catalog)
    if not problems and _instance(v, catalog).local_nvme and not is_none(v.volume_size_gb):
        problems += refuse(
            f"{path}.volume_size_gb",
            f"{v.instance_type} has local NVMe storage; SageMaker refuses VolumeSizeInGB on it, "
            f"got {v.volume_size_gb} (remove the field)",
        )
    return problems


def _check_storage_key(cfg: EnvironmentConfig, v: Variant, catalog: Catalog) -> list[Problem]:
    _instance(v, catalog)  # an unknown instance_type is reported once, by _check_volume
    nvme = [t for t in v.instance_types if t in catalog.instance_types and catalog.instance_types[t].local_nvme]
    if nvme and not is_none(cfg.endpoint_kms_key_arn):
        runs = "runs on" if nvme[0] == v.instance_type else "may fall back to"
        return refuse(
            "endpoint_kms_key_arn",
            f"variant '{v.name}' {runs} {nvme[0]}, which has local NVMe storage; "
            "a storage KMS key does not apply to it (remove the field)",
        )
    return []


def _check_image_tag(v: Variant, path: str) -> list[Problem]:
    # ECR tags are case-sensitive, but `Latest` is the same mistake as `latest`.
    if v.image_tag.lower() in MUTABLE_TAGS:
        return [(f"{path}.image_tag", f"must be an immutable tag or sha256 digest, got mutable '{v.image_tag}'")]
    return []
