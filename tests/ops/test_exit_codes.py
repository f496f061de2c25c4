"""Exit codes and one-line messages the docs promise. Wrong keys come from moto with its request authentication
on (settings.INITIAL_NO_AUTH_ACTION_COUNT), answering as AWS does (SignatureDoesNotMatch, InvalidAccessKeyId).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import boto3
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from moto import settings
from moto.core.authorization import ActionAuthenticatorMixin

from ops.operations.errors import ExitCode, explain

REPO = Path(__file__).resolve().parents[2]


def authenticate(monkeypatch) -> None:
    """From here on moto checks every request's credentials against its IAM users' keys."""
    monkeypatch.setattr(settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)
    monkeypatch.setattr(ActionAuthenticatorMixin, "request_count", 0)


def test_a_wrong_secret_exits_5(prod, cli, monkeypatch):
    iam = boto3.client("iam", region_name="us-east-1")
    iam.create_user(UserName="oncall")
    key = iam.create_access_key(UserName="oncall")["AccessKey"]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-" + key["SecretAccessKey"])
    authenticate(monkeypatch)

    result = cli("status", "prod")

    assert result.exit_code == ExitCode.CREDENTIALS, result.output
    assert "AWS rejected the credentials' signature for GetCallerIdentity (SignatureDoesNotMatch)" in result.stderr


def test_a_key_s3_does_not_know_exits_5_in_bedrock_import_not_6(moto, cli, monkeypatch):
    authenticate(monkeypatch)
    result = cli(
        "bedrock-import", "s3://mangaassist-bedrock-import/llama3/", "--validate-only", "--region", "us-east-1"
    )

    assert result.exit_code == ExitCode.CREDENTIALS, result.output
    assert "(InvalidAccessKeyId): the access key or its secret is wrong" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_aws_region_is_honoured_where_the_config_has_none(worlds, cli, monkeypatch):
    world = worlds("dev", region="eu-west-1")
    world.deploy()
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")

    result = cli("status", "dev")

    assert result.exit_code == 0, result.output
    assert f"Endpoint {world.endpoint} (eu-west-1): InService" in result.output


def test_bin_ops_returns_the_clis_own_exit_code(tmp_path):
    """`make ops` can only exit 2 on failure (GNU make); bin/ops is the same CLI with its own code."""
    env = {**os.environ, "AWS_PROFILE": "no-such-profile", "AWS_CONFIG_FILE": str(tmp_path / "none")}

    ran = subprocess.run([REPO / "bin" / "ops", "status", "prod"], env=env, capture_output=True, text=True, check=False)

    assert ran.returncode == ExitCode.CREDENTIALS, ran.stderr
    assert "AWS profile 'no-such-profile' is not in your AWS config" in ran.stderr


HTML_ERROR = """<html>
  <head><title>502 Bad Gateway</title></head>
  <body>
    <center><h1>502 Bad Gateway</h1></center>
  </body>
</html>"""


def test_an_aws_error_with_an_html_page_is_one_line():
    problem = explain(ClientError({"Error": {"Code": "InternalFailure", "Message": HTML_ERROR}}, "ListObjectsV2"))

    assert "\n" not in str(problem)
    assert "ListObjectsV2 failed (InternalFailure): <html> <head><title>502 Bad Gateway</title></head>" in str(problem)


def test_smoke_error_cells_are_one_line(prod, cli):
    runtime = boto3.client("sagemaker-runtime", region_name="ap-northeast-1")
    stub = Stubber(runtime)
    for _ in range(3):
        stub.add_client_error("invoke_endpoint", "ModelError", HTML_ERROR, http_status_code=424)
        stub.add_client_error("invoke_endpoint_with_response_stream", "ModelError", HTML_ERROR, http_status_code=424)
    cli.runtime.client_overrides["sagemaker-runtime"] = runtime

    with stub:
        result = cli("smoke", "prod")

    assert result.exit_code == ExitCode.CHECK_FAILED
    rows = [line for line in result.output.splitlines() if "FAIL" in line]
    assert len(rows) == 6
    assert all("FAIL: ModelError: <html> <head><title>502 Bad Gateway</title></head> <body>" in row for row in rows)
    assert "0 of 6 invocations answered as expected" in result.output


def test_bedrock_import_error_lines_are_one_line(moto, cli):
    s3 = boto3.client("s3", region_name="us-east-1")
    stub = Stubber(s3)
    stub.add_client_error("list_objects_v2", "InternalError", HTML_ERROR, http_status_code=500)
    cli.runtime.client_overrides["s3"] = s3

    with stub:
        result = cli("bedrock-import", "s3://bucket/prefix/", "--validate-only", "--region", "us-east-1")

    assert result.exit_code == ExitCode.AWS_ERROR
    assert len(result.stderr.strip().splitlines()) == 1
    assert "ListObjectsV2 failed (InternalError): <html>" in result.stderr
