"""Seed a moto account with what CloudFormation would have made from the synthesised serving template.

moto's own CloudFormation skips Application Auto Scaling and CloudWatch alarm resources, and its
SageMaker refuses ml.g5.* endpoint configs (DESIGN.md §3.3), so the template is not handed to moto's
CloudFormation: each resource the ops CLI reads is created through the service API, with the
template's own properties, intrinsic functions resolved the way CloudFormation resolves them
(Ref/Fn::GetAtt to physical names, Fn::Join/Sub/Select/Split, pseudo parameters). The stack itself
is then created holding the template's outputs as literal values, which is what `verify` reads.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from config import naming

# Properties of each resource type that are API parameters of the call that creates it (the rest
# are CloudFormation-only or not read by the CLI).
MODEL_FIELDS = ("ModelName", "PrimaryContainer", "Containers", "ExecutionRoleArn", "EnableNetworkIsolation")
# A variant with instance pools has InstancePools instead of InstanceType (workbench/sandbox/moto_fixes.py lets moto take them).
VARIANT_FIELDS = (
    "VariantName",
    "ModelName",
    "InitialInstanceCount",
    "InstanceType",
    "InstancePools",
    "VariantInstanceProvisionTimeoutInSeconds",
    "InitialVariantWeight",
)
ALARM_FIELDS = (
    "AlarmName", "AlarmDescription", "ActionsEnabled", "AlarmActions", "OKActions", "InsufficientDataActions",
    "MetricName", "Namespace", "Statistic", "ExtendedStatistic", "Dimensions", "Period", "Unit",
    "EvaluationPeriods", "DatapointsToAlarm", "Threshold", "ComparisonOperator", "TreatMissingData", "Metrics",
    "ThresholdMetricId",
)  # fmt: skip
SCHEDULED_ACTION_FIELDS = (
    "ScheduledActionName",
    "Schedule",
    "Timezone",
    "ScalableTargetAction",
    "StartTime",
    "EndTime",
)
REPLACED_ON_DEPLOY = {"AWS::SageMaker::Model", "AWS::SageMaker::EndpointConfig"}
# ARNs whose shape is not `arn:aws:SERVICE:REGION:ACCOUNT:KIND/NAME`, and the types whose Ref is their ARN,
# not their name (CloudFormation template reference, each type's "Return values").
ARN_SHAPES = {
    "AWS::SNS::Topic": "arn:aws:sns:{region}:{account}:{name}",
    "AWS::IAM::ManagedPolicy": "arn:aws:iam::{account}:policy/{name}",
    "AWS::IAM::Role": "arn:aws:iam::{account}:role/{name}",
}
REF_IS_ARN = {"AWS::SNS::Topic", "AWS::IAM::ManagedPolicy"}
POLICY_CONFIGURATIONS = ("TargetTrackingScalingPolicyConfiguration", "StepScalingPolicyConfiguration")


@dataclass
class Resolver:
    """CloudFormation's intrinsic functions over one template, with physical names made up once."""

    template: dict[str, Any]
    stack_name: str
    account: str
    region: str
    imports: dict[str, str] = field(default_factory=dict)  # export name -> value (Fn::ImportValue)
    # Models and endpoint configs are replaced on every deploy (create-only properties), each under a
    # new generated name: the deploy number goes into their suffix.
    deployment: int = 1
    physical: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for logical, resource in self.template.get("Resources", {}).items():
            self.physical[logical] = self._physical_name(logical, resource)

    def _physical_name(self, logical: str, resource: dict[str, Any]) -> str:
        kind = resource["Type"].rsplit("::", 1)[-1]  # Endpoint -> EndpointName, Alarm -> AlarmName, ...
        given = resource.get("Properties", {}).get(f"{kind}Name")
        if isinstance(given, str):
            return given
        replaced = resource["Type"] in REPLACED_ON_DEPLOY
        salt = f"/{self.deployment}" if replaced and self.deployment > 1 else ""
        suffix = hashlib.sha256(f"{self.stack_name}/{logical}{salt}".encode()).hexdigest()[:12]
        name = f"{logical[:40]}-{suffix}"  # CloudFormation's shape: logical id and a random suffix
        return name.lower() if resource["Type"] == "AWS::ECR::Repository" else name  # ECR names are lowercase

    def arn(self, logical: str) -> str:
        kind_name = self.template["Resources"][logical]["Type"]
        if kind_name in ARN_SHAPES:
            return ARN_SHAPES[kind_name].format(region=self.region, account=self.account, name=self.physical[logical])
        _, service, kind = kind_name.split("::")
        return f"arn:aws:{service.lower()}:{self.region}:{self.account}:{kind.lower()}/{self.physical[logical]}"

    def exports(self) -> dict[str, str]:
        """What this template's stack exports, for another template's Fn::ImportValue."""
        return {
            output["Export"]["Name"]: self(output["Value"])
            for output in self.template.get("Outputs", {}).values()
            if "Export" in output
        }

    def __call__(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self(item) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, argument),) = value.items()
            if key == "Ref":
                return self._ref(argument)
            if key == "Fn::GetAtt":
                logical, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
                return self._attribute(logical, attribute)
            if key == "Fn::Join":
                separator, items = argument
                return separator.join(str(self(item)) for item in self(items))
            if key == "Fn::Select":
                index, items = argument
                return self(items)[int(self(index))]
            if key == "Fn::Split":
                separator, text = argument
                return str(self(text)).split(separator)
            if key == "Fn::Sub":
                text, variables = (argument, {}) if isinstance(argument, str) else argument
                names = {name: self(v) for name, v in variables.items()}
                return re.sub(r"\$\{([^}]+)\}", lambda m: str(names.get(m[1]) or self._ref(m[1])), text)
            if key == "Fn::ImportValue":
                return self.imports[self(argument)]
        return {key: self(item) for key, item in value.items()}

    def _attribute(self, logical: str, attribute: str) -> Any:
        """Fn::GetAtt. A custom resource's attributes are what its handler returns as `Data`; the
        project's one (Custom::ServingImageBuild, constructs/image_build_handler) returns its ImageTag
        property as built, so a property of the same name stands in for the handler's answer."""
        resource = self.template["Resources"][logical]
        properties = resource.get("Properties", {})
        if resource["Type"].startswith("Custom::") and attribute in properties:
            return self(properties[attribute])
        return self.arn(logical) if attribute.endswith("Arn") else self.physical[logical]

    def _ref(self, name: str) -> str:
        pseudo = {
            "AWS::AccountId": self.account,
            "AWS::Region": self.region,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": self.stack_name,
        }
        if name in pseudo:
            return pseudo[name]
        if "." in name:  # Fn::Sub's ${Logical.Attribute}
            return self({"Fn::GetAtt": name.split(".", 1)})
        if self.template["Resources"].get(name, {}).get("Type") in REF_IS_ARN:
            return self.arn(name)
        return self.physical[name]

    def resources(self, kind: str) -> list[tuple[str, dict[str, Any]]]:
        """Resolved properties of each resource of a type, with the generated name filled in where the
        template leaves it to CloudFormation (ModelName, EndpointConfigName, AlarmName, ...)."""
        name_property = f"{kind.rsplit('::', 1)[-1]}Name"
        return [
            (logical, {name_property: self.physical[logical], **self(resource.get("Properties", {}))})
            for logical, resource in self.template.get("Resources", {}).items()
            if resource["Type"] == kind
        ]

    def outputs(self) -> dict[str, str]:
        return {key: str(self(output["Value"])) for key, output in self.template.get("Outputs", {}).items()}


def pick(source: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    return {name: source[name] for name in fields if name in source}


def put_image(ecr: Any, repository: str, tag: str) -> None:
    """An image `repository:tag` in ECR (a manifest of nothing: nothing pulls it here), the repository
    created on first use; a tag already there is kept."""
    if repository not in {r["repositoryName"] for r in ecr.describe_repositories()["repositories"]}:
        ecr.create_repository(repositoryName=repository)
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "size": 1,
            "digest": "sha256:" + hashlib.sha256(tag.encode()).hexdigest(),
        },
        # One layer of its own: moto derives the image digest from the layer digests alone, so images
        # without layers would all share one digest (ECR hashes the manifest).
        "layers": [
            {
                "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                "size": 1,
                "digest": "sha256:" + hashlib.sha256(f"layer of {tag}".encode()).hexdigest(),
            }
        ],
    }
    with contextlib.suppress(ecr.exceptions.ImageAlreadyExistsException):
        ecr.put_image(repositoryName=repository, imageManifest=json.dumps(manifest), imageTag=tag)


def push_model_images(ecr: Any, resolve: Resolver) -> None:
    """Every image a model names, in ECR as the image stack's build or a release tag would have put
    it there (`verify` fails a variant whose image is missing)."""
    for _, props in resolve.resources("AWS::SageMaker::Model"):
        containers = [props["PrimaryContainer"]] if "PrimaryContainer" in props else props.get("Containers", [])
        for container in containers:
            repository, tag = container["Image"].partition("/")[2].rsplit(":", 1)
            put_image(ecr, repository, tag)


def create_models_and_config(sagemaker: Any, resolve: Resolver) -> str:
    """The models and the endpoint config of one deploy; returns the endpoint config's name."""
    for _, props in resolve.resources("AWS::SageMaker::Model"):
        sagemaker.create_model(**pick(props, MODEL_FIELDS))
    names = []
    for _, props in resolve.resources("AWS::SageMaker::EndpointConfig"):
        variants = [pick(v, VARIANT_FIELDS) for v in props["ProductionVariants"]]
        capture = {"DataCaptureConfig": props["DataCaptureConfig"]} if props.get("DataCaptureConfig") else {}
        sagemaker.create_endpoint_config(
            EndpointConfigName=props["EndpointConfigName"], ProductionVariants=variants, **capture
        )
        names.append(props["EndpointConfigName"])
    (name,) = names
    return name


def record_stack(cloudformation: Any, resolve: Resolver) -> dict[str, str]:
    """The template's stack (the serving stack as `verify` reads it, or the image stack as `release-tag`
    reads it): its outputs, as literal values."""
    outputs = resolve.outputs()
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},  # moto needs one resource; the CLI reads outputs
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    stack_name = resolve.stack_name
    if any(s["StackName"] == stack_name for s in cloudformation.list_stacks()["StackSummaries"]):
        cloudformation.delete_stack(StackName=stack_name)
    cloudformation.create_stack(StackName=stack_name, TemplateBody=json.dumps(template))
    return outputs


def seed_image_stack(clients: Callable[[str], Any], resolve: Resolver) -> dict[str, str]:
    """The image stack as its first deploy leaves it: the repository holding the build of `container/`
    under its SourceImageTag (`src-<hash>`), and the stack's outputs, which `release-tag` reads."""
    outputs = resolve.outputs()
    put_image(clients("ecr"), outputs[naming.OUTPUT_REPOSITORY_NAME], outputs[naming.OUTPUT_SOURCE_IMAGE_TAG])
    return record_stack(clients("cloudformation"), resolve)


# `bin/ops bedrock-import` in the sandbox (docs/reference/commands.md, "Bedrock Custom Model Import"): the AWQ
# checkpoint the vLLM image serves, laid out as Bedrock would refuse it (quantized, no tokenizer), and
# an unquantized bfloat16 one that passes the checks. Shards are a few bytes: only names and sizes count.
BEDROCK_BUCKET = "mangaassist-bedrock-import"
LLAMA_CONFIG = {"architectures": ["LlamaForCausalLM"], "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}
SHARDS = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
BEDROCK_ARTIFACTS: dict[str, dict[str, Any]] = {
    "llama3-domain-v1/": {
        "config.json": {
            **LLAMA_CONFIG,
            "torch_dtype": "float16",
            "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128},
        },
        "tokenizer_config.json": {"model_max_length": 8192},
        **{shard: b"\0" * 64 for shard in SHARDS},
    },
    "llama3-domain-v1-bf16/": {
        "config.json": LLAMA_CONFIG,
        "tokenizer.json": {"version": "1.0"},
        "tokenizer_config.json": {"model_max_length": 8192},
        "model.safetensors.index.json": {"weight_map": {"embed": SHARDS[0], "head": SHARDS[1]}},
        **{shard: b"\0" * 64 for shard in SHARDS},
    },
}


def create_bucket(s3: Any, bucket: str, region: str) -> None:
    location = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
    s3.create_bucket(Bucket=bucket, **location)


def seed_model_data(s3: Any, uris: list[str], region: str) -> None:
    """The variants' model-data prefixes, in the endpoint's region (what `bin/ops preflight` reads): one
    small file under each, SSE-S3 as a new bucket has by default (Amazon S3 User Guide, "Default encryption")."""
    for uri in sorted(set(uris)):
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        if bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
            create_bucket(s3, bucket, region)
        s3.put_object(Bucket=bucket, Key=f"{prefix}base/config.json", Body=b"{}")


def seed_bedrock_artifacts(s3: Any, region: str) -> None:
    create_bucket(s3, BEDROCK_BUCKET, region)
    for prefix, files in BEDROCK_ARTIFACTS.items():
        for name, body in files.items():
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            s3.put_object(Bucket=BEDROCK_BUCKET, Key=prefix + name, Body=data)


def seed_topics(sns: Any, resolve: Resolver) -> None:
    """The alarm topics and their subscriptions (`verify` lists them); moto answers email and HTTPS
    subscriptions as confirmed, so the sandbox never shows one waiting for its confirmation."""
    for logical, props in resolve.resources("AWS::SNS::Topic"):
        sns.create_topic(Name=resolve.physical[logical])
        for inline in props.get("Subscription", []):
            sns.subscribe(TopicArn=resolve.arn(logical), Protocol=inline["Protocol"], Endpoint=inline["Endpoint"])
    for _, props in resolve.resources("AWS::SNS::Subscription"):
        sns.subscribe(TopicArn=props["TopicArn"], Protocol=props["Protocol"], Endpoint=props["Endpoint"])


def seed_serving_stack(clients: Callable[[str], Any], resolve: Resolver) -> dict[str, str]:
    """Create models, endpoint config, endpoint, alarms, scaling and the stack; return its outputs."""
    sagemaker = clients("sagemaker")
    push_model_images(clients("ecr"), resolve)
    s3 = clients("s3")  # the data-capture bucket `bin/loadtest --workload capture` reads
    for logical, _ in resolve.resources("AWS::S3::Bucket"):
        create_bucket(s3, resolve.physical[logical], resolve.region)
    create_models_and_config(sagemaker, resolve)
    for _, props in resolve.resources("AWS::SageMaker::Endpoint"):
        sagemaker.create_endpoint(EndpointName=props["EndpointName"], EndpointConfigName=props["EndpointConfigName"])

    seed_topics(clients("sns"), resolve)
    cloudwatch = clients("cloudwatch")
    for _, props in resolve.resources("AWS::CloudWatch::Alarm"):
        cloudwatch.put_metric_alarm(**pick(props, ALARM_FIELDS))
    for _, props in resolve.resources("AWS::CloudWatch::CompositeAlarm"):
        cloudwatch.put_composite_alarm(**pick(props, ("AlarmName", "AlarmRule", "AlarmDescription", "AlarmActions")))

    autoscaling = clients("application-autoscaling")
    targets = {}
    for logical, props in resolve.resources("AWS::ApplicationAutoScaling::ScalableTarget"):
        target = pick(props, ("ServiceNamespace", "ResourceId", "ScalableDimension"))
        targets[resolve.physical[logical]] = target
        autoscaling.register_scalable_target(
            MinCapacity=props["MinCapacity"], MaxCapacity=props["MaxCapacity"], **target
        )
        for action in props.get("ScheduledActions", []):
            autoscaling.put_scheduled_action(**target, **pick(action, SCHEDULED_ACTION_FIELDS))
    for _, props in resolve.resources("AWS::ApplicationAutoScaling::ScalingPolicy"):
        target = targets.get(props.get("ScalingTargetId")) or pick(
            props, ("ServiceNamespace", "ResourceId", "ScalableDimension")
        )
        autoscaling.put_scaling_policy(
            PolicyName=props["PolicyName"],
            PolicyType=props["PolicyType"],
            **target,
            **pick(props, POLICY_CONFIGURATIONS),
        )
    return record_stack(clients("cloudformation"), resolve)
