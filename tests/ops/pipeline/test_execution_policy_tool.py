"""`python -m ops.pipeline.execution_policy ENV` on moto's IAM: created, left alone, updated within five versions."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

import ops.pipeline.execution_policy as tool
from config.access import STACK_ROLE_BOUNDARY
from constructs.execution_policy import execution_documents, policy_names
from constructs.stack_role_boundary import boundary_document

MOTO_ACCOUNT = "123456789012"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch):
    for name, value in {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        yield boto3.client("iam")


def run(capsys, env: str = "dev") -> tuple[int, str, str]:
    code = tool.main([env])
    captured = capsys.readouterr()
    return code, captured.out.strip(), captured.err


def default_document(iam, name: str) -> dict:
    arn = f"arn:aws:iam::{MOTO_ACCOUNT}:policy/{name}"
    version = iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
    stored = iam.get_policy_version(PolicyArn=arn, VersionId=version)["PolicyVersion"]["Document"]
    return json.loads(stored) if isinstance(stored, str) else stored


def test_creates_the_boundary_first_then_the_policies_and_prints_only_theirs(aws, capsys) -> None:
    code, out, err = run(capsys)
    documents = execution_documents("aws", MOTO_ACCOUNT)
    names = policy_names(len(documents))
    assert code == 0, err
    assert out == ",".join(f"arn:aws:iam::{MOTO_ACCOUNT}:policy/{name}" for name in names)  # not the boundary
    for name, document in zip(names, documents, strict=True):
        assert default_document(aws, name) == document and f"{name}: created" in err
    assert default_document(aws, STACK_ROLE_BOUNDARY) == boundary_document("aws", MOTO_ACCOUNT)
    assert err.index(f"{STACK_ROLE_BOUNDARY}: created") < err.index("CloudFormationExecution-1: created")


def test_boundary_only_creates_the_boundary_alone(aws, capsys) -> None:
    """`make bootstrap EXECUTION_POLICIES=…`: the account brings its execution policies, not the boundary."""
    code = tool.main(["dev", "--boundary-only"])
    captured = capsys.readouterr()
    assert code == 0 and captured.out.strip() == ""
    names = {p["PolicyName"] for p in aws.list_policies(Scope="Local")["Policies"]}
    assert names == {STACK_ROLE_BOUNDARY}


def test_an_unchanged_policy_is_left_alone_and_a_changed_one_gets_a_new_default_version(
    aws, capsys, monkeypatch
) -> None:
    assert run(capsys)[0] == 0
    code, _, err = run(capsys)
    assert code == 0 and "-1: unchanged" in err
    arn = f"arn:aws:iam::{MOTO_ACCOUNT}:policy/{policy_names(1)[0]}"
    for n in range(4):  # four more versions, the last made default (by hand: it differs): at IAM's five
        statement = {"Effect": "Allow", "Action": "sns:ListTopics", "Resource": "*", "Sid": f"S{n}"}
        document = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
        aws.create_policy_version(PolicyArn=arn, PolicyDocument=document, SetAsDefault=n == 3)
    code, _, err = run(capsys)
    assert code == 0 and "-1: updated" in err, err
    versions = aws.list_policy_versions(PolicyArn=arn)["Versions"]
    assert len(versions) == 5
    assert "v1" not in {v["VersionId"] for v in versions}  # the oldest non-default made room
    assert next(v for v in versions if v["IsDefaultVersion"])["VersionId"] == "v6"


def test_credentials_of_another_account_are_refused_before_any_iam_call(aws, capsys) -> None:
    code, out, err = run(capsys, "prod")  # prod deploys to 222222222222; moto's account is 123456789012
    assert code == tool.WRONG_ACCOUNT and out == ""
    assert f"the credentials are account {MOTO_ACCOUNT}'s; prod deploys to 222222222222" in err
    assert aws.list_policies(Scope="Local")["Policies"] == []


def test_an_unknown_environment_is_a_usage_error(capsys) -> None:
    assert run(capsys, "qa")[0] == tool.USAGE
