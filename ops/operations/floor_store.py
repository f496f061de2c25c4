"""Where a rollback's floor record is kept: an SSM parameter per variant, which any operator with the
environment's Operator policy reads, from any machine. The file in the state directory is a cache.

A raised minimum outlives the laptop that raised it: whoever is on call next must find it to put it
back. Parameter Store rather than a tag on the scalable target, because:
- the Operator policy trusts the scalable targets' `mangaassist:endpoint` tag to decide what it may
  change (constructs/operator_policy.py "ScalingWrite"), and TagResource is allowed only for that tag
  and value; letting operators write other tags onto targets would widen what that trust rests on;
- a tag value holds 256 characters and DescribeScalableTargets does not return tags (a second call,
  ListTagsForResource, on the target's ARN); moto 5.2 keeps no Application Auto Scaling tags at all,
  so the record could not be tested with a real component here;
- a parameter is one name the policy can grant exactly (`parameter/mangaassist/<env>/rollback-floor/*`:
  Service Authorization Reference, ssm `parameter` resource), GetParametersByPath lists an environment's
  records in one call ("authorized against the ssm:GetParametersByPath action for the path that you
  specify", botocore ssm 2014-11-06), and PutParameter with Overwrite keeps the last one (a String, not a
  SecureString: a minimum and a time are not secret; a standard parameter costs nothing).
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
    """Every variant's record in the environment: {parameter name: document}."""
    found: dict[str, str] = {}
    for page in ssm.get_paginator("get_parameters_by_path").paginate(Path=naming.floor_record_path(env_name)):
        found |= {p["Name"]: p["Value"] for p in page["Parameters"]}
    return found


def forget(ssm: Any, name: str) -> None:
    """The record is done with (put back, or overtaken): gone, so the next restore finds nothing stale."""
    with contextlib.suppress(ssm.exceptions.ParameterNotFound):  # another operator's restore was first
        ssm.delete_parameter(Name=name)
