"""No scaling policy on a variant whose instance count cannot move (issue 50 §7): dev's canary has
min = max = 1, and b022f61 gave it a target-tracking policy that could never act."""

from __future__ import annotations

import json

from aws_cdk.assertions import Match


def policies_of(template, variant: str) -> dict:
    """The scaling policies on `variant`'s scalable target (found by its ResourceId, not a hashed logical id)."""
    targets = template.find_resources("AWS::ApplicationAutoScaling::ScalableTarget")
    (target_id,) = [i for i, t in targets.items() if f"/variant/{variant}" in json.dumps(t["Properties"]["ResourceId"])]
    return {
        logical_id: policy
        for logical_id, policy in template.find_resources("AWS::ApplicationAutoScaling::ScalingPolicy").items()
        if policy["Properties"].get("ScalingTargetId") == {"Ref": target_id}
    }


def test_devs_fixed_canary_keeps_its_scalable_target_and_gets_no_policy(dev) -> None:
    assert policies_of(dev.serving, "canary") == {}
    assert policies_of(dev.serving, "primary"), "the primary, 1-8, still scales"
    dev.serving.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {"MinCapacity": 1, "MaxCapacity": 1, "ResourceId": Match.string_like_regexp("variant/canary")},
    )
