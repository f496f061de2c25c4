"""A valid but unusual config still synthesises, cdk-nag included: the validation refuses mistakes, not
unusual choices. One config combines them all (LINEAR routing, no schedules, digest image tags,
high-resolution target tracking, data capture off) and is synthesised once for the module. A third
variant is refused since each variant has 4 rollback alarms and SageMaker takes 10 (issue 39 item 4).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template
from ruamel.yaml import YAML

from config import load_config_file
from config.loader import ENVIRONMENTS_DIR
from stacks.environment import add_compliance_checks, build_environment

ROOT = Path(__file__).resolve().parents[2]
DIGEST = "sha256:" + "0123456789abcdef" * 4
HIGH_RESOLUTION = "SageMakerVariantConcurrentRequestsPerModelHighResolution"


def unusual(raw: dict) -> dict:
    raw = copy.deepcopy(raw)
    for variant in raw["variants"]:
        variant["image_tag"] = DIGEST
        variant["initial_instance_count"] = max(variant["initial_instance_count"], 2)
    raw["deployment"].update(traffic_routing="LINEAR", step_size={"type": "CAPACITY_PERCENT", "value": 25})
    raw["deployment"].pop("maximum_execution_timeout_seconds", None)  # derived from the four steps' bakes
    raw["data_capture"] = {"enabled": False}
    # blue/green: 2 x the variants' max_capacity added up, for each type a variant may be provisioned on
    fleet = sum(scaling["max_capacity"] for scaling in raw["autoscaling"].values())
    raw["endpoint_instance_quotas"] = {"ml.g5.xlarge": 2 * fleet, "ml.g6.xlarge": 2 * fleet}
    for scaling in raw["autoscaling"].values():
        scaling.pop("schedules", None)
        scaling["min_capacity"] = 2
        scaling["target_tracking"] = {"metric": HIGH_RESOLUTION, "target_value": 14}  # 70 % of 20 sequences (assumed)
    return raw


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> Template:
    raw = unusual(YAML(typ="safe", pure=True).load((ENVIRONMENTS_DIR / "staging.yaml").read_text()))
    path = tmp_path_factory.mktemp("unusual") / "staging.yaml"
    with path.open("w") as handle:
        YAML().dump(raw, handle)
    cfg = load_config_file(path, "staging")
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    app = cdk.App(context={**context, "env": "staging"}, outdir=str(tmp_path_factory.mktemp("cdk.out")))
    _, serving_stack = build_environment(app, cfg)
    add_compliance_checks(app)
    app.synth()  # raises on an unacknowledged cdk-nag finding
    return Template.from_stack(serving_stack)


def test_digest_images(serving: Template) -> None:
    config = serving.find_resources("AWS::SageMaker::EndpointConfig")
    (variants,) = [r["Properties"]["ProductionVariants"] for r in config.values()]
    assert [v["VariantName"] for v in variants] == ["primary", "canary"]
    models = serving.find_resources("AWS::SageMaker::Model")
    images = [json.dumps(m["Properties"]["PrimaryContainer"]["Image"]) for m in models.values()]
    assert len(images) == 2 and all(f"@{DIGEST}" in image or DIGEST in image for image in images)


def test_a_third_variant_is_refused_by_the_rollback_alarm_budget(problems) -> None:
    def shadow(raw: dict) -> None:
        raw["variants"].append({**copy.deepcopy(raw["variants"][1]), "name": "shadow", "initial_weight": 0})

    assert "variants: at most 2 variants (each adds 4 rollback alarms, SageMaker takes 10), got 3" in problems(shadow)


def test_linear_routing_without_capture(serving: Template) -> None:
    serving.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "DeploymentConfig": Match.object_like(
                {
                    "BlueGreenUpdatePolicy": Match.object_like(
                        {
                            "TrafficRoutingConfiguration": Match.object_like(
                                {"Type": "LINEAR", "LinearStepSize": {"Type": "CAPACITY_PERCENT", "Value": 25}}
                            )
                        }
                    )
                }
            )  # fmt: skip
        },
    )
    serving.has_resource_properties("AWS::SageMaker::EndpointConfig", {"DataCaptureConfig": Match.absent()})


def test_high_resolution_target_tracking_and_no_schedules(serving: Template) -> None:
    policies = serving.find_resources(
        "AWS::ApplicationAutoScaling::ScalingPolicy", {"Properties": {"PolicyType": "TargetTrackingScaling"}}
    )
    metrics = [
        p["Properties"]["TargetTrackingScalingPolicyConfiguration"]["PredefinedMetricSpecification"][
            "PredefinedMetricType"
        ]
        for p in policies.values()
    ]
    assert metrics == [HIGH_RESOLUTION] * 2
    for target in serving.find_resources("AWS::ApplicationAutoScaling::ScalableTarget").values():
        assert "ScheduledActions" not in target["Properties"]
