"""The sandbox runs the capacity watch's real handler as the schedule would: after one run the watch's metrics
are in the sandbox's CloudWatch (the engine-silent rollback alarm reads InstancesInService; `bin/ops verify`
fails while it has no data)."""

from __future__ import annotations

import os

from constructs.capacity_watch import NAMESPACE
from workbench.sandbox import moto_fixes, scaling
from workbench.sandbox.capacity_watch import CapacityWatchAgent, watch_environment


def test_one_run_publishes_what_the_alarms_read(prod, monkeypatch, tmp_path) -> None:
    moto_fixes.apply()
    # The sandbox's scaling (moto has no DescribeScalingActivities) for this test only: undone at teardown.
    for owner, name, _ in scaling.patches():
        monkeypatch.setattr(owner, name, getattr(owner, name, None), raising=False)
    monkeypatch.setattr(scaling, "QUOTAS", {})
    monkeypatch.setattr(scaling, "QUOTA_OVERRIDES", [])
    scaling.apply(dict(prod.cfg.endpoint_instance_quotas), scaling.quota_file(tmp_path, "prod"))
    for name in watch_environment(prod.cfg):
        monkeypatch.delenv(name, raising=False)  # the agent sets them; undone after the test
    clients = (prod.client("sagemaker"), prod.client("application-autoscaling"), prod.client("cloudwatch"))
    agent = CapacityWatchAgent(prod.cfg, clients)
    for name, value in watch_environment(prod.cfg).items():
        monkeypatch.setenv(name, value)

    published = agent.run_once()

    assert published is not None and published["metrics"] > 0
    names = {m["MetricName"] for m in prod.client("cloudwatch").list_metrics(Namespace=NAMESPACE)["Metrics"]}
    assert {"InstancesInService", "InstancesShort"} <= names
    assert os.environ["ENDPOINT_NAME"] == prod.cfg.endpoint_name
