"""Changes synth refuses against what is deployed (config/deployed/<env>.json), because SageMaker
would refuse them mid-deploy:

- Blue/green (deployment guardrails) needs the new endpoint config to keep the deployed variant
  names: "your new endpoint configuration must have the same variant name as the old endpoint
  configuration" (https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-exclusions.html).
- An update that changes the instance type of, or removes, a variant registered with Application
  Auto Scaling fails (DESIGN 3.2); the record says which variants were scaled, so deleting the
  `autoscaling` entry in the same edit does not get the change through.

Instance pools: the instance type compared is the preferred one (`instance_type`, InstancePools
priority 1), the only one the record holds. Whether SageMaker counts adding, removing or reordering
fallback pools on a scaled variant (InstanceType replaced by InstancePools with the same first type)
as an instance type change is not documented (realtime-endpoints-heterogeneous and
endpoint-scaling-update say nothing about pools). We assume it does not while the preferred type
stays; the deploy that first adds pools to a scaled variant is safest through `bin/ops deploy ENV`
(deregister, update, re-register), which holds either way (docs/explanation/platform-notes.md "Instance pools").
"""

from __future__ import annotations

from config.deployed import Deployed
from config.problems import Problem, refuse, variant_path
from config.schema import EnvironmentConfig

VARIANTS_PROCEDURE = (
    "blue/green updates must keep the deployed variant names (SageMaker deployment guardrails); "
    "change the set of variants in a deploy of its own: `make deploy ENV={env} VARIANTS_CHANGED=1` "
    "(docs/how-to/deploy.md 'Adding, removing or renaming a variant')"
)
SCALING_PROCEDURE = (
    "CloudFormation cannot apply this while the variant is registered with Application Auto Scaling; "
    "follow docs/how-to/deploy.md 'Changing a scaled variant' (`bin/ops deploy {env}`: deregister, update, re-register)"
)
# Which record a refusal compared against: a sandbox `ops deploy` changes the config but never the record.
RECORD = "config/deployed/{env}.json, written by the last real `make deploy`; sandbox deploys never change it"


def check_deployed(cfg: EnvironmentConfig, deployed: Deployed | None) -> list[Problem]:
    if deployed is None or not deployed.variants:  # first deploy: nothing to keep
        return []
    return check_variant_names(cfg, deployed) + check_scaled_variants(cfg, deployed)


def check_variant_names(cfg: EnvironmentConfig, deployed: Deployed) -> list[Problem]:
    if deployed.variants_changed:
        return []
    names = [v.name for v in cfg.variants]
    added = [name for name in names if name not in deployed.variants]
    removed = [name for name in deployed.variants if name not in names]
    source = RECORD.format(env=cfg.name)
    why = VARIANTS_PROCEDURE.format(env=cfg.name)
    if len(added) == 1 and len(removed) == 1:
        return refuse(
            variant_path(cfg.variants, added[0]),
            f"renames deployed variant '{removed[0]}' to '{added[0]}' ({source}); {why}",
        )
    problems = [
        (
            variant_path(cfg.variants, name),
            f"adds variant '{name}' to the deployed {', '.join(deployed.variants)} ({source}); {why}",
        )
        for name in added
    ]
    problems += [
        ("variants", f"removes deployed variant '{name}' (deployed: {', '.join(deployed.variants)}, {source}); {why}")
        for name in removed
    ]
    return problems


def check_scaled_variants(cfg: EnvironmentConfig, deployed: Deployed) -> list[Problem]:
    current = {v.name: v for v in cfg.variants}
    why = SCALING_PROCEDURE.format(env=cfg.name)
    problems = []
    for name, was in deployed.variants.items():
        if not was.scaled or name in deployed.scaling_released:
            continue
        # The live scalable target stays registered whatever the config now says about autoscaling.
        unlisted = "" if name in cfg.autoscaling else " (removing its autoscaling entry does not deregister it)"
        if name not in current:
            problems += refuse(
                "variants",
                f"removes variant '{name}', deployed on {was.instance_type} with autoscaling "
                f"({RECORD.format(env=cfg.name)}){unlisted}; {why}",
            )
        elif current[name].instance_type != was.instance_type:  # the preferred type: see the module docstring
            problems += refuse(
                variant_path(cfg.variants, name, "instance_type"),
                f"changes scaled variant '{name}' from {was.instance_type} to {current[name].instance_type}"
                f" ({RECORD.format(env=cfg.name)}){unlisted}; {why}",
            )
    return problems
