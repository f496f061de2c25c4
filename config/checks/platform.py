"""SageMaker platform rules a template passes cfn-lint with but fails on a real account.

Each check returns every problem as (field path, message); config.checks.check_environment runs them.
"""

from __future__ import annotations

import math

from config.checks.variants import pool_types
from config.problems import Problem, did_you_mean, quote, refuse, variant_path
from config.schema import Catalog, EnvironmentConfig, InferenceAmi, Variant
from config.sections import is_none, skip_invalid

# Both readings of the blue/green step-size rule, quoted in the refusals.
GUIDE_CANARY_RULE = '"the canary size should be less than or equal to 50% of the new fleet\'s capacity"'
GUIDE_LINEAR_RULE = '"each linear step should only be between 10-50% of the green fleet\'s capacity"'
API_CANARY_RULE = '"Value must be less than or equal to 50% of the variant\'s total instance count"'
API_LINEAR_RULE = '"Value must be 10-50% of the variant\'s total instance count"'
GUIDE = "(SageMaker guide, deployment-guardrails-blue-green-{kind})"
API = "(TrafficRoutingConfig.{field}, SageMaker API)"
BLUE_GREEN_FLEETS = 2  # blue/green runs the old and the new fleet side by side until the bake ends


def instance_family(instance_type: str) -> str:
    """`ml.g5.xlarge` -> `g5`."""
    return instance_type.split(".")[1]


def check_inference_amis(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    """Each variant's host AMI must run the image's CUDA version and support each of its instance types.

    InferenceAmiVersion is one field of the production variant, so one AMI serves every pool; the
    instance-pools guide does not say whether SageMaker checks it against the fallbacks, so we do.
    """
    image = catalog.serving_image
    known = ", ".join(sorted(catalog.inference_amis))
    problems = []
    for v in cfg.variants:
        path = variant_path(cfg.variants, v.name, "inference_ami_version")
        ami = catalog.inference_amis.get(v.inference_ami_version)
        if ami is None:
            hint = did_you_mean(v.inference_ami_version, catalog.inference_amis)
            problems.append((path, f"unknown AMI {quote(v.inference_ami_version)}{hint}; known: {known}"))
            continue
        if ami.cuda < image.cuda:
            problems += refuse(
                path,
                f"variant '{v.name}': {v.inference_ami_version} has NVIDIA driver {ami.nvidia_driver} "
                f"(CUDA {ami.cuda_version}), too old for the serving image {image.base_image} "
                f"(CUDA {image.cuda_version}): the container cannot start; pick an AMI with CUDA >= "
                f"{image.cuda_version}",
            )
        for field, instance_type in pool_types(v):
            problems += skip_invalid(_check_ami_family, cfg, v, ami, field, instance_type, catalog)
    return problems


def _check_ami_family(
    cfg: EnvironmentConfig, v: Variant, ami: InferenceAmi, field: str, instance_type: str, catalog: Catalog
) -> list[Problem]:
    if instance_type not in catalog.instance_types or instance_family(instance_type) in ami.instance_families:
        return []  # an unknown type is reported by config.checks.variants
    families = ", ".join(ami.instance_families)
    cuda = catalog.serving_image.cuda_version
    if field == "instance_type":
        return refuse(
            variant_path(cfg.variants, v.name, "inference_ami_version"),
            f"variant '{v.name}': {v.inference_ami_version} does not support {instance_type} "
            f"(families {families}); the image needs CUDA {cuda}",
        )
    return refuse(
        variant_path(cfg.variants, v.name, field),
        f"variant '{v.name}': its inference_ami_version {v.inference_ami_version} does not support fallback "
        f"{instance_type} (families {families}); one AMI serves every pool of a variant, and the image needs "
        f"CUDA {cuda}",
    )


def smallest_fleet(cfg: EnvironmentConfig, v: Variant) -> int:
    """The fewest instances the variant can have when a deployment starts (autoscaling's floor)."""
    scaling = cfg.autoscaling.get(v.name)
    return v.initial_instance_count if scaling is None else min(scaling.min_capacity, v.initial_instance_count)


def largest_fleet(cfg: EnvironmentConfig, v: Variant) -> int:
    """The most instances the variant can have (scheduled windows stay within max_capacity)."""
    scaling = cfg.autoscaling.get(v.name)
    return v.initial_instance_count if scaling is None else max(scaling.max_capacity, v.initial_instance_count)


def step_instances(cfg: EnvironmentConfig, fleet: int) -> int:
    """Instances one CANARY/LINEAR step turns on out of `fleet` instances.

    A step turns on whole instances. How SageMaker rounds a percentage below one instance is not
    documented; rounding down would turn on nothing, so we assume at least one instance (up).
    """
    step = cfg.deployment.step_size
    assert step is not None
    if step.type == "INSTANCE_COUNT":
        return step.value
    return max(1, math.ceil(fleet * step.value / 100))


def check_blue_green_steps(cfg: EnvironmentConfig) -> list[Problem]:
    """A CANARY or LINEAR step must hold under both published readings of the size rule.

    The guide sizes a step against the new fleet's capacity (all variants); the API text against
    each variant's instance count. Checked at the smallest fleet a deployment can meet (autoscaling
    floors), where a step weighs most. A 1-instance variant cannot take any step (its one instance
    is 100% of it): such a topology deploys ALL_AT_ONCE.
    """
    d = cfg.deployment
    if d.traffic_routing == "ALL_AT_ONCE" or is_none(d.step_size):
        return []
    if d.traffic_routing == "CANARY":
        kind, field, low, api_rule, guide_rule = "canary", "CanarySize", 0, API_CANARY_RULE, GUIDE_CANARY_RULE
    else:
        kind, field, low, api_rule, guide_rule = "linear", "LinearStepSize", 10, API_LINEAR_RULE, GUIDE_LINEAR_RULE
    path = "deployment.step_size"
    problems = []
    counts = {v.name: smallest_fleet(cfg, v) for v in cfg.variants}
    for name, count in counts.items():
        on = step_instances(cfg, count)
        if not low <= 100 * on / count <= 50:
            problems += refuse(
                path,
                f"{d.traffic_routing} step of {on} instance(s) is {100 * on / count:.0f}% of variant '{name}' at "
                f"its smallest fleet of {count} instance(s); the API says {api_rule} {API.format(field=field)}. "
                "A step turns on whole instances, so a 1-instance variant cannot take one: use ALL_AT_ONCE "
                "or give every variant at least 2 instances",
            )
    fleet = sum(counts.values())
    on = step_instances(cfg, fleet)
    if not low <= 100 * on / fleet <= 50:
        problems += refuse(
            path,
            f"{d.traffic_routing} step of {on} instance(s) is {100 * on / fleet:.0f}% of the new fleet's {fleet} "
            f"instance(s) at its smallest; the guide says {guide_rule} {GUIDE.format(kind=kind)}",
        )
    return problems


def check_instance_quotas(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    """Blue/green provisions a full second fleet: the quota must cover twice the largest fleet.

    With instance pools SageMaker picks the type per instance as capacity allows (creation, scale-out
    and blue/green's green fleet alike), so any type of a variant's pools may have to carry the whole
    fleet: each type's quota must cover twice the largest fleets of every variant that lists it. That
    SageMaker checks every pool type's quota at creation is not documented by AWS; this covers it.
    """
    largest: dict[str, int] = {}
    users: dict[str, list[Variant]] = {}
    for v in cfg.variants:
        for instance_type in dict.fromkeys(t for _, t in pool_types(v)):  # a repeated type is refused elsewhere
            if instance_type not in catalog.instance_types:
                continue  # reported as an unknown instance type
            largest[instance_type] = largest.get(instance_type, 0) + largest_fleet(cfg, v)
            users.setdefault(instance_type, []).append(v)
    problems = []
    for instance_type, count in sorted(largest.items()):
        path = f"endpoint_instance_quotas.{instance_type}"
        needed = BLUE_GREEN_FLEETS * count
        quota = cfg.endpoint_instance_quotas.get(instance_type)
        if quota is None:
            problems += refuse(
                path,
                f"missing: record this account's quota '{instance_type} for endpoint usage' "
                f"(Service Quotas, SageMaker); blue/green needs {needed} ({BLUE_GREEN_FLEETS} x {count})",
            )
        elif quota < needed:
            variants = " + ".join(f"{v.name} {largest_fleet(cfg, v)}" for v in users[instance_type])
            pools = any(v.fallback_instance_types for v in users[instance_type])
            why = "; each pool type may have to carry its variant's whole fleet" if pools else ""
            problems += refuse(
                path,
                f"quota {quota} is below {needed}: blue/green provisions a second full fleet, and the "
                f"largest fleet is {count} x {instance_type} ({variants}, max_capacity{why}), so a deploy at "
                f"peak needs {BLUE_GREEN_FLEETS} x {count} = {needed}; request an increase or lower max_capacity",
            )
    return problems
