"""The prod serving stack, synthesised once for the module."""

from __future__ import annotations

from aws_cdk.assertions import Capture, Match

from config.container_env import container_environment
from config.loader import load_catalog
from container.serving import contract


def test_two_variants_from_config(prod) -> None:
    prod.serving.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "VariantName": "primary",
                        "InstanceType": Match.absent(),
                        "InstancePools": [
                            {"InstanceType": "ml.g5.xlarge", "Priority": 1},
                            {"InstanceType": "ml.g6.xlarge", "Priority": 2},
                        ],
                        "InitialInstanceCount": prod.cfg.variant("primary").initial_instance_count,
                        "InitialVariantWeight": 95,
                        "ContainerStartupHealthCheckTimeoutInSeconds": 900,
                    }
                ),
                Match.object_like(
                    {
                        "VariantName": "canary",
                        "InstanceType": Match.absent(),
                        "InstancePools": [
                            {"InstanceType": "ml.g5.xlarge", "Priority": 1},
                            {"InstanceType": "ml.g6.xlarge", "Priority": 2},
                        ],
                        "InitialInstanceCount": prod.cfg.variant("canary").initial_instance_count,
                        "InitialVariantWeight": 5,
                        "ContainerStartupHealthCheckTimeoutInSeconds": 900,
                    }
                ),
            ]
        },
    )


def test_no_volume_size_or_kms_key_on_nvme_instances(prod) -> None:
    configs = prod.serving.find_resources("AWS::SageMaker::EndpointConfig")
    (config,) = configs.values()
    assert "KmsKeyId" not in config["Properties"]
    for variant in config["Properties"]["ProductionVariants"]:
        assert "VolumeSizeInGB" not in variant


def test_endpoint_config_name_is_generated(prod) -> None:
    prod.serving.has_resource_properties("AWS::SageMaker::EndpointConfig", {"EndpointConfigName": Match.absent()})
    prod.serving.has_resource_properties("AWS::SageMaker::Model", {"ModelName": Match.absent()})


def test_blue_green_all_at_once_with_rollback_on_alarms_in_this_stack(prod) -> None:
    alarms = Capture()
    prod.serving.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "EndpointName": "mangaassist-llm-prod",
            "RetainAllVariantProperties": True,
            "DeploymentConfig": {
                "BlueGreenUpdatePolicy": {
                    "TrafficRoutingConfiguration": {
                        "Type": "ALL_AT_ONCE",
                        "CanarySize": Match.absent(),
                        "WaitIntervalInSeconds": 600,
                    },
                    "TerminationWaitInSeconds": 600,
                    "MaximumExecutionTimeoutInSeconds": 4800,  # derived: config/blue_green_timeout.py
                },
                "AutoRollbackConfiguration": {"Alarms": alarms},
            },
        },
    )
    alarm_ids = {alarm["AlarmName"]["Ref"] for alarm in alarms.as_array()}
    defined = prod.serving.find_resources("AWS::CloudWatch::Alarm")
    assert alarm_ids <= set(defined), "every rollback alarm is defined in this stack"
    metrics = {defined[a]["Properties"].get("MetricName") for a in alarm_ids}
    assert "ModelLatency" not in metrics
    expressions = [m for a in alarm_ids for m in defined[a]["Properties"].get("Metrics", [])]
    watched = {m.get("MetricStat", {}).get("Metric", {}).get("MetricName") for m in expressions}
    assert {"Invocation5XXErrors", "TimeToFirstToken"} <= watched


def test_rollback_alarms_watch_the_endpoint_by_name(prod) -> None:
    prod.serving.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Threshold": 500,  # the seeds' 500 ms SLO, in the image's milliseconds
            "Metrics": Match.array_with(
                [
                    Match.object_like(
                        {
                            "MetricStat": {
                                "Metric": {
                                    "MetricName": "TimeToFirstToken",
                                    "Namespace": "MangaAssist/LLMServing",
                                    "Dimensions": Match.array_with(
                                        [
                                            {"Name": "EndpointName", "Value": "mangaassist-llm-prod"},
                                            {"Name": "VariantName", "Value": "canary"},
                                        ]
                                    ),
                                },
                                "Period": 60,
                                "Stat": "p95",
                            }
                        }
                    )
                ]
            ),
        },
    )


def test_models_are_network_isolated_and_use_config_engine_settings(prod) -> None:
    env = Capture()
    prod.serving.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "EnableNetworkIsolation": True,
            "PrimaryContainer": {
                "Environment": env,
                "Image": Match.any_value(),
                "ModelDataSource": {
                    "S3DataSource": {
                        "S3Uri": "s3://mangaassist-models-prod/llama-3-8b-instruct-awq/2026-11-01/",
                        "S3DataType": "S3Prefix",
                        "CompressionType": "None",
                    }
                },
            },
        },
    )
    assert env.as_object() == container_environment(
        prod.cfg, prod.cfg.variant(env.as_object()[contract.ENV_VARIANT_NAME])
    )
    assert env.as_object()[contract.ENV_MAX_NUM_SEQS] == "128"
    assert env.as_object()[contract.ENV_GPU_MEMORY_UTILIZATION] == "0.92"


def test_model_image_is_pinned_to_the_config_tag(prod) -> None:
    models = prod.serving.find_resources("AWS::SageMaker::Model")
    for model in models.values():
        parts = model["Properties"]["PrimaryContainer"]["Image"]["Fn::Join"][1]
        assert parts[-1] == ":v0.1.0"


def test_no_managed_policies_at_all(prod) -> None:
    for template in (prod.serving, prod.image):
        for role in template.find_resources("AWS::IAM::Role").values():
            assert "ManagedPolicyArns" not in role["Properties"]


def _execution_role_statements(prod) -> list[dict]:
    policies = prod.serving.find_resources("AWS::IAM::Policy")
    (policy,) = [p for p in policies.values() if any("ExecutionRole" in r["Ref"] for r in p["Properties"]["Roles"])]
    return policy["Properties"]["PolicyDocument"]["Statement"]


def test_execution_role_is_least_privilege(prod) -> None:
    statements = _execution_role_statements(prod)
    by_action: dict[str, list] = {}
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        for action in actions:
            by_action.setdefault(action, []).append(statement)
    # ECR pulls only from the image stack's repository (imported ARN), never "*".
    for action in ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability"):
        for statement in by_action[action]:
            assert "Fn::ImportValue" in str(statement["Resource"])
    # Rollback reads only the rollback alarms.
    (describe,) = by_action["cloudwatch:DescribeAlarms"]
    assert all("alarm:" in str(r) for r in describe["Resource"])
    # Model data: read-only under the configured prefix.
    (get_object,) = by_action["s3:GetObject"]
    assert get_object["Resource"] == "arn:aws:s3:::mangaassist-models-prod/llama-3-8b-instruct-awq/2026-11-01/*"
    assert "s3:DeleteObject" not in by_action and "s3:*" not in by_action
    assert not any(a.endswith(":*") for a in by_action)


def test_data_capture_goes_to_an_encrypted_ssl_only_logged_bucket(prod) -> None:
    prod.serving.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {"DataCaptureConfig": Match.object_like({"EnableCapture": True, "InitialSamplingPercentage": 5})},
    )
    prod.serving.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    Match.object_like({"ServerSideEncryptionByDefault": Match.object_like({"SSEAlgorithm": "aws:kms"})})
                ]
            },
            "LoggingConfiguration": Match.object_like({"DestinationBucketName": Match.any_value()}),
        },
    )
    prod.serving.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            }
        },
    )


def test_endpoint_log_group_is_encrypted_with_retention(prod) -> None:
    prod.serving.has_resource_properties(
        "AWS::Logs::LogGroup",
        {
            "LogGroupName": "/aws/sagemaker/Endpoints/mangaassist-llm-prod",
            "RetentionInDays": 90,
            "KmsKeyId": Match.any_value(),
        },
    )


def test_outputs_for_operators(prod) -> None:
    outputs = prod.serving.find_outputs("*")
    for key in ("EndpointName", "EndpointConfigName", "VariantNames", "RollbackAlarmNames", "AlarmTopicArn"):
        assert key in outputs
    assert outputs["VariantNames"]["Value"] == "primary,canary"


def test_resources_are_tagged_from_config(prod) -> None:
    prod.serving.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "Tags": Match.array_with(
                [{"Key": "CostCenter", "Value": "ml-platform"}, {"Key": "Environment", "Value": "prod"}]
            )
        },
    )


def test_prod_stacks_target_the_configured_account(prod) -> None:
    assert prod.serving_stack.account == "222222222222"
    assert prod.serving_stack.region == "ap-northeast-1"


def test_monthly_cost_output_uses_catalog_prices(prod) -> None:
    # floor: each variant's min_capacity x its instance type's price in prod's region x 730 h; ceiling: max_capacity
    regional = load_catalog().pricing.regions[prod.cfg.region]
    figures = load_catalog().pricing.regions[regional.assumed_from or prod.cfg.region].instance_types
    hourly = {v.name: figures[v.instance_type].usd_per_hour for v in prod.cfg.variants}
    assert set(hourly) == set(prod.cfg.autoscaling) == {"primary", "canary"}
    floor = sum(hourly[n] * s.min_capacity for n, s in prod.cfg.autoscaling.items()) * 730
    ceiling = sum(hourly[n] * s.max_capacity for n, s in prod.cfg.autoscaling.items()) * 730
    assert prod.serving.find_outputs("MonthlyCostUsd")["MonthlyCostUsd"]["Value"] == f"{floor:.0f}-{ceiling:.0f}"
