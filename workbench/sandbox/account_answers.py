"""What a real account answers and moto 5.2.5 does not, for `bin/ops preflight` (issue 50 §2): lifted for the
process that calls `apply()` (the sandbox server) or `patches()` (a test, with monkeypatch).

- Service Quotas: moto knows only `vpc` (ListAWSDefaultServiceQuotas, GetServiceQuota) and has no
  ListServiceQuotas. Here `sagemaker` answers both list calls with one quota per instance type, named as
  SageMaker spells it ("ml.g5.xlarge for endpoint usage": the ResourceLimitExceeded message quotes it,
  DESIGN.md 3.2d), in the ServiceQuota shape of botocore's service-quotas model. The applied value is the
  sandbox account's (`quota_of`: workbench/sandbox/scaling.py, set by `python -m workbench.sandbox quota`),
  the default 0 (a new account's for GPU types). A type the region does not offer has no quota at all.
- Cost Explorer: moto has no ListCostAllocationTags. Here the tags `TAGS` are user-defined and active.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from moto.ce import responses as ce_responses
from moto.servicequotas import responses as quota_responses

SAGEMAKER = "sagemaker"
QUOTA_NAME = "{} for endpoint usage"
TAGS = ("Environment", "Project", "CostCenter")  # config's tags (config/schema.py Tags)


class Answers:
    """The instance types the sandbox's region offers and the account's quota for each (None: the default)."""

    instance_types: tuple[str, ...] = ()
    quota_of: Callable[[str], int | None] = staticmethod(lambda _: None)


def _quota(response: Any, instance_type: str, value: int) -> dict[str, Any]:
    name = QUOTA_NAME.format(instance_type)
    code = "L-" + hashlib.sha1(name.encode()).hexdigest()[:8].upper()  # real codes are opaque, stable
    return {
        "ServiceCode": SAGEMAKER,
        "ServiceName": "Amazon SageMaker",
        "QuotaArn": f"arn:aws:servicequotas:{response.region}:{response.current_account}:{SAGEMAKER}/{code}",
        "QuotaCode": code,
        "QuotaName": name,
        "Value": float(value),
        "Unit": "None",
        "Adjustable": True,
        "GlobalQuota": False,
        "QuotaAppliedAtLevel": "ACCOUNT",
    }


def _listing(original: Callable[[Any], str] | None, applied: bool) -> Callable[[Any], str]:
    def answer(self: Any) -> str:
        if json.loads(self.body).get("ServiceCode") != SAGEMAKER:
            if original is None:  # moto has no ListServiceQuotas for any service
                return json.dumps({"Quotas": []})
            return original(self)
        quotas = []
        for instance_type in Answers.instance_types:
            value = Answers.quota_of(instance_type) if applied else None
            quotas.append(_quota(self, instance_type, 0 if value is None else value))
        return json.dumps({"Quotas": quotas})

    answer.sandbox_answers = True  # type: ignore[attr-defined]
    return answer


def list_cost_allocation_tags(self: Any) -> str:
    """ListCostAllocationTags (botocore ce model): the config's tag keys, user-defined and active."""
    params = json.loads(self.body or "{}")
    wanted = params.get("TagKeys") or list(TAGS)
    tags = [{"TagKey": key, "Type": "UserDefined", "Status": "Active"} for key in TAGS if key in wanted]
    return json.dumps({"CostAllocationTags": tags})


def patches() -> list[tuple[Any, str, Any]]:
    """(owner, attribute, replacement): the sandbox server sets them for good, a test with monkeypatch."""
    response = quota_responses.ServiceQuotasResponse
    defaults = response.list_aws_default_service_quotas
    if getattr(defaults, "sandbox_answers", False):
        defaults = defaults.__wrapped__  # type: ignore[attr-defined]
    default_answer = _listing(defaults, applied=False)
    default_answer.__wrapped__ = defaults  # type: ignore[attr-defined]
    return [
        (response, "list_aws_default_service_quotas", default_answer),
        (response, "list_service_quotas", _listing(None, applied=True)),
        (ce_responses.CostExplorerResponse, "list_cost_allocation_tags", list_cost_allocation_tags),
    ]


def apply(instance_types: tuple[str, ...], quota_of: Callable[[str], int | None]) -> None:
    Answers.instance_types = instance_types
    Answers.quota_of = staticmethod(quota_of)
    for owner, name, replacement in patches():
        setattr(owner, name, replacement)
