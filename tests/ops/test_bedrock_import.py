"""`bedrock-import`: artifact checks on moto's S3; the import job through botocore's Stubber (moto 5.2 has none)."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.stub import Stubber

from ops.operations.bedrock_import import GB, ArtifactReport, _check_model_config

BUCKET = "mangaassist-bedrock-import"
PREFIX = "llama3-domain-v1/"
URI = f"s3://{BUCKET}/{PREFIX}"
ROLE = "arn:aws:iam::123456789012:role/bedrock-model-import"
JOB_ARN = "arn:aws:bedrock:us-east-1:123456789012:model-import-job/abc123"
MODEL_ARN = "arn:aws:bedrock:us-east-1:123456789012:imported-model/xyz789"
LLAMA_CONFIG = {"architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16", "max_position_embeddings": 8192}


def upload(files: dict[str, bytes | dict]) -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    for name, body in files.items():
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        s3.put_object(Bucket=BUCKET, Key=PREFIX + name, Body=data)


def llama_artifact(**overrides) -> dict[str, bytes | dict]:
    files: dict[str, bytes | dict] = {
        "config.json": LLAMA_CONFIG,
        "generation_config.json": {"temperature": 0.6},
        "tokenizer.json": {"version": "1.0"},
        "tokenizer_config.json": {"model_max_length": 8192},
        "model-00001-of-00002.safetensors": b"\0" * 64,
        "model-00002-of-00002.safetensors": b"\0" * 32,
        "model.safetensors.index.json": {
            "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}
        },
    }
    files.update(overrides)
    return {k: v for k, v in files.items() if v is not None}


@pytest.fixture
def bedrock(moto, cli):
    client = boto3.client("bedrock", region_name="us-east-1")
    stub = Stubber(client)
    cli.runtime.client_overrides["bedrock"] = client
    with stub:
        yield stub


def job(status: str, **extra) -> dict:
    return {
        "jobArn": JOB_ARN,
        "jobName": "mangaassist-llama3-v1-job",
        "importedModelName": "mangaassist-llama3-v1",
        "roleArn": ROLE,
        "modelDataSource": {"s3DataSource": {"s3Uri": URI}},
        "status": status,
        "creationTime": "2026-11-22T00:00:00Z",
        **extra,
    }


def test_valid_artifact_is_imported_and_the_model_arn_printed(bedrock, cli):
    upload(llama_artifact())
    bedrock.add_response(
        "create_model_import_job",
        {"jobArn": JOB_ARN},
        {
            "jobName": "mangaassist-llama3-v1-job",
            "importedModelName": "mangaassist-llama3-v1",
            "roleArn": ROLE,
            "modelDataSource": {"s3DataSource": {"s3Uri": URI}},
            "clientRequestToken": "mangaassist-llama3-v1-job",
        },
    )
    for answer in (job("InProgress"), *[job("Completed", importedModelArn=MODEL_ARN)] * 2):
        bedrock.add_response("get_model_import_job", answer, {"jobIdentifier": JOB_ARN})

    result = cli(
        "bedrock-import", URI, "--model-name", "mangaassist-llama3-v1", "--role-arn", ROLE,
        "--job-name", "mangaassist-llama3-v1-job",
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    assert "2 safetensors file(s)" in result.output and "architecture LlamaForCausalLM" in result.output
    assert "import job InProgress" in result.output and "import job Completed" in result.output
    assert result.output.splitlines()[-1] == MODEL_ARN
    bedrock.assert_no_pending_responses()


def test_artifact_problems_are_all_listed_and_nothing_is_submitted(bedrock, cli):
    upload(
        llama_artifact(
            **{
                "config.json": {
                    "architectures": ["LlamaForCausalLM"],
                    "torch_dtype": "float16",
                    "quantization_config": {"quant_method": "awq", "bits": 4},
                    "max_position_embeddings": 262144,
                },
                "tokenizer.json": None,
                "model-00002-of-00002.safetensors": None,
            }
        )
    )

    result = cli("bedrock-import", URI, "--model-name", "m", "--role-arn", ROLE)

    assert result.exit_code == 3
    assert "✗ missing the tokenizer (tokenizer.json or tokenizer.model)" in result.output
    assert "names shards that are not there: model-00002-of-00002.safetensors" in result.output
    assert "✗ weights are awq-quantized" in result.output
    assert "max_position_embeddings 262144 is over the 131072 limit" in result.output
    bedrock.assert_no_pending_responses()  # no call was made


@pytest.mark.parametrize(
    ("files", "code", "says"),
    [
        (llama_artifact(), 0, "layout, size, architecture and precision are importable"),
        (llama_artifact(**{"config.json": {"architectures": ["BertModel"]}}), 3, "architecture BertModel is not importable"),
        ({}, 6, f"error: no objects under {URI}: upload the model there first"),
    ],
    ids=["clean", "unsupported-architecture", "empty-prefix"],
)
def test_validate_only_reports_and_stops(bedrock, cli, files, code, says):
    upload(files)

    result = cli("bedrock-import", URI, "--validate-only")

    assert result.exit_code == code, result.output
    assert says in result.output


def test_a_failed_job_reports_bedrocks_reason(bedrock, cli):
    upload(llama_artifact())
    bedrock.add_response("create_model_import_job", {"jobArn": JOB_ARN})
    bedrock.add_response("get_model_import_job", job("Failed", failureMessage="tokenizer vocab mismatch"))

    result = cli("bedrock-import", URI, "--model-name", "m", "--role-arn", ROLE)

    assert result.exit_code == 8
    assert result.stderr.strip() == f"error: import job {JOB_ARN} failed: tokenizer vocab mismatch"


def test_access_denied_on_submit_is_one_line(bedrock, cli):
    upload(llama_artifact())
    bedrock.add_client_error("create_model_import_job", "AccessDeniedException", "not authorized: iam:PassRole")

    result = cli("bedrock-import", URI, "--model-name", "m", "--role-arn", ROLE)

    assert result.exit_code == 5
    assert result.stderr.startswith("error: access denied for CreateModelImportJob")
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["https://example.com/model", "--validate-only"], "not an S3 URI"),
        ([URI], "--model-name and --role-arn are required unless --validate-only"),
    ],
)
def test_usage_errors(moto, cli, args, message):
    result = cli("bedrock-import", *args)

    assert result.exit_code == 2
    assert message in result.output


def test_size_limit_depends_on_modality():
    text = ArtifactReport(URI, total_bytes=150 * GB)
    _check_model_config({"architectures": ["LlamaForCausalLM"]}, text)
    vision = ArtifactReport(URI, total_bytes=150 * GB)
    _check_model_config({"architectures": ["MllamaForConditionalGeneration"]}, vision)

    assert text.problems == []
    assert vision.problems == ["150.0 GB is over the 100 GB import limit"]
