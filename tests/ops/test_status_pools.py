"""`status` with instance pools (by type, desired against in service, each pool type's capacity), and
`read_endpoint` against InstancePools as botocore's model shapes them.
"""

from __future__ import annotations

import re

import boto3
import pytest
from botocore.stub import Stubber

from ops.operations.endpoint import read_endpoint
from tests.ops_world import World, edit_environment, endpoint_answer, endpoint_config_answer, image_uri, model_answer


@pytest.fixture
def pooled(worlds, environments) -> World:
    """prod on its pools, the moto type's planning.capacity within the T4's ceiling at batch 15."""

    def within_ceiling(doc) -> None:
        doc["planning"]["capacity"]["ml.g4dn.xlarge"] = {"requests_per_minute": 84, "concurrent_sequences": 15}

    edit_environment(environments, "prod", within_ceiling)
    world = worlds("prod")
    deploy_with_pools(world)
    return world


def deploy_with_pools(world: World) -> str:
    """The endpoint as the prod template makes it: each variant's types as InstancePools, no InstanceType."""
    sagemaker = world.client("sagemaker")
    variants = []
    for v in world.cfg.variants:
        world.push_image(v.image_tag)
        model = f"{world.endpoint}-{v.name}-pools"
        sagemaker.create_model(ModelName=model, PrimaryContainer={"Image": image_uri(world.cfg, v.image_tag)})
        pools = [{"InstanceType": t, "Priority": p} for p, t in enumerate(v.instance_types, start=1)]
        variants.append(
            {
                "VariantName": v.name,
                "ModelName": model,
                "InitialInstanceCount": v.initial_instance_count,
                "InitialVariantWeight": v.initial_weight,
                "InstancePools": pools,
                "VariantInstanceProvisionTimeoutInSeconds": v.instance_provision_timeout_seconds,
            }
        )
    config_name = f"{world.endpoint}-pools"
    sagemaker.create_endpoint_config(EndpointConfigName=config_name, ProductionVariants=variants)
    sagemaker.create_endpoint(EndpointName=world.endpoint, EndpointConfigName=config_name)
    world.config_names.append(config_name)
    world.stack(config_name)
    return config_name


def rows(output: str, heading: str) -> list[list[str]]:
    """The table under `heading`, split on runs of two or more spaces, header row first."""
    lines = output.split(f"\n{heading}\n", 1)[1].split("\n\n", 1)[0].splitlines()
    return [re.split(r"\s{2,}", line.strip()) for line in lines]


def test_status_shows_each_variants_instances_by_type(pooled, cli):
    assert [v.instance_types for v in pooled.cfg.variants] == [["ml.g4dn.xlarge", "ml.g6.xlarge"]] * 2

    deployed = {v.name: str(v.initial_instance_count) for v in pooled.cfg.variants}  # all on the preferred type

    result = cli("status", "prod")

    assert result.exit_code == 0, result.output
    table = rows(result.output, "Instances by type (instance pools by priority: 1 is preferred)")
    assert table == [
        ["VARIANT", "PRIORITY", "INSTANCE TYPE", "IN SERVICE"],
        ["primary", "1", "ml.g4dn.xlarge", deployed["primary"], "preferred"],
        ["primary", "2", "ml.g6.xlarge", "0", "fallback"],
        ["canary", "1", "ml.g4dn.xlarge", deployed["canary"], "preferred"],
        ["canary", "2", "ml.g6.xlarge", "0", "fallback"],
        ["primary: SageMaker tries the pools for up to 900 s per scale-out"],
        ["canary: SageMaker tries the pools for up to 900 s per scale-out"],
    ]
    assert max(len(line) for line in result.output.splitlines()) < 120, result.output


def test_status_shows_a_fallback_in_service_and_instances_still_missing(pooled, cli):
    """Two instances came up on the fallback and one not at all: the operator sees both."""
    pooled.moto_variant("primary").update(
        CurrentInstanceCount=5,
        DesiredInstanceCount=6,
        InstancePools=[
            {"InstanceType": "ml.g4dn.xlarge", "CurrentInstanceCount": 3},
            {"InstanceType": "ml.g6.xlarge", "CurrentInstanceCount": 2},
        ],
    )

    result = cli("status", "prod")

    assert result.exit_code == 0, result.output
    variants = rows(result.output, "Variants")
    assert variants[0][:3] == ["VARIANT", "IMAGE TAG", "IN SERVICE/DESIRED"]
    assert variants[1][:3] == ["primary", "v0.1.0", "5/6"]
    by_type = rows(result.output, "Instances by type (instance pools by priority: 1 is preferred)")
    assert by_type[1][2:4] == ["ml.g4dn.xlarge", "3"] and by_type[2][2:4] == ["ml.g6.xlarge", "2"]
    assert "! primary: 5 of 6 desired instances in service: scaling out, or capacity not arriving" in (result.output)
    assert "canary: 1 of" not in result.output
    assert max(len(line) for line in result.output.splitlines()) < 120, result.output


def test_status_shows_the_capacity_of_every_pool_type_beside_its_ceiling(pooled, cli):
    result = cli("status", "prod")

    assert result.exit_code == 0, result.output
    capacity = result.output.split("(planning.capacity)\n", 1)[1].split("\n\n", 1)[0]
    assert capacity.startswith("  ml.g4dn.xlarge: assumed: 84/min")
    assert "83 % of its physical ceiling, 101/min for conversations at batch 15 = 60 s" in " ".join(capacity.split())
    assert "\n  ml.g6.xlarge: " in capacity
    assert max(len(line) for line in capacity.splitlines()) < 120


POOLS = {"InstancePools": [{"InstanceType": "ml.g6.xlarge", "Priority": 2}, {"InstanceType": "ml.g5.xlarge", "Priority": 1}]}


@pytest.mark.parametrize(
    ("configured", "pools", "counts", "types", "by_type", "serving"),
    [  # priority 1 first whatever order the pools come in; a pool type without instances is 0; mixed: no one type
        (POOLS, {"ml.g5.xlarge": 3, "ml.g6.xlarge": 1}, (4, 5), ("ml.g5.xlarge", "ml.g6.xlarge"),
         {"ml.g5.xlarge": 3, "ml.g6.xlarge": 1}, None),
        (POOLS, {"ml.g6.xlarge": 2}, (2, 2), ("ml.g5.xlarge", "ml.g6.xlarge"),
         {"ml.g5.xlarge": 0, "ml.g6.xlarge": 2}, "ml.g6.xlarge"),
        ({"InstanceType": "ml.g5.xlarge"}, None, (4, 4), ("ml.g5.xlarge",), {"ml.g5.xlarge": 4}, "ml.g5.xlarge"),
    ],
)  # fmt: skip
def test_read_endpoint_gives_instances_per_pool_type(configured, pools, counts, types, by_type, serving):
    """Against DescribeEndpoint's InstancePools as botocore's model shapes them (the Stubber checks it)."""
    variant = {"VariantName": "primary", "CurrentWeight": 1.0, "DesiredWeight": 1.0,
               "CurrentInstanceCount": counts[0], "DesiredInstanceCount": counts[1]}  # fmt: skip
    if pools is not None:
        variant["InstancePools"] = [{"InstanceType": t, "CurrentInstanceCount": n} for t, n in pools.items()]
    sagemaker = boto3.client("sagemaker", region_name="us-east-1")
    with Stubber(sagemaker) as stub:
        stub.add_response("describe_endpoint", endpoint_answer("ep", [variant], "ep-config"), {"EndpointName": "ep"})
        configured = [{"VariantName": "primary", "ModelName": "m", **configured}]
        stub.add_response("describe_endpoint_config", endpoint_config_answer("ep-config", configured))
        stub.add_response("describe_model", model_answer("m", "123456789012.dkr.ecr.us-east-1.amazonaws.com/r:v1"))
        (live,) = read_endpoint(sagemaker, "ep", "prod").variants

    assert (live.instance_type, live.instance_types) == (types[0], types)
    assert live.has_pools == (pools is not None)
    assert live.instances_by_type() == by_type and live.serving_type() == serving
    assert (live.current_instance_count, live.desired_instance_count) == counts
