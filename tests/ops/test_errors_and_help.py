"""Errors become one line and a documented exit code; throttling is retried; every command has help."""

from __future__ import annotations

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError, NoCredentialsError, WaiterError
from botocore.stub import Stubber

from config import ConfigError
from ops.operations.aws import AwsClients
from ops.operations.errors import ExitCode, explain

COMMANDS = ["status", "shift", "rollback", "promote", "deploy", "restore-scaling", "verify", "smoke", "bedrock-import"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_documents_itself(cli, command):
    result = cli(command, "--help")

    assert result.exit_code == 0
    assert f"Usage: root {command}" in result.output
    assert len(result.output.splitlines()) > 6


def test_top_level_help_lists_commands_and_exit_codes(cli):
    result = cli("--help")

    assert result.exit_code == 0
    assert all(command in result.output for command in COMMANDS)
    assert "Exit codes: 0 ok" in result.output and "9 scaling" in result.output


def client_error(code: str, message: str = "m", operation: str = "DescribeEndpoint") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


@pytest.mark.parametrize(
    ("error", "exit_code", "says"),
    [
        (client_error("ThrottlingException"), ExitCode.THROTTLED, "kept throttling DescribeEndpoint after retries"),
        (client_error("AccessDeniedException", "no sagemaker:DescribeEndpoint"), ExitCode.CREDENTIALS, "access denied"),
        (client_error("ExpiredTokenException"), ExitCode.CREDENTIALS, "expired or invalid"),
        (client_error("ResourceNotFoundException", "gone"), ExitCode.NOT_FOUND, "DescribeEndpoint: gone"),
        (
            client_error("InternalFailure", "boom"),
            ExitCode.AWS_ERROR,
            "DescribeEndpoint failed (InternalFailure): boom",
        ),
        (NoCredentialsError(), ExitCode.CREDENTIALS, "no AWS credentials found"),
        (
            WaiterError(name="EndpointInService", reason="Max attempts exceeded", last_response={}),
            ExitCode.OPERATION_FAILED,
            "gave up waiting (EndpointInService): Max attempts exceeded",
        ),
    ],
)
def test_errors_map_to_a_line_and_an_exit_code(error, exit_code, says):
    problem = explain(error)

    assert problem.exit_code == exit_code
    assert says in str(problem)
    assert "\n" not in str(problem)


def test_an_invalid_config_lists_every_problem():
    problem = explain(ConfigError("config/environments/prod.yaml", [("engine.max_num_seqs", "x"), ("name", "y")]))

    assert problem.exit_code == ExitCode.USAGE
    assert str(problem).startswith("invalid configuration, fix it first: config/environments/prod.yaml: 2 problem(s)")
    assert "  - engine.max_num_seqs: x\n  - name: y" in str(problem)


@pytest.mark.parametrize(
    ("code", "exit_code", "says", "ends"),
    [  # a denial also names the policy the command needs (ops.commands.common.reports_errors passes its context)
        ("AccessDeniedException", 5, "error: access denied for DescribeEndpoint",
         '; `bin/ops status` needs MangaAssist-prod-Operator (docs/reference/permissions.md, "Permissions")'),
        ("ThrottlingException", 7, "error: AWS kept throttling DescribeEndpoint after retries", "persists, look for "
         "other automation calling the same API"),
    ],
)  # fmt: skip
def test_aws_refusals_reach_the_operator_as_one_line(prod, cli, code, exit_code, says, ends):
    """The refusal has to come from AWS itself, which moto never sends: botocore's Stubber does."""
    sagemaker = boto3.client("sagemaker", region_name="ap-northeast-1")
    stub = Stubber(sagemaker)
    stub.add_client_error("describe_endpoint", code, "denied or throttled")
    cli.runtime.client_overrides["sagemaker"] = sagemaker

    with stub:
        result = cli("status", "prod")

    assert result.exit_code == exit_code
    assert result.stderr.startswith(says) and result.stderr.strip().endswith(ends)
    assert len(result.stderr.strip().splitlines()) == 1


def test_throttled_calls_are_retried_with_backoff(prod, cli, monkeypatch):
    """Two throttling answers, then moto's real one: the CLI's client retries and the command succeeds."""
    # No real waiting: zero backoff, and adaptive mode's client-side rate limiter lets every request go.
    monkeypatch.setattr("botocore.retries.standard.ExponentialBackoff.delay_amount", lambda self, context: 0)
    monkeypatch.setattr("botocore.retries.adaptive.ClientRateLimiter.on_sending_request", lambda self, **kw: None)
    throttled = []

    def throttle_twice(request, **kwargs):
        if len(throttled) < 2:
            throttled.append(request.url)
            body = b'{"__type": "ThrottlingException", "message": "Rate exceeded"}'
            return AWSResponse(request.url, 400, {"x-amzn-ErrorType": "ThrottlingException"}, RawBody(body))
        return None

    session = boto3.Session(region_name="ap-northeast-1")
    clients = AwsClients(session)
    clients.sagemaker.meta.events.register("before-send.sagemaker.DescribeEndpoint", throttle_twice)
    cli.runtime.client_overrides["sagemaker"] = clients.sagemaker

    result = cli("status", "prod")

    assert result.exit_code == 0, result.output
    assert len(throttled) == 2


class RawBody:
    def __init__(self, data: bytes):
        self.data = data

    def stream(self, *args, **kwargs):
        yield self.data


def test_clients_retry_adaptively_and_invocations_briefly():
    clients = AwsClients(boto3.Session(region_name="ap-northeast-1"))

    assert clients.sagemaker.meta.config.retries == {"mode": "adaptive", "total_max_attempts": 10}
    assert clients.runtime.meta.config.retries == {"mode": "standard", "total_max_attempts": 3}
    assert clients.runtime.meta.config.read_timeout == 70
