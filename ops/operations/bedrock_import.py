"""`bedrock-import`: Bedrock Custom Model Import (seed 000 section 12) of Hugging Face weights in S3.

The artifact is checked before a job is submitted: a job failing on layout costs a long wait. The limits follow
seed 000 section 12 (checked 2026-03); recheck them against AWS's documentation when a job fails on one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from botocore.exceptions import WaiterError

from ops.operations.errors import ExitCode, OpsError
from ops.operations.output import Console, one_line
from ops.operations.runtime_hook import runtime_hook
from ops.operations.waiting import Timing, custom_waiter, wait

TEXT_ARCHITECTURES = {
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "MixtralForCausalLM",
    "T5ForConditionalGeneration",  # Flan-T5
    "GPTBigCodeForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
    "GptOssForCausalLM",
}
MULTIMODAL_ARCHITECTURES = {
    "MllamaForConditionalGeneration",
    "Qwen2VLForConditionalGeneration",
    "Qwen2_5_VLForConditionalGeneration",
}
GB = 10**9
MAX_TEXT_BYTES = 200 * GB
MAX_MULTIMODAL_BYTES = 100 * GB
MAX_CONTEXT_TOKENS = 128 * 1024
IMPORTABLE_DTYPES = {"float32", "float16", "bfloat16"}
REQUIRED_FILES = ("config.json", "tokenizer_config.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model")  # Llama 3 ships only tokenizer.json
SHARD_INDEX = "model.safetensors.index.json"


@dataclass
class ArtifactReport:
    uri: str
    total_bytes: int = 0
    weight_files: int = 0
    architecture: str | None = None
    problems: list[str] = field(default_factory=list)


def split_s3_uri(uri: str) -> tuple[str, str]:
    parsed = urlparse(uri)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise OpsError(f"not an S3 URI: {uri} (expected s3://bucket/prefix/)", ExitCode.USAGE)
    prefix = parsed.path.lstrip("/")
    return parsed.netloc, prefix if not prefix or prefix.endswith("/") else prefix + "/"


def validate_artifact(s3: Any, uri: str) -> ArtifactReport:
    bucket, prefix = split_s3_uri(uri)
    objects = {
        item["Key"][len(prefix) :]: item["Size"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for item in page.get("Contents", [])
    }
    if not objects:
        raise OpsError(f"no objects under {uri}: upload the model there first", ExitCode.NOT_FOUND)
    report = ArtifactReport(uri, total_bytes=sum(objects.values()))
    weights = [name for name in objects if name.endswith(".safetensors")]
    report.weight_files = len(weights)
    if not weights:
        report.problems.append("no .safetensors weights (Bedrock imports Hugging Face safetensors only)")
    for name in REQUIRED_FILES:
        if name not in objects:
            report.problems.append(f"missing {name}")
    if not any(name in objects for name in TOKENIZER_FILES):
        report.problems.append(f"missing the tokenizer ({' or '.join(TOKENIZER_FILES)})")
    if SHARD_INDEX in objects:
        index = _read_json(s3, bucket, prefix + SHARD_INDEX, report)
        missing = sorted(set(index.get("weight_map", {}).values()) - set(objects)) if index else []
        if missing:
            report.problems.append(f"{SHARD_INDEX} names shards that are not there: {', '.join(missing)}")
    if "config.json" in objects:
        _check_model_config(_read_json(s3, bucket, prefix + "config.json", report), report)
    return report


def _read_json(s3: Any, bucket: str, key: str, report: ArtifactReport) -> dict[str, Any]:
    try:
        document = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    except ValueError:
        report.problems.append(f"{key.rsplit('/', 1)[-1]} is not valid JSON")
        return {}
    return document if isinstance(document, dict) else {}


def _check_model_config(config: dict[str, Any], report: ArtifactReport) -> None:
    architectures = config.get("architectures") or []
    report.architecture = architectures[0] if architectures else None
    supported = TEXT_ARCHITECTURES | MULTIMODAL_ARCHITECTURES
    if report.architecture not in supported:
        report.problems.append(
            f"architecture {report.architecture or '(none in config.json)'} is not importable; "
            f"supported: {', '.join(sorted(supported))}"
        )
    limit = MAX_MULTIMODAL_BYTES if report.architecture in MULTIMODAL_ARCHITECTURES else MAX_TEXT_BYTES
    if report.total_bytes > limit:
        report.problems.append(f"{report.total_bytes / GB:.1f} GB is over the {limit // GB} GB import limit")
    context = config.get("max_position_embeddings")
    if isinstance(context, int) and context > MAX_CONTEXT_TOKENS:
        report.problems.append(f"max_position_embeddings {context} is over the {MAX_CONTEXT_TOKENS} limit")
    if "quantization_config" in config:
        method = config["quantization_config"].get("quant_method", "quantized")
        report.problems.append(
            f"weights are {method}-quantized; import unquantized {'/'.join(sorted(IMPORTABLE_DTYPES))} weights "
            "(the AWQ checkpoint our vLLM image serves is not the artifact to import)"
        )
    dtype = config.get("torch_dtype") or config.get("dtype")
    if dtype is not None and dtype not in IMPORTABLE_DTYPES:
        report.problems.append(f"torch_dtype {dtype} is not one of {', '.join(sorted(IMPORTABLE_DTYPES))}")


@dataclass(frozen=True)
class ImportJob:
    job_name: str
    model_name: str
    role_arn: str
    uri: str


def submit_import(bedrock: Any, job: ImportJob) -> str:
    if (refused := runtime_hook().bedrock_import_refused()) is not None:
        raise OpsError(refused, ExitCode.USAGE)
    response = bedrock.create_model_import_job(
        jobName=job.job_name,
        importedModelName=job.model_name,
        roleArn=job.role_arn,
        modelDataSource={"s3DataSource": {"s3Uri": job.uri}},
        clientRequestToken=job.job_name,  # resubmitting the same job name does not start a second import
    )
    return response["jobArn"]


def wait_for_import(bedrock: Any, job_arn: str, console: Console, timing: Timing) -> str:
    waiter = custom_waiter(
        "ModelImportJobFinished",
        "GetModelImportJob",
        [
            {"matcher": "path", "argument": "status", "expected": "Completed", "state": "success"},
            {"matcher": "path", "argument": "status", "expected": "Failed", "state": "failure"},
        ],
    )
    try:
        wait(
            waiter,
            bedrock.get_model_import_job,
            lambda r: f"import job {r['status']}",
            console,
            timing,
            jobIdentifier=job_arn,
        )
    except WaiterError as error:
        reason = (error.last_response or {}).get("failureMessage")
        if reason is None:
            raise
        raise OpsError(f"import job {job_arn} failed: {one_line(reason)}", ExitCode.OPERATION_FAILED) from None
    return bedrock.get_model_import_job(jobIdentifier=job_arn)["importedModelArn"]
