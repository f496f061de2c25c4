"""The shift's canary capacity check on instance pools (issue 42 item 3): the canary's instances count
at the capacity of the type they run on, not the preferred type's."""

from __future__ import annotations

import math

from moto.sagemaker.models import sagemaker_backends

from tests.ops.test_shift import streamed
from tests.ops.test_status_pools import deploy_with_pools


def test_a_canary_running_its_fallback_type_is_judged_on_the_fallback_s_capacity(worlds, cli):
    """2,500 invocations/min in all: 50 % is 1,250/min. One ml.g4dn.xlarge (1,200/min here) would need 2;
    the canary's one instance is its fallback ml.g6.xlarge, which serves its own, lower figure."""
    world = worlds("prod")
    deploy_with_pools(world)
    endpoint = sagemaker_backends[world.cfg.account][world.cfg.region].endpoints[world.endpoint]
    canary = next(v for v in endpoint.production_variants if v["VariantName"] == "canary")
    canary["InstancePools"] = [
        {"InstanceType": "ml.g4dn.xlarge", "CurrentInstanceCount": 0},
        {"InstanceType": "ml.g6.xlarge", "CurrentInstanceCount": 1},
    ]
    world.set_weights(primary=95, canary=5)
    world.traffic("canary", invocations=1000, errors=2)
    world.traffic("primary", invocations=11500, errors=18)
    streamed(world)
    g6 = world.cfg.planning.capacity["ml.g6.xlarge"].requests_per_minute

    result = cli("shift", "prod", "--canary-weight", "50")

    assert result.exit_code == 4, result.output
    needed = math.ceil(1250 / g6)
    assert (
        f"50% of the current 2,500 invocations/min is 1,250/min, but 1 canary instance(s) in service serve "
        f"{g6:,.0f}/min ({g6:,.0f} each, planning.capacity): rerun with --raise-canary-capacity (sets {needed} "
        "instances"
    ) in " ".join(result.stderr.split())
    assert world.weights() == {"primary": 95.0, "canary": 5.0}
