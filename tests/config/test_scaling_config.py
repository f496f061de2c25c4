"""Autoscaling settings a new user might get wrong, refused with the field named."""

from __future__ import annotations

import copy

from tests.synthesised import PROD_YAML


def primary_windows(raw: dict) -> list[dict]:
    return raw["autoscaling"]["primary"]["schedules"]


def test_abbreviated_time_zone(problems) -> None:
    found = problems(lambda raw: primary_windows(raw)[0].update(timezone="JST"))
    assert found == [
        "autoscaling.primary.schedules[0].timezone: 'JST' is an abbreviation, not a zone; for the clocks people read "
        "there use Asia/Tokyo"
    ]


def test_unknown_time_zone(problems) -> None:
    found = problems(lambda raw: primary_windows(raw)[0].update(timezone="Asia/Osaka"))
    assert found == [
        "autoscaling.primary.schedules[0].timezone: unknown IANA time zone 'Asia/Osaka' (not a canonical zone in tzdata 2026.6)"
    ]


def test_five_field_cron(problems) -> None:
    found = problems(lambda raw: primary_windows(raw)[0].update(start="cron(45 17 * * *)"))
    assert found == [
        "autoscaling.primary.schedules[0].start: needs six fields (minutes hours day-of-month month day-of-week year), "
        "got 5: 'cron(45 17 * * *)'"
    ]


def test_peak_min_above_the_targets_max(problems) -> None:
    def raise_the_floor(raw: dict) -> None:
        primary_windows(raw)[0].pop("max_capacity", None)
        primary_windows(raw)[0].update(min_capacity=97)

    found = problems(raise_the_floor)
    assert found == [
        "autoscaling.primary.schedules[0].min_capacity: must lie within the target's 1-96 (max_capacity), got 97"
    ]


def test_peak_with_no_end(problems) -> None:
    found = problems(lambda raw: primary_windows(raw)[0].pop("end"))
    assert found == ["autoscaling.primary.schedules[0].end: Field required"]


def test_end_that_never_follows_the_start(problems) -> None:
    """An end cron that fires only in February never returns a January raise."""
    window = primary_windows(PROD_YAML)[0]
    assert window["name"] == "tokyo-evening-peak" and window["timezone"] == "Asia/Tokyo"
    minute, hour, _, _, weekdays, _ = window["start"].removeprefix("cron(").removesuffix(")").split()
    assert "TUE" in weekdays.split(",")
    found = problems(lambda raw: primary_windows(raw)[0].update(end="cron(0 22 ? 2 TUE *)"))
    assert found == [
        f"autoscaling.primary.schedules: tokyo-evening-peak raises capacity at Tue {int(hour):02d}:{int(minute):02d} JST "
        "with no end before it fires again"
    ]


def test_two_actions_at_the_same_instant(problems) -> None:
    def collide(raw: dict) -> None:
        primary_windows(raw)[0]["start"] = "cron(45 17 * * ? *)"  # every day, also Mon/Wed/Fri...
        primary_windows(raw)[0]["end"] = "cron(0 21 * * ? *)"  # ... when magazine days also end at 21:00

    found = problems(collide)
    assert any("tokyo-magazine-days.end and tokyo-evening-peak.end both fire at" in p for p in found)


def test_overlapping_windows(problems) -> None:
    found = problems(lambda raw: primary_windows(raw)[4].update(end="cron(0 9 * * ? *)"))
    assert any(p.startswith("autoscaling.primary.schedules: ") and "overlap" in p for p in found)


def test_initial_count_outside_the_scaling_range(problems) -> None:
    found = problems(lambda raw: raw["autoscaling"]["primary"].update(min_capacity=5))
    assert (
        "autoscaling.primary: variants[0].initial_instance_count 4 must lie in 5-96 (min_capacity-max_capacity)"
        in found
    )


def test_scaling_for_an_unknown_variant(problems) -> None:
    found = problems(lambda raw: raw["autoscaling"].update(shadow=copy.deepcopy(raw["autoscaling"]["canary"])))
    assert found == ["autoscaling.shadow: no variant named 'shadow'; variants: primary, canary"]


def test_step_scaling_on_a_metric_the_image_does_not_emit(problems) -> None:
    step = {"metric": "queue_depth", "scale_out": [{"at_or_above": 50, "add_instances": 1}]}
    found = problems(lambda raw: raw["autoscaling"]["primary"].update(step_scaling=[step]))
    assert found[0].startswith(
        "autoscaling.primary.step_scaling[0].metric: the serving image emits no 'queue_depth'; it emits QueueDepth"
    )


def test_a_variant_released_by_ops_deploy_may_change_type(tmp_path, monkeypatch) -> None:
    """`make deploy SCALING_RELEASED=primary` (what `python -m ops deploy` runs) lets the change through."""
    from config import ConfigError, loader

    text = (
        (loader.ENVIRONMENTS_DIR / "prod.yaml")
        .read_text()
        .replace("instance_type: ml.g5.xlarge", "instance_type: ml.g6.xlarge", 1)
        .replace("fallback_instance_types: [ml.g6.xlarge]", "fallback_instance_types: [ml.g5.xlarge]", 1)
    )
    (tmp_path / "prod.yaml").write_text(text)
    monkeypatch.setattr(loader, "ENVIRONMENTS_DIR", tmp_path)
    try:
        loader.load_environment("prod")
    except ConfigError as error:
        assert error.problems[0][0] == "variants[0].instance_type"
    else:
        raise AssertionError("refused without the release")
    assert loader.load_environment("prod", scaling_released=["primary"]).variants[0].instance_type == "ml.g6.xlarge"


def test_time_zone_that_is_a_folder_of_zones(problems) -> None:
    found = problems(lambda raw: primary_windows(raw)[0].update(timezone="America/Argentina"))
    assert found == [
        "autoscaling.primary.schedules[0].timezone: unknown IANA time zone 'America/Argentina' (a group of zones, not "
        "a zone: America/Argentina/Buenos_Aires, America/Argentina/Catamarca, America/Argentina/Cordoba, ...) "
        "(not a canonical zone in tzdata 2026.6)"
    ]
