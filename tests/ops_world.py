"""Fixtures for the operations CLI: fake credentials, a moto-backed account holding one deployed
environment, and a CLI runner whose waits and holds take no time.

moto 5.2's create_endpoint_config refuses ml.g5.* instance types (a hard-coded list), so the moto
world runs the environments' configs with their instance types set to ml.g4dn.xlarge (which moto
accepts and the catalog knows) and max_num_seqs lowered so the VRAM check passes on its 16 GiB. The
untouched ml.g5 configs are exercised with botocore's Stubber in test_verify.py.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from moto import mock_aws
from moto.sagemaker.models import sagemaker_backends
from ruamel.yaml import YAML
from typer.testing import CliRunner

from config import EnvironmentConfig, naming
from config import loader as config_loader
from container.serving import contract
from ops.commands.cli import app
from ops.commands.common import Runtime
from ops.operations.environment import load_environment_config
from ops.operations.scaling import SCALABLE_DIMENSION, SERVICE_NAMESPACE, resource_id
from ops.operations.waiting import Timing
from tests.operator_policy_check import every_cli_call_is_allowed_by_the_operator_policy  # noqa: F401
from workbench.sandbox import moto_fixes
from workbench.sandbox.runtime import record_invocations
from workbench.sandbox.seed import put_image
from workbench.sandbox.server import State

REAL_ENVIRONMENTS = Path(config_loader.ENVIRONMENTS_DIR)
MOTO_INSTANCE_TYPE = "ml.g4dn.xlarge"
REPOSITORY = "mangaassist-llm"


@pytest.fixture(autouse=True)
def fake_aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Credentials that only moto accepts; no profile, no instance metadata, no real config files."""
    # MANGAASSIST_RUNTIME_HOOK: AWS's behaviour unless a test asks for a hook (a sandbox's shell exports one).
    for name in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "MANGAASSIST_RUNTIME_HOOK",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture(scope="session")
def moto_environment_files() -> dict[str, str]:
    """config/environments/*.yaml with moto-accepted instance types, computed once per session."""
    yaml = layout_keeping_yaml()
    files = {}
    for source in REAL_ENVIRONMENTS.glob("*.yaml"):
        document = yaml.load(source.read_text())
        for variant in document["variants"]:
            variant["instance_type"] = MOTO_INSTANCE_TYPE
        quotas = document["endpoint_instance_quotas"]  # the real type's quota also for the moto type
        document["endpoint_instance_quotas"] = {**quotas, MOTO_INSTANCE_TYPE: max(quotas.values())}
        document["engine"]["max_num_seqs"] = 64
        # The shift's capacity check reads per-instance capacity from planning.capacity by instance type.
        document.setdefault("planning", {}).setdefault("capacity", {})[MOTO_INSTANCE_TYPE] = {
            "requests_per_minute": 1200,
            "concurrent_sequences": 64,
            # Above a T4's physical ceiling (config/domain/physics.py): as an assumption synth would refuse it;
            # recorded as this test world's measurement, it only warns (a suspect measurement).
            "measured": {
                "where": "moto test world",
                "measured_at": "2026-11-25T00:00:00+00:00",
                "slo_ttft_p95_ms": 500,
            },
        }
        buffer = io.StringIO()
        yaml.dump(document, buffer)
        files[source.name] = buffer.getvalue()
    return files


@pytest.fixture
def environments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moto_environment_files: dict[str, str]) -> Path:
    """A moto-compatible copy of config/environments; the CLI reads (and promote writes) it."""
    target = tmp_path / "environments"
    target.mkdir()
    for name, text in moto_environment_files.items():
        (target / name).write_text(text)
    monkeypatch.setattr(config_loader, "ENVIRONMENTS_DIR", target)
    return target


@pytest.fixture
def real_environments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A byte-for-byte copy of config/environments (ml.g5 and all)."""
    target = tmp_path / "real-environments"
    shutil.copytree(REAL_ENVIRONMENTS, target)
    monkeypatch.setattr(config_loader, "ENVIRONMENTS_DIR", target)
    return target


def layout_keeping_yaml() -> YAML:
    """Round-trip YAML that reproduces config/environments/*.yaml byte for byte."""
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    return yaml


def edit_environment(directory: Path, env: str, edit: Callable[[Any], None]) -> None:
    yaml = layout_keeping_yaml()
    path = directory / f"{env}.yaml"
    document = yaml.load(path.read_text())
    edit(document)
    with path.open("w") as out:
        yaml.dump(document, out)


def image_uri(cfg: EnvironmentConfig, tag: str) -> str:
    return f"{cfg.account or '123456789012'}.dkr.ecr.{cfg.region}.amazonaws.com/{REPOSITORY}:{tag}"


@dataclass
class World:
    """A moto-backed account holding one environment's endpoint, stack, scaling, alarms and metrics."""

    cfg: EnvironmentConfig
    session: boto3.Session
    deployments: int = 0
    config_names: list[str] = field(default_factory=list)
    clients: dict[str, Any] = field(default_factory=dict)
    more_outputs: dict[str, str] = field(default_factory=dict)  # the serving stack's, kept across deploys

    def client(self, service: str) -> Any:
        if service not in self.clients:
            self.clients[service] = self.session.client(service)
        return self.clients[service]

    @property
    def endpoint(self) -> str:
        return self.cfg.endpoint_name

    def deploy(self, images: dict[str, str] | None = None, stack_expects_latest: bool = True) -> str:
        """Create models + an endpoint config from the config (tags overridable) and point the endpoint at it."""
        sagemaker = self.client("sagemaker")
        self.deployments += 1
        config_name = f"{self.endpoint}-config-{self.deployments}"
        variants = []
        for variant in self.cfg.variants:
            tag = (images or {}).get(variant.name, variant.image_tag)
            self.push_image(tag)
            model = f"{self.endpoint}-{variant.name}-{self.deployments}"
            sagemaker.create_model(ModelName=model, PrimaryContainer={"Image": image_uri(self.cfg, tag)})
            # As the prod template writes it: InstancePools in priority order when the variant has fallbacks.
            types = variant.instance_types
            placement = (
                {"InstancePools": [{"InstanceType": t, "Priority": i} for i, t in enumerate(types, 1)]}
                if len(types) > 1
                else {"InstanceType": variant.instance_type}
            )
            if variant.instance_provision_timeout_seconds is not None:
                placement["VariantInstanceProvisionTimeoutInSeconds"] = variant.instance_provision_timeout_seconds
            variants.append(
                {
                    "VariantName": variant.name,
                    "ModelName": model,
                    "InitialInstanceCount": variant.initial_instance_count,
                    **placement,
                    "InitialVariantWeight": variant.initial_weight,
                }
            )
        sagemaker.create_endpoint_config(EndpointConfigName=config_name, ProductionVariants=variants)
        if self.deployments == 1:
            sagemaker.create_endpoint(EndpointName=self.endpoint, EndpointConfigName=config_name)
        else:  # moto has no update_endpoint: recreate, as far as describe calls can tell the same thing
            sagemaker.delete_endpoint(EndpointName=self.endpoint)
            sagemaker.create_endpoint(EndpointName=self.endpoint, EndpointConfigName=config_name)
        self.config_names.append(config_name)
        if stack_expects_latest:
            self.stack(config_name)
        return config_name

    def push_image(self, tag: str) -> None:
        """The image in the account's ECR repository (moto), as a build or a release tag puts it there."""
        put_image(self.client("ecr"), REPOSITORY, tag)

    def image_stack(self, source_tag: str) -> None:
        """The image stack as deployed: its output names the tag it built from container/."""
        template = {
            "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
            "Outputs": {
                naming.OUTPUT_SOURCE_IMAGE_TAG: {"Value": source_tag},
                naming.OUTPUT_REPOSITORY_NAME: {"Value": REPOSITORY},
            },
        }
        self.client("cloudformation").create_stack(
            StackName=naming.image_stack_name(self.cfg.name), TemplateBody=json.dumps(template)
        )

    def stack(self, expected_config: str, rollback_alarms: tuple[str, ...] = (), **more_outputs: str) -> None:
        """The serving stack as deployed; rollback alarms and `more_outputs` stay in it from then on."""
        cloudformation = self.client("cloudformation")
        if rollback_alarms:
            more_outputs[naming.OUTPUT_ROLLBACK_ALARMS] = ",".join(rollback_alarms)
        self.more_outputs |= more_outputs
        outputs = {
            naming.OUTPUT_ENDPOINT_NAME: self.endpoint,
            naming.OUTPUT_ENDPOINT_CONFIG_NAME: expected_config,
            naming.OUTPUT_VARIANT_NAMES: ",".join(v.name for v in self.cfg.variants),
            **self.more_outputs,
        }
        template = json.dumps(
            {
                "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
                "Outputs": {key: {"Value": value} for key, value in outputs.items()},
            }
        )
        name = naming.serving_stack_name(self.cfg.name)
        existing = {s["StackName"] for s in cloudformation.list_stacks()["StackSummaries"]}
        if name in existing:
            cloudformation.delete_stack(StackName=name)
        cloudformation.create_stack(StackName=name, TemplateBody=template)

    def moto_endpoint(self) -> Any:
        """moto's own record of the endpoint, for what no API call sets (status, instance pools)."""
        return sagemaker_backends[self.cfg.account][self.cfg.region].endpoints[self.endpoint]

    def moto_variant(self, name: str) -> dict[str, Any]:
        return next(v for v in self.moto_endpoint().production_variants if v["VariantName"] == name)

    def weights(self) -> dict[str, float]:
        described = self.client("sagemaker").describe_endpoint(EndpointName=self.endpoint)
        return {v["VariantName"]: v["CurrentWeight"] for v in described["ProductionVariants"]}

    def set_weights(self, **weights: float) -> None:
        self.client("sagemaker").update_endpoint_weights_and_capacities(
            EndpointName=self.endpoint,
            DesiredWeightsAndCapacities=[{"VariantName": n, "DesiredWeight": w} for n, w in weights.items()],
        )

    def register_scaling(self, variant: str) -> None:
        """The seeds' production scaling: a target-tracking policy and a JST evening pre-scale."""
        autoscaling = self.client("application-autoscaling")
        common = {
            "ServiceNamespace": SERVICE_NAMESPACE,
            "ResourceId": resource_id(self.endpoint, variant),
            "ScalableDimension": SCALABLE_DIMENSION,
        }
        autoscaling.register_scalable_target(MinCapacity=2, MaxCapacity=8, **common)
        autoscaling.put_scaling_policy(
            PolicyName=f"{variant}-invocations",
            PolicyType="TargetTrackingScaling",
            TargetTrackingScalingPolicyConfiguration={
                "TargetValue": 50.0,
                "PredefinedMetricSpecification": {"PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"},
                "ScaleOutCooldown": 60,
                "ScaleInCooldown": 300,
            },
            **common,
        )
        autoscaling.put_scheduled_action(
            ScheduledActionName=f"{variant}-jp-evening-peak",
            Schedule="cron(45 17 * * ? *)",
            Timezone="Asia/Tokyo",
            ScalableTargetAction={"MinCapacity": 6, "MaxCapacity": 8},
            **common,
        )

    def scaling(self) -> dict[str, Any]:
        """Everything registered for the endpoint, minus the fields AWS generates (ARNs, times)."""
        autoscaling = self.client("application-autoscaling")
        ids = [resource_id(self.endpoint, v.name) for v in self.cfg.variants]
        targets = autoscaling.describe_scalable_targets(ServiceNamespace=SERVICE_NAMESPACE, ResourceIds=ids)
        result: dict[str, Any] = {}
        for target in targets["ScalableTargets"]:
            rid = target["ResourceId"]
            policies = autoscaling.describe_scaling_policies(ServiceNamespace=SERVICE_NAMESPACE, ResourceId=rid)
            actions = autoscaling.describe_scheduled_actions(ServiceNamespace=SERVICE_NAMESPACE, ResourceId=rid)
            result[rid] = {
                "min": target["MinCapacity"],
                "max": target["MaxCapacity"],
                "policies": sorted(
                    (p["PolicyName"], p["PolicyType"], json.dumps(p["TargetTrackingScalingPolicyConfiguration"]))
                    for p in policies["ScalingPolicies"]
                ),
                "schedules": sorted(
                    (a["ScheduledActionName"], a["Schedule"], a.get("Timezone"), json.dumps(a["ScalableTargetAction"]))
                    for a in actions["ScheduledActions"]
                ),
            }
        return result

    def alarm(self, name: str, variant: str | None, state: str = "ALARM") -> None:
        cloudwatch = self.client("cloudwatch")
        dimensions = [{"Name": "EndpointName", "Value": self.endpoint}]
        if variant:
            dimensions.append({"Name": "VariantName", "Value": variant})
        cloudwatch.put_metric_alarm(
            AlarmName=name,
            Namespace="AWS/SageMaker",
            MetricName="Invocation5XXErrors",
            Dimensions=dimensions,
            Statistic="Sum",
            Period=60,
            EvaluationPeriods=1,
            Threshold=5,
            ComparisonOperator="GreaterThanThreshold",
        )
        cloudwatch.set_alarm_state(AlarmName=name, StateValue=state, StateReason=f"test put it in {state}")

    def first_tokens(self, variant: str, values: list[float]) -> None:
        """Per-request first-token times, as the serving image's EMF arrays become PutMetricData Values."""
        dimensions = [{"Name": contract.DIM_ENDPOINT, "Value": self.endpoint},
                      {"Name": contract.DIM_VARIANT, "Value": variant}]  # fmt: skip
        for start in range(0, len(values), 100):
            data = {"MetricName": contract.METRIC_TIME_TO_FIRST_TOKEN, "Dimensions": dimensions, "Unit": "Milliseconds",
                    "Values": values[start : start + 100], "Timestamp": datetime.now(UTC)}  # fmt: skip
            self.client("cloudwatch").put_metric_data(Namespace=contract.METRIC_NAMESPACE, MetricData=[data])

    def streamed(self) -> None:
        """200 streamed requests' first-token times on each variant, alike: enough to compare (100 each needed)."""
        self.first_tokens("primary", spread(100, 300))
        self.first_tokens("canary", spread(100, 300))

    def traffic(self, variant: str, invocations: float, errors: float, minutes: int = 1) -> None:
        """`invocations` and `errors` in all, spread evenly over the last `minutes` minutes (this one
        included): the guards count the busiest minute, so a spread keeps the per-minute rate apart."""
        now = datetime.now(UTC)
        for back in range(minutes):
            at = now - timedelta(minutes=back)
            record_invocations(
                self.client("cloudwatch"), self.endpoint, variant, invocations / minutes, errors / minutes, at
            )


def spread(low: float, high: float, n: int = 200) -> list[float]:
    rng = random.Random(7)
    return [rng.uniform(low, high) for _ in range(n)]


STUBBED_AT = "2026-11-01T00:00:00Z"


def sagemaker_arn(kind: str, name: str, region: str = "ap-northeast-1", account: str = "222222222222") -> str:
    return f"arn:aws:sagemaker:{region}:{account}:{kind}/{name}"


def endpoint_answer(name: str, variants: list[dict], config: str = "cfg-1", **more: Any) -> dict[str, Any]:
    """DescribeEndpoint's answer for botocore's Stubber (which checks it against the service model)."""
    return {"EndpointName": name, "EndpointArn": sagemaker_arn("endpoint", name), "EndpointConfigName": config,
            "EndpointStatus": "InService", "CreationTime": STUBBED_AT, "LastModifiedTime": STUBBED_AT,
            "ProductionVariants": variants, **more}  # fmt: skip


def endpoint_config_answer(name: str, variants: list[dict]) -> dict[str, Any]:
    return {"EndpointConfigName": name, "EndpointConfigArn": sagemaker_arn("endpoint-config", name),
            "CreationTime": STUBBED_AT, "ProductionVariants": variants}  # fmt: skip


def model_answer(name: str, image: str) -> dict[str, Any]:
    return {"ModelName": name, "ModelArn": sagemaker_arn("model", name), "CreationTime": STUBBED_AT,
            "PrimaryContainer": {"Image": image}}  # fmt: skip


@pytest.fixture
def moto() -> Iterator[None]:
    moto_fixes.apply()  # weights and instance counts as SageMaker keeps them (workbench/sandbox/moto_fixes.py)
    with mock_aws():
        yield


@pytest.fixture
def worlds(environments: Path, moto: None, monkeypatch: pytest.MonkeyPatch) -> Callable[..., World]:
    """Opens an environment's moto world; `region` stands in for dev's missing one."""

    def open_world(env: str, region: str = "us-east-1") -> World:
        cfg = load_environment_config(env)
        if cfg.account:
            monkeypatch.setenv("MOTO_ACCOUNT_ID", cfg.account)  # moto's STS then answers with the env's account
        return World(cfg, boto3.Session(region_name=cfg.region or region))

    return open_world


@pytest.fixture
def prod(worlds: Callable[..., World]) -> World:
    """prod deployed in moto as its config says: 95/5, both variants on the config's image."""
    world = worlds("prod")
    world.deploy()
    return world


class FakeSleep:
    """Records holds instead of sleeping; `on_call` lets a test change the world mid-hold."""

    def __init__(self) -> None:
        self.calls: list[float] = []
        self.on_call: Callable[[int], None] = lambda n: None

    def __call__(self, duration: float) -> None:
        self.calls.append(duration)
        self.on_call(len(self.calls))


class FakeClock:
    """A monotonic clock that advances 50 ms per reading, so latencies are deterministic."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.05
        return self.now


# Outside every peak window of prod (Tue 13:00 JST, Mon 23:00 EST): tests that deploy are not refused.
SAFE_NOW = datetime(2026, 11, 24, 4, 0, tzinfo=UTC)


@dataclass
class Cli:
    runtime: Runtime
    sleep: FakeSleep
    runner: CliRunner = field(default_factory=CliRunner)
    app: Any = app  # bin/ops; the load test (bin/loadtest) runs on the same runtime (tests/workbench/conftest.py)

    def __call__(self, *args: str) -> Any:
        return self.runner.invoke(self.app, list(args), obj=self.runtime)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    sleep = FakeSleep()
    runtime = Runtime(
        timing=Timing(poll_seconds=0, max_polls=3, sleep=sleep, clock=FakeClock()),
        deployer=lambda env, released: pytest.fail(f"this test must not deploy {env}"),
        zone=UTC,
        state_dir=tmp_path / "state",
        now=lambda: SAFE_NOW,
    )
    return Cli(runtime, sleep)


@pytest.fixture
def moto_sandbox() -> Iterator[State]:
    """A sandbox's state on a real moto server holding prod's endpoint (primary 95, canary 5) and nothing
    else: for the sandbox commands that read weights and write metrics. Its pid is the test's own (alive)."""
    from moto.server import ThreadedMotoServer

    from workbench.standin.harness import free_port

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    # One process's moto servers share its backends: start from nothing, and leave nothing behind.
    httpx.post(f"http://127.0.0.1:{port}/moto-api/reset").raise_for_status()
    state = State(
        os.getpid(), "prod", "ap-northeast-1", "123456789012", f"http://127.0.0.1:{port}", "", "mangaassist-llm-prod"
    )
    sagemaker = state.session().client("sagemaker", endpoint_url=state.moto_url)
    sagemaker.create_model(
        ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/r", PrimaryContainer={"Image": "i"}
    )
    variants = [
        {
            "VariantName": name,
            "ModelName": "m",
            "InitialInstanceCount": 1,
            "InstanceType": "ml.m5.large",
            "InitialVariantWeight": weight,
        }
        for name, weight in (("primary", 95), ("canary", 5))
    ]
    sagemaker.create_endpoint_config(EndpointConfigName="c", ProductionVariants=variants)
    sagemaker.create_endpoint(EndpointName=state.endpoint, EndpointConfigName="c")
    yield state
    httpx.post(f"{state.moto_url}/moto-api/reset").raise_for_status()
    server.stop()
