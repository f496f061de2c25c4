"""Which instance types a deploy would stand on an assumed capacity for, and how to measure each.

Every pool type of every variant (the preferred `instance_type` and each `fallback_instance_types`)
may serve production traffic: SageMaker provisions a fallback pool whenever the preferred type has no
capacity (ProductionVariant.InstancePools). So each needs a measured `planning.capacity` figure: one
without a `measured` block (or with no figure at all) is an assumption (config/schema.py,
InstanceCapacity). ops/pipeline/assumed_capacity.py refuses a production deploy on one; this module says
which types and the commands that measure them, and reads nothing but config files.
"""

from __future__ import annotations

from dataclasses import dataclass

from config.loader import ConfigError, known_environments, load_environment
from config.naming import environment_label
from config.schema import EnvironmentConfig, InstanceCapacity

# How long a real endpoint's `bin/loadtest` takes with the default workload and settings
# (docs/how-to/measure-capacity.md "How long it takes"): its time budget, --max-minutes 30, at most; about 8 min
# when the answer is within 2.1x of the config's figure (the search starts from it: 5 steps).
SWEEP_MINUTES = "30 min at most; about 8 when the answer is within 2.1x of the figure in config"


@dataclass(frozen=True)
class PoolType:
    """One instance type a variant may run on, and what it is planned with."""

    instance_type: str
    variants: tuple[str, ...]  # "primary", "canary (fallback)": where the config lets it serve
    capacity: InstanceCapacity | None  # planning.capacity's figure; None when there is none

    @property
    def assumed(self) -> bool:
        return self.capacity is None or self.capacity.measured is None

    def describe(self) -> str:
        figure = self.capacity.provenance() if self.capacity else "no planning.capacity figure"
        return f"{self.instance_type} ({', '.join(self.variants)}): {figure}"


def pool_types(cfg: EnvironmentConfig) -> list[PoolType]:
    """Every type a variant may run on, in the order the variants name them."""
    where: dict[str, list[str]] = {}
    for variant in cfg.variants:
        for priority, instance_type in enumerate(variant.instance_types):
            where.setdefault(instance_type, []).append(variant.name + (" (fallback)" if priority else ""))
    return [PoolType(t, tuple(names), cfg.planning.capacity.get(t)) for t, names in where.items()]


def assumed_types(cfg: EnvironmentConfig) -> list[PoolType]:
    return [pool for pool in pool_types(cfg) if pool.assumed]


def _other_environments(cfg: EnvironmentConfig) -> list[EnvironmentConfig]:
    """The non-production environments whose config loads: where a measurement may run."""
    found = []
    for name in known_environments():
        if name == cfg.name:
            continue
        try:
            other = load_environment(name, against_deployed=False)
        except ConfigError:
            continue
        if not other.production:
            found.append(other)
    return sorted(found, key=lambda other: other.name != "staging")  # staging first: production-shaped


def how_to_measure(cfg: EnvironmentConfig, instance_type: str) -> str:
    """The exact commands that give `instance_type` a measured figure in `cfg`'s file."""
    others = _other_environments(cfg)
    target = environment_label(cfg.name)
    for other in others:
        figure = other.planning.capacity.get(instance_type)
        if figure is not None and figure.measured is not None:
            return (
                f"copy planning.capacity.{instance_type} (with its measured block) from "
                f"{environment_label(other.name)} into {target}: {figure.provenance()}"
            )
    copy = f"then copy planning.capacity.{instance_type} with its measured block into {target}"
    for other in others:
        for variant in reversed(other.variants):  # the canary first: measuring it spares the primary's users
            if variant.instance_types[0] == instance_type:
                # Its preferred pool: SageMaker provisions it whenever the region has it, and `bin/loadtest`
                # measures a variant all on one type as that type (it refuses a mixed fleet).
                command = f"bin/loadtest {other.name} --variant {variant.name} --write-config"
                pools = (
                    ""
                    if variant.instance_types == [instance_type]
                    else f" (its instances all {instance_type}, as `bin/ops status {other.name}` shows)"
                )
                return f"{command}   ({SWEEP_MINUTES}){pools}; {copy}"
    if not others:
        return f"no non-production environment to measure on: see docs/how-to/measure-capacity.md; {copy}"
    other = others[0]
    variant = other.variants[-1]
    # A scaled variant's instance type changes only through `bin/ops deploy` (deregister, update, register).
    deploy = f"bin/ops deploy {other.name}" if variant.name in other.autoscaling else f"make deploy ENV={other.name}"
    return (
        f"in {environment_label(other.name)} set {variant.name}'s instance_type: {instance_type} with no "
        f"fallback_instance_types, `{deploy}` (a blue/green update, about 15-25 min), then "
        f"`bin/loadtest {other.name} --variant {variant.name} --write-config` ({SWEEP_MINUTES}); {copy}"
    )
