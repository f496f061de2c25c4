"""What deploying a change does, beyond the template diff: read from the two serving templates.

- an endpoint config that is replaced is rolled out blue/green: a green fleet at the live instance
  counts starts beside the blue one (twice the instances, within the account's quota) and autoscaling
  is blocked until the update ends (DESIGN 3.2);
- a scaled variant whose instance type changes needs `bin/ops deploy` (SageMaker refuses the
  update while the variant is registered with Application Auto Scaling);
- a variant added or removed cannot go through the blue/green guardrails (same variant names);
- a variant's routing changed (strategy or prefix-aware settings) replaces the endpoint config: a
  blue/green deployment whose green fleet starts with empty prefix caches;
- a rollback alarm removed or loosened weakens the automatic rollback;
- needs security review: a role added or without a boundary, a boundary, trust or key policy changed,
  a policy attached (workbench/review/security.py);
- IAM broadened: a new or widened sts:AssumeRole or iam:PassRole, or a `*` resource, with what was
  added; other permissions added listed apart; an asset hash changed inside an ARN is no change
  (workbench/review/iam.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

from config.deploy_window import deploy_duration
from config.schema import EnvironmentConfig
from workbench.review.stack_diff import StackDiff

Template = dict[str, Any]
REPLACED = ("replace", "may be replaced")
HASH = re.compile(r"[0-9A-F]{8}$")


def deploy_consequences(
    env: str, base: Template | None, head: Template | None, diffs: list[StackDiff], cfg: EnvironmentConfig | None
) -> list[str]:
    found = [line for d in diffs for line in d.security] + [line for d in diffs for line in d.iam.lines(d.stack)]
    if base is None or head is None:  # a new or deleted environment: nothing is updated in place
        return found
    serving = next((d for d in diffs if d.stack.endswith("-Serving")), None)
    changes = serving.changes if serving else []
    if any(c.type == "AWS::SageMaker::Endpoint" and c.impact in REPLACED for c in changes):
        found.append("endpoint replaced: a new endpoint is created and the old one deleted; clients address it by name")
    if any(
        c.type == "AWS::SageMaker::EndpointConfig" and (c.impact in REPLACED or c.operation == "added") for c in changes
    ):
        found.append(_blue_green(cfg))
    found += _variant_changes(env, base, head)
    found += _routing_changes(base, head)
    paths = {c.logical_id: c.path for c in changes if c.path}  # construct paths, as the CLI shows them
    found += _rollback_changes(base, head, paths)
    return found


def _blue_green(cfg: EnvironmentConfig | None) -> str:
    if cfg is None:
        return "endpoint config replaced: a blue/green deployment with a doubled fleet (the config did not load)"
    duration, how = deploy_duration(cfg)
    fleet = " + ".join(f"{v.name} {v.initial_instance_count}" for v in cfg.variants)
    return (
        f"endpoint config replaced → a blue/green deployment of about {round(duration.total_seconds() / 60)} min "
        f"({how}) with a doubled fleet: a green fleet at the live instance counts (config: {fleet}) runs beside "
        "the blue one, and autoscaling is blocked until it ends"
    )


def _variant_changes(env: str, base: Template, head: Template) -> list[str]:
    before, after = _variants(base), _variants(head)
    scaled = _scaled_variants(base)
    found = [
        f"variant '{name}' added: needs `make deploy ENV={env} VARIANTS_CHANGED=1` (no blue/green guardrails)"
        for name in after
        if name not in before
    ]
    found += [
        f"variant '{name}' removed: needs `make deploy ENV={env} VARIANTS_CHANGED=1` (no blue/green guardrails)"
        + (f", through `bin/ops deploy {env}` since it is scaled" if name in scaled else "")
        for name in before
        if name not in after
    ]
    for name in before.keys() & after.keys():
        if before[name] != after[name] and name in scaled:
            found.append(
                f"scaled variant '{name}' instance type {before[name]} → {after[name]}: needs "
                f"`bin/ops deploy {env}` (SageMaker refuses the update while it is registered with autoscaling)"
            )
    return sorted(found)


def _routing_changes(base: Template, head: Template) -> list[str]:
    """RoutingConfig is create-only (CloudFormation template reference: "Update requires: Replacement")."""
    before, after = _routing(base), _routing(head)
    return [
        f"variant '{name}' routing {_describe_routing(before[name])} → {_describe_routing(after[name])}: the "
        "endpoint config is replaced, so this is a blue/green deployment; the green fleet starts with empty "
        'prefix caches (docs/explanation/capacity-model.md "Routing")'
        for name in sorted(before.keys() & after.keys())
        if before[name] != after[name]
    ]


def _routing(template: Template) -> dict[str, Template]:
    return {
        v["VariantName"]: v.get("RoutingConfig") or {}
        for config in _resources(template, "AWS::SageMaker::EndpointConfig")
        for v in config.get("ProductionVariants", [])
    }


def _describe_routing(routing: Template) -> str:
    strategy = routing.get("RoutingStrategy", "RANDOM (SageMaker's default)")
    prefix = routing.get("PrefixAwareRoutingConfig")
    if not prefix:
        return strategy
    return (
        f"{strategy} (PrefixLength {prefix.get('PrefixLength')}, "
        f"ConcurrencyThreshold {prefix.get('ConcurrencyThreshold')})"
    )


def _rollback_changes(base: Template, head: Template, paths: dict[str, str]) -> list[str]:
    before, after = _rollback_alarms(base), _rollback_alarms(head)
    if before and not after:
        return ["blue/green guardrails removed: no bake and no automatic rollback on this update"]
    found = [
        f"rollback alarm {paths.get(ref, _name(ref))} removed: a deploy no longer rolls back on it"
        for ref in sorted(before - after)
    ]
    for ref in sorted(before & after):
        looser = _loosened(base["Resources"].get(ref, {}), head["Resources"].get(ref, {}))
        if looser:
            found.append(f"rollback alarm {paths.get(ref, _name(ref))} loosened: {', '.join(looser)}")
    return found


def _loosened(before: Template, after: Template) -> list[str]:
    """Changes that make the alarm fire later or less often."""
    b, a = before.get("Properties", {}), after.get("Properties", {})
    found = []
    operator = a.get("ComparisonOperator", "")
    if b.get("Threshold") != a.get("Threshold") and operator == b.get("ComparisonOperator"):
        higher = a.get("Threshold", 0) > b.get("Threshold", 0)
        if higher == operator.startswith("Greater"):
            found.append(f"Threshold {b.get('Threshold')} → {a.get('Threshold')} ({operator})")
    elif operator != b.get("ComparisonOperator"):
        found.append(f"ComparisonOperator {b.get('ComparisonOperator')} → {operator}")
    for key in ("EvaluationPeriods", "DatapointsToAlarm", "Period"):
        if isinstance(b.get(key), int) and isinstance(a.get(key), int) and a[key] > b[key]:
            found.append(f"{key} {b[key]} → {a[key]}")
    if b.get("TreatMissingData") == "breaching" and a.get("TreatMissingData") != "breaching":
        found.append(f"TreatMissingData breaching → {a.get('TreatMissingData', 'missing')}")
    return found


def _resources(template: Template, kind: str) -> list[Template]:
    return [r.get("Properties", {}) for r in template.get("Resources", {}).values() if r.get("Type") == kind]


def _variants(template: Template) -> dict[str, str]:
    """Each variant's instance type: InstanceType, or with instance pools the priority-1 pool's type, the
    one config/checks/deployed.py compares (docs/explanation/platform-notes.md "Instance pools")."""
    return {
        v["VariantName"]: _preferred_type(v)
        for config in _resources(template, "AWS::SageMaker::EndpointConfig")
        for v in config.get("ProductionVariants", [])
    }


def _preferred_type(variant: Template) -> str:
    pools = variant.get("InstancePools") or []
    if pools:
        return min(pools, key=lambda pool: pool.get("Priority", 0)).get("InstanceType", "?")
    return variant.get("InstanceType", "serverless")


def _scaled_variants(template: Template) -> set[str]:
    ids = [t.get("ResourceId") for t in _resources(template, "AWS::ApplicationAutoScaling::ScalableTarget")]
    return {rid.rsplit("/variant/", 1)[1] for rid in ids if isinstance(rid, str) and "/variant/" in rid}


def _rollback_alarms(template: Template) -> set[str]:
    refs = set()
    for endpoint in _resources(template, "AWS::SageMaker::Endpoint"):
        rollback = endpoint.get("DeploymentConfig", {}).get("AutoRollbackConfiguration", {})
        for alarm in rollback.get("Alarms", []):
            name = alarm.get("AlarmName")
            refs.add(name["Ref"] if isinstance(name, dict) and "Ref" in name else json.dumps(name))
    return refs


def _name(ref: str) -> str:
    """A logical ID without its hash: Alarmsprimarylatencyp99FD11B3BE → Alarmsprimarylatencyp99."""
    return HASH.sub("", ref)
