"""The rollback floor's record in SSM Parameter Store, where any operator with the Operator policy finds it.

Not a tag on the scalable target: the Operator policy trusts the targets' `mangaassist:endpoint` tag
(constructs/operator_policy.py "ScalingWrite"), DescribeScalableTargets returns no tags, and moto 5.2 keeps none.
A parameter is one name the policy grants exactly (`parameter/mangaassist/<env>/rollback-floor/*`),
GetParametersByPath lists an environment's records in one call (botocore ssm 2014-11-06), and PutParameter with
Overwrite keeps the last one (a String: nothing in it is secret).
"""

from __future__ import annotations

import contextlib
from typing import Any

from config import naming


def parameter_name(env_name: str, variant: str) -> str:
    return f"{naming.floor_record_path(env_name)}/{variant}"


def publish(ssm: Any, env_name: str, variant: str, document: str) -> str:
    """The record, replacing this variant's last one; its parameter name."""
    name = parameter_name(env_name, variant)
    ssm.put_parameter(Name=name, Value=document, Type="String", Overwrite=True)
    return name


def published(ssm: Any, env_name: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for page in ssm.get_paginator("get_parameters_by_path").paginate(Path=naming.floor_record_path(env_name)):
        found |= {p["Name"]: p["Value"] for p in page["Parameters"]}
    return found


def forget(ssm: Any, name: str) -> None:
    """The record is done with (put back, or overtaken): gone, so the next restore finds nothing stale."""
    with contextlib.suppress(ssm.exceptions.ParameterNotFound):  # another operator's restore was first
        ssm.delete_parameter(Name=name)
