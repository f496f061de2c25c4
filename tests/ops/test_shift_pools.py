"""The shift's canary capacity check counts pool instances at their own type's figure (issue 42 item 3)."""

from __future__ import annotations

import math

from tests.ops.test_status_pools import deploy_with_pools


def test_a_canary_running_its_fallback_type_is_judged_on_the_fallback_s_capacity(worlds, cli):
    """50 % is 1,250/min: enough at the preferred type's figure, not at the fallback's the instances run on."""
    world = worlds("prod")
    deploy_with_pools(world)
    canary = world.moto_variant("canary")
    count = canary["CurrentInstanceCount"]
    assert count == next(v for v in world.cfg.variants if v.name == "canary").initial_instance_count
    canary["InstancePools"] = [
        {"InstanceType": "ml.g4dn.xlarge", "CurrentInstanceCount": 0},
        {"InstanceType": "ml.g6.xlarge", "CurrentInstanceCount": count},
    ]
    world.set_weights(primary=95, canary=5)
    world.traffic("canary", invocations=1000, errors=2, minutes=5)
    world.traffic("primary", invocations=11500, errors=18, minutes=5)
    world.streamed()
    g4dn = world.cfg.planning.capacity["ml.g4dn.xlarge"].requests_per_minute
    g6 = world.cfg.planning.capacity["ml.g6.xlarge"].requests_per_minute
    assert count * g6 < 1250 <= count * g4dn  # refused only at the fallback's figure

    result = cli("shift", "prod", "--canary-weight", "50")

    assert result.exit_code == 4, result.output
    needed = math.ceil(1250 / g6)
    assert (
        f"50% of the busiest minute's 2,500 invocations (last 5min) is 1,250/min, but {count} canary instance(s) in "
        f"service serve {count * g6:,.0f}/min ({g6:,.0f} each, planning.capacity): rerun with --raise-canary-capacity "
        f"(sets {needed} instances"
    ) in " ".join(result.stderr.split())
    assert world.weights() == {"primary": 95.0, "canary": 5.0}
