"""`bin/ops preflight ENV` on prod's real config against a moto account answering Service Quotas and Cost
Explorer (workbench/sandbox/account_answers.py); every call checked against the policies (autouse).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import boto3
import pytest

from config import load_catalog, load_environment
from ops.operations.errors import ExitCode
from workbench.sandbox import account_answers
from workbench.sandbox.seed import seed_model_data

PROD_ACCOUNT = "222222222222"
CLAIMED = load_environment("prod", against_deployed=False).endpoint_instance_quotas["ml.g5.xlarge"]  # the YAML's
REGION = "ap-northeast-1"
MODEL_BUCKET = "mangaassist-models-prod"


@pytest.fixture
def account(real_environments: Path, moto: None, monkeypatch: pytest.MonkeyPatch) -> Callable[..., object]:
    """prod's account with its model data seeded; `run(quotas)` runs the preflight with those applied quotas."""
    monkeypatch.setenv("MOTO_ACCOUNT_ID", PROD_ACCOUNT)
    for owner, name, replacement in account_answers.patches():
        monkeypatch.setattr(owner, name, replacement, raising=False)
    monkeypatch.setattr(account_answers.Answers, "instance_types", tuple(load_catalog().instance_types))
    s3 = boto3.client("s3", region_name=REGION)
    seed_model_data(s3, ["s3://mangaassist-models-prod/llama-3-8b-instruct-awq/2026-11-01/"], REGION)
    return s3


def run(cli, monkeypatch: pytest.MonkeyPatch, quotas: dict[str, int]):  # noqa: ANN201
    monkeypatch.setattr(account_answers.Answers, "quota_of", staticmethod(quotas.get))
    return cli("preflight", "prod")


def quota_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if "for endpoint usage" in line]


def test_a_quota_of_10_is_refused_naming_the_type_the_quota_and_the_count_needed(account, cli, monkeypatch) -> None:
    result = run(cli, monkeypatch, {"ml.g5.xlarge": 10, "ml.g6.xlarge": 300})
    assert result.exit_code == ExitCode.CHECK_FAILED, result.output
    (line,) = quota_lines(result.output)
    # 4 + 3 initial instances, twice: blue/green provisions the green fleet beside the blue one.
    assert (
        "Service Quota 'ml.g5.xlarge for endpoint usage' in ap-northeast-1: found 10; needs 14 for this deploy" in line
    )
    assert (
        "endpoint_instance_quotas.ml.g5.xlarge" in result.output and f"{CLAIMED}, the account's quota is 10" in result.output
    )


def test_quotas_of_300_are_no_quota_problem(account, cli, monkeypatch) -> None:
    result = run(cli, monkeypatch, {"ml.g5.xlarge": 300, "ml.g6.xlarge": 300})
    assert quota_lines(result.output) == []
    assert "endpoint_instance_quotas" not in result.output  # the YAML's figure is below the account's 300: safe


def test_a_quota_below_the_ceiling_and_a_type_the_region_lacks(account, cli, monkeypatch) -> None:
    monkeypatch.setattr(account_answers.Answers, "instance_types", ("ml.g5.xlarge",))
    result = run(cli, monkeypatch, {"ml.g5.xlarge": 100})
    lines = quota_lines(result.output)
    ceilings = [
        int(found.group(1))
        for line in lines
        if "'ml.g5.xlarge for endpoint usage'" in line
        and (found := re.search(r"found 100; needs (\d+) for a deploy at the autoscaling ceiling", line))
    ]
    assert ceilings and ceilings[0] > 100, lines
    assert any("'ml.g6.xlarge for endpoint usage'" in line and "does not offer" in line for line in lines), lines
    assert result.exit_code == ExitCode.CHECK_FAILED


def test_the_config_s_placeholders_and_a_missing_release_image(account, cli, monkeypatch) -> None:
    result = run(cli, monkeypatch, {"ml.g5.xlarge": 300, "ml.g6.xlarge": 300})
    assert "problem: account in config/environments/prod.yaml: found 222222222222" in result.output
    assert "problem: paging destination in config/environments/prod.yaml: found alarms.paging.emails" in result.output
    assert "problem: image v0.1.0" in result.output and "MangaAssist-prod-Image is not deployed" in result.output
    assert "cost-allocation tag" not in result.output  # the account's Environment tag is active
    assert result.exit_code == ExitCode.CHECK_FAILED


def test_model_data_in_another_region_missing_or_under_an_unnamed_customer_key(account, cli, monkeypatch) -> None:
    s3 = account
    s3.put_bucket_encryption(
        Bucket=MODEL_BUCKET,
        ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "k-1"}}]
        },
    )
    result = run(cli, monkeypatch, {"ml.g5.xlarge": 300, "ml.g6.xlarge": 300})
    assert (
        "problem: model_data_kms_key_arn in config/environments/prod.yaml: found bucket mangaassist-models-prod "
        "encrypts with customer-managed key k-1, the config names none" in result.output
    )
    s3.delete_object(Bucket=MODEL_BUCKET, Key="llama-3-8b-instruct-awq/2026-11-01/base/config.json")
    s3.delete_bucket(Bucket=MODEL_BUCKET)
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=MODEL_BUCKET)
    result = run(cli, monkeypatch, {"ml.g5.xlarge": 300, "ml.g6.xlarge": 300})
    assert "found bucket in us-east-1; needs the endpoint's region ap-northeast-1" in result.output
    assert "found no object under the prefix" in result.output


def test_production_refuses_an_undigested_base_image_and_takes_a_pinned_one(tmp_path) -> None:
    from config import load_environment
    from ops.operations.preflight_base_image import base_image_findings

    prod, dev = load_environment("prod", against_deployed=False), load_environment("dev", against_deployed=False)
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM vllm/vllm-openai:v0.33.0 AS runtime\nFROM runtime AS serving\n")
    (finding,) = base_image_findings(prod, dockerfile)
    assert finding.blocking and finding.line().startswith(
        "problem: base image of container/Dockerfile (prod is production): found vllm/vllm-openai:v0.33.0"
    )
    assert not base_image_findings(dev, dockerfile)[0].blocking  # a warning elsewhere
    dockerfile.write_text(f"FROM vllm/vllm-openai:v0.33.0@sha256:{'a' * 64} AS runtime\nFROM runtime AS serving\n")
    assert base_image_findings(prod, dockerfile) == []
