"""InferenceEndpoint on its own: a bare stack, the fewest props that make sense, then one prop at a time.
The real environments' endpoints are tested in tests/stacks/ (test_serving_stack.py, test_routing.py)."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk.assertions import Match, Template

from constructs.capture_bucket import CaptureBucket
from constructs.inference_endpoint import (
    BlueGreenProps,
    EndpointCaptureProps,
    EndpointMetricsProps,
    InferenceEndpoint,
    InferenceEndpointProps,
    PrefixAwareRouting,
    ProductionVariantProps,
    TrafficStep,
)
from tests.shared_synthesis import CDK_CONTEXT

PRIMARY = ProductionVariantProps(variant_name="primary", model_name="model-primary", instance_types=("ml.g5.xlarge",))
MINIMAL = InferenceEndpointProps(endpoint_name="chat", variants=(PRIMARY,))


def synthesised(props_of) -> Template:  # noqa: ANN001 (a function of the stack, returning the props)
    stack = cdk.Stack(cdk.App(context=CDK_CONTEXT), "Endpoint")  # the feature flags cdk.json sets
    InferenceEndpoint(stack, "Endpoint", props_of(stack))
    return Template.from_stack(stack)


@pytest.fixture(scope="module")
def minimal() -> Template:
    return synthesised(lambda _: MINIMAL)


@pytest.fixture(scope="module")
def canary_with_pools() -> Template:
    """Two variants, the canary on two pool types with prefix-aware routing, a canary step and a rollback alarm."""

    def props(stack: cdk.Stack) -> InferenceEndpointProps:
        alarm = cloudwatch.Alarm(
            stack,
            "Errors",
            metric=cloudwatch.Metric(namespace="AWS/SageMaker", metric_name="Invocation5XXErrors"),
            threshold=1,
            evaluation_periods=1,
        )
        canary = ProductionVariantProps(
            variant_name="canary",
            model_name="model-canary",
            instance_types=("ml.g5.xlarge", "ml.g6.xlarge"),
            initial_variant_weight=0,
            routing_strategy="PREFIX_AWARE",
            prefix_aware=PrefixAwareRouting(prefix_length=2048, concurrency_threshold=8),
        )
        return InferenceEndpointProps(
            endpoint_name="chat",
            variants=(PRIMARY, canary),
            blue_green=BlueGreenProps("CANARY", TrafficStep("INSTANCE_COUNT", 1), wait_interval_seconds=600),
            rollback_alarms=(alarm,),
            metrics=EndpointMetricsProps(enhanced_metrics=True),
            kms_key_arn="arn:aws:kms:us-east-1:111122223333:key/example",
        )

    return synthesised(props)


def test_minimal_props_give_one_variant_on_one_type_and_only_what_was_asked(minimal) -> None:
    minimal.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                {
                    "VariantName": "primary",
                    "ModelName": "model-primary",
                    "InstanceType": "ml.g5.xlarge",
                    "InitialInstanceCount": 1,
                    "InitialVariantWeight": 1,
                    "InstancePools": Match.absent(),
                    "RoutingConfig": Match.absent(),
                    "VolumeSizeInGB": Match.absent(),
                    "InferenceAmiVersion": Match.absent(),
                }
            ],
            "KmsKeyId": Match.absent(),
            "DataCaptureConfig": Match.absent(),
        },
    )


def test_the_metrics_config_is_written_whole_with_detailed_observability_off(minimal) -> None:
    minimal.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "MetricsConfig": {
                "EnableEnhancedMetrics": False,
                "EnableDetailedObservability": False,
                "MetricPublishFrequencyInSeconds": 60,
            }
        },
    )


def test_a_guarded_endpoint_keeps_its_variants_properties_and_deploys_all_at_once_by_default(minimal) -> None:
    minimal.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "EndpointName": "chat",
            "RetainAllVariantProperties": True,
            "DeploymentConfig": {
                "BlueGreenUpdatePolicy": {
                    "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0},
                },
                "AutoRollbackConfiguration": {"Alarms": []},
            },
        },
    )


def test_an_unguarded_endpoint_has_no_deployment_config() -> None:
    template = synthesised(lambda _: InferenceEndpointProps(endpoint_name="chat", variants=(PRIMARY,), guarded=False))
    template.has_resource_properties(
        "AWS::SageMaker::Endpoint", {"RetainAllVariantProperties": False, "DeploymentConfig": Match.absent()}
    )


def test_a_step_counts_only_for_its_own_routing_type() -> None:
    step = TrafficStep("CAPACITY_PERCENT", 10)
    template = synthesised(
        lambda _: InferenceEndpointProps(
            endpoint_name="chat", variants=(PRIMARY,), blue_green=BlueGreenProps("ALL_AT_ONCE", step)
        )
    )
    template.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "DeploymentConfig": Match.object_like(
                {
                    "BlueGreenUpdatePolicy": {
                        "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0}
                    }
                }
            )
        },
    )


def test_more_than_one_type_becomes_instance_pools_in_order_without_an_instance_type(canary_with_pools) -> None:
    canary_with_pools.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": Match.array_with(
                [
                    Match.object_like(
                        {
                            "VariantName": "canary",
                            "InstanceType": Match.absent(),
                            "InstancePools": [
                                {"InstanceType": "ml.g5.xlarge", "Priority": 1},
                                {"InstanceType": "ml.g6.xlarge", "Priority": 2},
                            ],
                            "InitialVariantWeight": 0,
                            "RoutingConfig": {
                                "RoutingStrategy": "PREFIX_AWARE",
                                "PrefixAwareRoutingConfig": {"PrefixLength": 2048, "ConcurrencyThreshold": 8},
                            },
                        }
                    )
                ]
            ),
            "KmsKeyId": "arn:aws:kms:us-east-1:111122223333:key/example",
            "MetricsConfig": Match.object_like({"EnableEnhancedMetrics": True}),
        },
    )


def test_a_canary_step_and_the_rollback_alarms_reach_the_deployment_config(canary_with_pools) -> None:
    canary_with_pools.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "DeploymentConfig": {
                "BlueGreenUpdatePolicy": {
                    "TrafficRoutingConfiguration": {
                        "Type": "CANARY",
                        "WaitIntervalInSeconds": 600,
                        "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1},
                    },
                },
                "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": {"Ref": Match.string_like_regexp("^Errors")}}]},
            }
        },
    )


def test_capture_writes_the_chosen_modes_to_the_bucket_under_its_key() -> None:
    def props(stack: cdk.Stack) -> InferenceEndpointProps:
        bucket = CaptureBucket(stack, "Capture", retention_days=7, description="test")
        capture = EndpointCaptureProps(bucket, sampling_percentage=5, modes=("Input", "Output"))
        return InferenceEndpointProps(endpoint_name="chat", variants=(PRIMARY,), capture=capture)

    synthesised(props).has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "DataCaptureConfig": Match.object_like(
                {
                    "EnableCapture": True,
                    "InitialSamplingPercentage": 5,
                    "CaptureOptions": [{"CaptureMode": "Input"}, {"CaptureMode": "Output"}],
                    "KmsKeyId": {"Fn::GetAtt": [Match.string_like_regexp("^CaptureKey"), "Arn"]},
                }
            )
        },
    )
