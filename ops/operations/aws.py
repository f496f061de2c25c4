"""boto3 clients for one region and account, all with the same retry and timeout policy."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config

from ops.operations.errors import ExitCode, OpsError
from ops.operations.runtime_hook import runtime_hook

# Control-plane calls are what AWS throttles when several tools poll one account: adaptive mode adds
# client-side rate limiting to exponential backoff.
CONTROL_PLANE = Config(
    retries={"mode": "adaptive", "total_max_attempts": 10},
    connect_timeout=10,
    read_timeout=30,
    user_agent_extra="mangaassist-ops",
)
# Invocations: an answer may take the container's full 60 s; a smoke test that needs retries found something.
RUNTIME = Config(
    retries={"mode": "standard", "total_max_attempts": 3},
    connect_timeout=10,
    read_timeout=70,
    user_agent_extra="mangaassist-ops",
)


class ServiceClient:
    """`clients.sagemaker` and the like: the environment's one client for an AWS service."""

    def __init__(self, service: str) -> None:
        self.service = service

    def __get__(self, clients: AwsClients, owner: type | None = None) -> Any:
        return clients.client(self.service)


@dataclass
class AwsClients:
    """Lazily created clients. `overrides` lets tests hand in a client wired to botocore's Stubber."""

    session: boto3.Session
    overrides: dict[str, Any] = field(default_factory=dict)
    _made: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    @property
    def region(self) -> str:
        return self.session.region_name

    def client(self, service: str) -> Any:
        if service in self.overrides:
            return self.overrides[service]
        if service not in self._made:
            config = RUNTIME if service == "sagemaker-runtime" else CONTROL_PLANE
            self._made[service] = self.session.client(service, config=config)
        return self._made[service]

    sagemaker = ServiceClient("sagemaker")
    runtime = ServiceClient("sagemaker-runtime")
    cloudwatch = ServiceClient("cloudwatch")
    autoscaling = ServiceClient("application-autoscaling")
    cloudformation = ServiceClient("cloudformation")
    s3 = ServiceClient("s3")
    bedrock = ServiceClient("bedrock")
    ssm = ServiceClient("ssm")  # rollback floor records (ops/operations/floor_store.py)

    def account_id(self) -> str:
        return self.client("sts").get_caller_identity()["Account"]


def open_session(config_region: str | None, requested_region: str | None) -> boto3.Session:
    """The environment's region wins; then --region (dev has none), then AWS_REGION.

    botocore reads only AWS_DEFAULT_REGION and the profile's (botocore/configprovider.py); AWS_REGION is the SDKs'
    name for it (docs.aws.amazon.com/sdkref/latest/guide/feature-region.html), and what the docs tell operators."""
    runtime_hook().before_session()  # a hook's world that is not running: said now, not after ~19 s of retries
    if config_region and requested_region and config_region != requested_region:
        raise OpsError(
            f"--region {requested_region} contradicts the environment's region {config_region}: drop --region",
            ExitCode.USAGE,
        )
    session = boto3.Session(region_name=config_region or requested_region or os.environ.get("AWS_REGION") or None)
    if not session.region_name:
        raise OpsError(
            "no AWS region: pass --region or set AWS_REGION (dev has no region in its config)", ExitCode.USAGE
        )
    return session


def check_account(clients: AwsClients, expected_account: str | None, env_name: str) -> None:
    if expected_account is None:
        return
    actual = clients.account_id()
    if actual != expected_account:
        raise OpsError(
            f"the current credentials are for account {actual}, but {env_name} lives in {expected_account}: "
            "switch AWS_PROFILE to that account",
            ExitCode.CREDENTIALS,
        )
