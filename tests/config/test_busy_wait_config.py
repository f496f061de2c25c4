"""operations.busy_endpoint_wait_seconds (issue 39 item 1): a rollback must wait longer than a pooled
scale-out can hold the endpoint Updating, or it gives up first."""

from __future__ import annotations


def test_a_wait_not_above_the_pools_provisioning_timeout_is_refused(problems) -> None:
    found = problems(lambda raw: raw.setdefault("operations", {}).update(busy_endpoint_wait_seconds=900))
    assert (
        "operations.busy_endpoint_wait_seconds: must exceed variants[0].instance_provision_timeout_seconds (900): "
        "a scale-out through the pools can hold the endpoint Updating that long and a rollback waiting less gives "
        "up first, got 900"
    ) in found


def test_the_default_waits_past_prods_pools(problems) -> None:
    assert not [p for p in problems(lambda raw: None) if p.startswith("operations.")]
