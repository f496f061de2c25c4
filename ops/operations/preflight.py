"""`bin/ops preflight ENV`: what the account would refuse, found before CloudFormation starts (issue 50 §2).

Read-only: the config's placeholders (no AWS call), then quotas, model data, release images and the budget's
cost-allocation tag; one line per finding (ops/operations/preflight_finding.py).
"""

from __future__ import annotations

from typing import Any

from config import EnvironmentConfig, environment_label, naming
from config.alerting import DOCUMENTATION_ACCOUNTS, placeholders
from ops.operations.aws import AwsClients
from ops.operations.images import image_in_repository
from ops.operations.preflight_base_image import base_image_findings
from ops.operations.preflight_finding import Finding
from ops.operations.preflight_model_data import model_data_findings
from ops.operations.preflight_quotas import quota_findings
from ops.operations.stack import read_image_outputs

COST_TAG = "Environment"  # the tag the budget filters on (stacks/serving_stack.py CostBudget)


def is_placeholder_account(account: str) -> bool:
    """The AWS documentation's example accounts, and one digit twelve times (the shipped configs' 111111111111)."""
    return account in DOCUMENTATION_ACCOUNTS or len(set(account)) == 1


def config_findings(cfg: EnvironmentConfig) -> list[Finding]:
    """The config's placeholders and an undigested base image: no AWS call."""
    where = environment_label(cfg.name)
    findings = base_image_findings(cfg)
    if cfg.account and is_placeholder_account(cfg.account):
        findings.append(Finding(f"account in {where}", cfg.account, "the real account ID", "put it there"))
    for found in placeholders(cfg.alarms.paging):
        findings.append(
            Finding(
                f"paging destination in {where}",
                f"{found}, a placeholder that reaches nobody",
                "the on-call address, PagerDuty/Opsgenie URL or topic",
                'replace it (docs/reference/alarms.md "Two destinations")',
                blocking=cfg.production,
            )
        )
    return findings


def account_findings(clients: AwsClients, cfg: EnvironmentConfig) -> list[Finding]:
    region = clients.region
    return [
        *quota_findings(clients.client("service-quotas"), cfg, region),
        *model_data_findings(clients.s3, cfg, region),
        *image_findings(clients.cloudformation, clients.client("ecr"), cfg),
        *cost_tag_findings(clients.client("ce"), cfg),
    ]


def image_findings(cloudformation: Any, ecr: Any, cfg: EnvironmentConfig) -> list[Finding]:
    """Each release tag exists in the image stack's repository; `image_tag: source` is built by the deploy."""
    released = sorted({v.image_tag for v in cfg.variants if v.image_tag != naming.SOURCE_IMAGE_TAG})
    if not released:
        return []
    outputs = read_image_outputs(cloudformation, cfg.name)
    stack = naming.image_stack_name(cfg.name)
    findings = []
    for tag in released:
        what = f"image {tag} ({environment_label(cfg.name)} variants[].image_tag)"
        if outputs is None or outputs.repository_name is None:
            fix = f"deploy with image_tag: source (built during the deploy), or `make deploy-image ENV={cfg.name}` and tag it"
            findings.append(Finding(what, f"no repository: {stack} is not deployed", "the image in ECR", fix))
        elif not image_in_repository(ecr, outputs.repository_name, tag):
            fix = f"`bin/ops release-tag {cfg.name}` on a tested build, or image_tag: source"
            findings.append(Finding(what, f"not in repository {outputs.repository_name}", "the image in ECR", fix))
    return findings


def cost_tag_findings(ce: Any, cfg: EnvironmentConfig) -> list[Finding]:
    """Budgets filter by an active cost-allocation tag only (Billing User Guide, "Activating user-defined cost
    allocation tags"). A warning: a tag is listed only once resources carry it, after the first deploy."""
    tags = ce.list_cost_allocation_tags(TagKeys=[COST_TAG], Type="UserDefined").get("CostAllocationTags", [])
    status = next((t["Status"] for t in tags if t["TagKey"] == COST_TAG), None)
    if status == "Active":
        return []
    found = f"status {status}" if status else "not listed (no resource carries it yet)"
    fix = "activate it (Billing > Cost allocation tags, or `aws ce update-cost-allocation-tags-status`) once listed"
    what = f"cost-allocation tag {COST_TAG} (the budget filters {COST_TAG}={cfg.tags.Environment})"
    return [Finding(what, found, "Active, or the budget counts nothing", fix, blocking=False)]
