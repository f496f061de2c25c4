"""The dev environment: environment-agnostic, one instance per variant, all-at-once rollout."""

from __future__ import annotations

from aws_cdk import Token
from aws_cdk.assertions import Match, Template


def test_dev_synthesises_without_an_account(dev) -> None:
    assert Token.is_unresolved(dev.serving_stack.account)
    assert Token.is_unresolved(dev.serving_stack.region)


def test_the_shared_templates_are_what_this_process_synthesises(dev) -> None:
    """Synthesised reads the run's shared cloud assembly (tests/shared_synthesis.py); a stack built here
    from the same config and context gives the same templates."""
    assert dev.assembly.name == "synthesised-dev"
    assert dev.serving.to_json() == Template.from_stack(dev.serving_stack).to_json()
    assert dev.image.to_json() == Template.from_stack(dev.image_stack).to_json()


def test_dev_rolls_out_all_at_once(dev) -> None:
    dev.serving.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "DeploymentConfig": {
                "BlueGreenUpdatePolicy": Match.object_like(
                    {"TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 300}}
                ),
                "AutoRollbackConfiguration": Match.any_value(),
            }
        },
    )


def test_dev_has_no_data_capture(dev) -> None:
    dev.serving.has_resource_properties("AWS::SageMaker::EndpointConfig", {"DataCaptureConfig": Match.absent()})
    dev.serving.resource_count_is("AWS::S3::Bucket", 0)
