"""Errors that lead somewhere: a typo names its fix, and a target no instance can meet is refused."""

from __future__ import annotations

import pytest

from config import ConfigError, load_environment

# One mistake against the deployed record (an unknown instance type, not also "changes scaled variant"):
# tests/stacks/test_deployed_record.py.


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda raw: raw["autoscaling"]["primary"]["schedules"][0].update(timezone="America/NewYork"),
            "unknown IANA time zone 'America/NewYork' (did you mean 'America/New_York'?)",
        ),
        (
            lambda raw: raw["autoscaling"]["primary"]["schedules"][0].update(timezone="asia/tokyo"),
            "unknown IANA time zone 'asia/tokyo' (did you mean 'Asia/Tokyo'?)",
        ),
        (
            lambda raw: raw.update(routng_strategy="RANDOM"),
            "routng_strategy: unknown setting (did you mean 'routing_strategy'?)",
        ),
        (
            lambda raw: raw["engine"].update(model="llama-3-8b-instruct-awk"),
            "(did you mean 'llama-3-8b-instruct-awq'?)",
        ),
    ],
)
def test_unknown_names_get_a_suggestion(problems, mutate, expected: str) -> None:
    found = problems(mutate)
    assert len(found) == 1, found
    assert expected in found[0]


def test_no_suggestion_when_nothing_is_close(problems) -> None:
    found = problems(lambda raw: raw["variants"][1].update(instance_type="ml.trn1.32xlarge"))
    assert len(found) == 1 and "did you mean" not in found[0], found


def test_unknown_environment_suggests_the_close_one() -> None:
    with pytest.raises(ConfigError) as error:
        load_environment("prd")
    assert "unknown environment 'prd' (did you mean 'prod'?); known: dev, prod, staging" in str(error.value)


@pytest.mark.parametrize("target", [274, 1200])
def test_a_target_at_or_above_what_an_instance_serves_is_refused(problems, target: int) -> None:
    found = problems(lambda raw: raw["autoscaling"]["primary"].update(target_tracking={"target_value": target}))
    # The primary's fallback pool, ml.g6.xlarge, serves fewer requests than ml.g5.xlarge: it saturates first.
    assert found == [
        f"autoscaling.primary.target_tracking.target_value: {target:,} is at or above the 77 requests/min one "
        "ml.g6.xlarge (a fallback pool of variant 'primary') serves within the latency objective "
        "(planning.capacity.ml.g6.xlarge.requests_per_minute; assumed: 77/min, 82 % of the 94/min physical "
        "ceiling at batch 16 (config/domain/physics.py), never measured (`bin/loadtest`)): target tracking would scale "
        "out only after users queue; allowed: below 77 (70 % of it, 54, leaves room for the minutes a scale-out "
        "takes)"
    ]


def test_the_high_resolution_target_is_held_to_concurrent_sequences(problems) -> None:
    def concurrency(raw: dict) -> None:
        raw["autoscaling"]["canary"]["target_tracking"] = {
            "metric": "SageMakerVariantConcurrentRequestsPerModelHighResolution",
            "target_value": 20,
        }

    found = problems(concurrency)
    assert len(found) == 1, found
    assert found[0].startswith(
        "autoscaling.canary.target_tracking.target_value: 20 is at or above the 16 concurrent requests one ml.g5.xlarge"
    )
    assert (
        problems(
            lambda raw: concurrency(raw) or raw["autoscaling"]["canary"]["target_tracking"].update(target_value=11)
        )
        == []
    )


def test_a_target_is_held_to_the_fallback_pool_that_saturates_first(problems) -> None:
    """prod's canary falls back to ml.g6.xlarge: when that type serves fewer sequences than the
    preferred one, an explicit target must stay below the fallback's figure too."""

    def small_fallback(raw: dict) -> None:
        raw["autoscaling"]["canary"]["target_tracking"] = {
            "metric": "SageMakerVariantConcurrentRequestsPerModelHighResolution",
            "target_value": 12,
        }
        raw.setdefault("planning", {}).setdefault("capacity", {})["ml.g6.xlarge"] = {
            "requests_per_minute": 60,  # below the L4's ceiling at batch 10
            "concurrent_sequences": 10,
        }

    found = problems(small_fallback)
    assert len(found) == 1, found
    assert found[0].startswith(
        "autoscaling.canary.target_tracking.target_value: 12 is at or above the 10 concurrent requests one "
        "ml.g6.xlarge (a fallback pool of variant 'canary') serves"
    )
