"""The sandbox path as the README and docs/reference/commands.md print it, piece by piece on moto (in-process;
the whole sandbox as processes is the slow tier's): each command either works against the sandbox's
own world or says what to do first.

- a shift refused for want of evidence names `python -m workbench.sandbox traffic`;
- the runtime front writes data-capture files that `--workload capture` reads back;
- `bedrock-import --validate-only` finds the artifacts the sandbox seeds;
- `release-tag` finds the image stack the sandbox seeds, and points at the sandbox's deploy;
- a sandbox deploy is not judged by the real clock's peak windows unless asked, and prints what it runs
  as a reader can run it;
- after `make sandbox-stop`, the exported variables make a command say the sandbox is stopped, at once.
"""

from __future__ import annotations

import json
import shlex
import socket
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import httpx
import pytest

from ops.commands.common import Runtime
from ops.operations.deploy import REPO_ROOT
from ops.operations.errors import OpsError
from ops.pipeline import paging_check
from ops.pipeline.deploy_window import main as deploy_window
from workbench.loadtest.capture import captured_workload
from workbench.sandbox import hook
from workbench.sandbox.capture import DataCapture, sampled
from workbench.sandbox.hook import require_running
from workbench.sandbox.runtime import RuntimeFront
from workbench.sandbox.seed import BEDROCK_BUCKET, Resolver, seed_bedrock_artifacts, seed_image_stack, seed_topics

PEAK = datetime(2026, 11, 23, 8, 20, tzinfo=UTC)  # Mon 17:20 JST, prod's magazine-day window ahead


def enter_sandbox(monkeypatch, env_name: str) -> None:
    """The sandbox's own variable and the runtime hook that reads it, as `make sandbox` exports them."""
    monkeypatch.setenv("MANGAASSIST_SANDBOX", env_name)
    monkeypatch.setenv("MANGAASSIST_RUNTIME_HOOK", "workbench.sandbox.hook")


@pytest.fixture
def in_sandbox(monkeypatch):
    """What `eval "$(make -s sandbox)"` exports, minus the endpoint URL (moto is in this process)."""
    enter_sandbox(monkeypatch, "prod")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("MANGAASSIST_SANDBOX_PEAK_WINDOWS", raising=False)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_stopped_sandbox_s_variables_are_named_at_once_not_blamed_on_the_network(environments, cli, monkeypatch):
    url = f"http://127.0.0.1:{closed_port()}"
    enter_sandbox(monkeypatch, "prod")
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)

    result = cli("status", "prod")

    assert result.exit_code == 2, result.output
    assert f"error: the sandbox for prod is stopped: nothing answers at {url}" in result.stderr
    assert 'start it with `eval "$(make -s sandbox)"`, or leave it with `unset AWS_ENDPOINT_URL ' in result.stderr
    assert "MANGAASSIST_SANDBOX MANGAASSIST_RUNTIME_HOOK`" in result.stderr and "network" not in result.stderr


def test_a_running_sandbox_and_no_sandbox_pass_the_check(monkeypatch):
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        monkeypatch.setenv("MANGAASSIST_SANDBOX", "staging")
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{listening.getsockname()[1]}")
        require_running()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(OpsError, match=r'eval "\$\(make -s sandbox ENV=staging\)"'):
        require_running()
    monkeypatch.delenv("MANGAASSIST_SANDBOX")
    require_running()  # not the sandbox's variables: not the sandbox's business


def test_a_shift_refused_for_want_of_evidence_names_the_sandbox_s_traffic_command(prod, cli, monkeypatch):
    command = ".venv/bin/python -m workbench.sandbox traffic prod --per-minute N"
    outside = cli("shift", "prod", "--canary-weight", "10")
    assert outside.exit_code == 4 and "not enough evidence" in outside.stderr
    assert command not in outside.stderr

    enter_sandbox(monkeypatch, "prod")
    inside = cli("shift", "prod", "--canary-weight", "10")

    assert inside.exit_code == 4
    assert f"in the sandbox nothing serves users: run their traffic first, `{command}`" in inside.stderr
    assert prod.weights() == {"primary": 95, "canary": 5}


CAPTURE = {
    "EnableCapture": True,
    "InitialSamplingPercentage": 5,
    "DestinationS3Uri": "s3://capture-bucket/capture/",
    "CaptureOptions": [{"CaptureMode": "Input"}, {"CaptureMode": "Output"}],
    "CaptureContentTypeHeader": {"JsonContentTypes": ["application/json"]},
}


@pytest.fixture
def captured_endpoint(moto):
    """An endpoint whose config captures 5 % to s3://capture-bucket/capture/, as the template's does."""
    sagemaker, s3 = boto3.client("sagemaker", region_name="us-east-1"), boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="capture-bucket")
    sagemaker.create_model(
        ModelName="m", PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/r:t"}
    )
    variant = {"VariantName": "canary", "ModelName": "m", "InitialInstanceCount": 1, "InstanceType": "ml.g4dn.xlarge"}
    sagemaker.create_endpoint_config(EndpointConfigName="c", ProductionVariants=[variant], DataCaptureConfig=CAPTURE)
    sagemaker.create_endpoint(EndpointName="ep", EndpointConfigName="c")
    return sagemaker, s3


def test_data_capture_samples_as_configured_and_capacity_replays_the_files(captured_endpoint):
    sagemaker, s3 = captured_endpoint
    times = (datetime(2026, 11, 25, 3, 4, 5, 678000, tzinfo=UTC) + timedelta(minutes=n) for n in range(3))
    capture = DataCapture(sagemaker, s3, now=lambda: next(times))  # a capture a minute
    bodies = [{"messages": [{"role": "user", "content": f"question {n}"}], "max_tokens": 8} for n in range(41)]
    keys = [
        capture.record(
            "ep", "canary", (json.dumps(b).encode(), "application/json"), (b"data: [DONE]", "text/event-stream")
        )
        for b in bodies
    ]
    written = [key for key in keys if key]
    assert [keys.index(key) for key in written] == [0, 20, 40]  # 5 %: the first, then every 20th
    # <destination>/<endpoint>/<variant>/yyyy/mm/dd/hh/<minute>-<second>-<ms>-<uuid>.jsonl
    assert [key[: len("capture/ep/canary/2026/11/25/03/04-05-678-")] for key in written] == [
        "capture/ep/canary/2026/11/25/03/04-05-678-",
        "capture/ep/canary/2026/11/25/03/05-05-678-",
        "capture/ep/canary/2026/11/25/03/06-05-678-",
    ]
    assert all(key.endswith(".jsonl") for key in written)
    line = json.loads(s3.get_object(Bucket="capture-bucket", Key=written[0])["Body"].read())
    assert line["captureData"]["endpointInput"] == {
        "observedContentType": "application/json", "mode": "INPUT", "data": json.dumps(bodies[0]), "encoding": "JSON"
    }  # fmt: skip
    assert line["captureData"]["endpointOutput"]["encoding"] == "BASE64"  # text/event-stream is not listed as JSON
    assert line["eventMetadata"]["inferenceTime"] == "2026-11-25T03:04:05Z" and line["eventVersion"] == "0"

    replay = captured_workload(s3, CAPTURE["DestinationS3Uri"], "ep", "canary")
    assert replay.captured == (bodies[0], bodies[20], bodies[40])
    assert [sampled(n, 30) for n in range(10)].count(True) == 3


def test_the_runtime_front_captures_what_it_relays(captured_endpoint):
    sagemaker, s3 = captured_endpoint

    def model_server(request: httpx.Request) -> httpx.Response:
        events = b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\ndata: [DONE]\n\n'
        return httpx.Response(200, content=events, headers={"content-type": "text/event-stream"})

    front = RuntimeFront({"canary": "http://model"}, sagemaker, boto3.client("cloudwatch", region_name="us-east-1"),
                         deploy=lambda templates: "", capture=DataCapture(sagemaker, s3))  # fmt: skip
    front.http = httpx.Client(transport=httpx.MockTransport(model_server))
    front.start()
    try:
        body = {"messages": [{"role": "user", "content": "Recommend a manga."}], "stream": True}
        answer = httpx.post(f"{front.url}/endpoints/ep/invocations-response-stream", json=body,
                            headers={"X-Amzn-SageMaker-Target-Variant": "canary"})  # fmt: skip
    finally:
        front.stop()
    assert answer.status_code == 200
    assert captured_workload(s3, CAPTURE["DestinationS3Uri"], "ep", "canary").captured == (body,)


@pytest.mark.parametrize("kind", ["invocations", "invocations-response-stream"])
def test_a_model_server_that_drops_the_connection_is_a_model_error_not_a_dropped_call(captured_endpoint, kind):
    """The front answers for the container, as SageMaker does: 424 ModelError with a JSON body, counted as a
    failed invocation; never a connection closed without an answer (seen as a traceback in `sandbox traffic`)."""
    sagemaker, s3 = captured_endpoint
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")

    def model_server(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)

    front = RuntimeFront({"canary": "http://model"}, sagemaker, cloudwatch, deploy=lambda templates: "")
    front.http = httpx.Client(transport=httpx.MockTransport(model_server))
    front.start()
    try:
        answer = httpx.post(f"{front.url}/endpoints/ep/{kind}", json={"messages": []},
                            headers={"X-Amzn-SageMaker-Target-Variant": "canary"})  # fmt: skip
    finally:
        front.stop()
    assert answer.status_code == 424
    assert answer.headers["x-amzn-ErrorType"] == "ModelError"
    assert answer.json()["message"] == "the model server of canary gave no answer: RemoteProtocolError"
    now = datetime.now(UTC)
    failed = cloudwatch.get_metric_statistics(
        Namespace="AWS/SageMaker", MetricName="Invocation5XXErrors", StartTime=now - timedelta(minutes=5),
        EndTime=now + timedelta(minutes=1), Period=60, Statistics=["Sum"],
        Dimensions=[{"Name": "EndpointName", "Value": "ep"}, {"Name": "VariantName", "Value": "canary"}],
    )["Datapoints"]  # fmt: skip
    assert sum(point["Sum"] for point in failed) == 1


def test_bedrock_import_validates_the_artifacts_the_sandbox_seeds(moto, cli, in_sandbox):
    seed_bedrock_artifacts(boto3.client("s3", region_name="us-east-1"), "us-east-1")
    awq = cli("bedrock-import", f"s3://{BEDROCK_BUCKET}/llama3-domain-v1/", "--validate-only", "--region", "us-east-1")
    assert awq.exit_code == 3, awq.output
    assert awq.output.splitlines() == [
        f"Artifact s3://{BEDROCK_BUCKET}/llama3-domain-v1/: 2 safetensors file(s), 0.00 GB, architecture LlamaForCausalLM",
        "  ✗ missing the tokenizer (tokenizer.json or tokenizer.model)",
        "  ✗ weights are awq-quantized; import unquantized bfloat16/float16/float32 weights (the AWQ checkpoint our "
        "vLLM image serves is not the artifact to import)",
    ]
    clean = f"s3://{BEDROCK_BUCKET}/llama3-domain-v1-bf16/"
    assert cli("bedrock-import", clean, "--validate-only", "--region", "us-east-1").exit_code == 0

    job = cli(
        "bedrock-import", clean, "--model-name", "m", "--role-arn", "arn:aws:iam::1:role/r", "--region", "us-east-1"
    )
    assert job.exit_code == 2 and "the sandbox has no Bedrock import jobs" in job.stderr


# The image template's shape as synthesised (cdk.out/all/MangaAssist-prod-Image.template.json), cut to
# what the sandbox reads: the repository, the build custom resource, the outputs `release-tag` reads.
IMAGE_TEMPLATE = {
    "Resources": {
        "ImageRepositoryD8036990": {"Type": "AWS::ECR::Repository", "Properties": {"ImageTagMutability": "IMMUTABLE"}},
        "SourceBuildB6778CE8": {
            "Type": "Custom::ServingImageBuild",
            "Properties": {"RepositoryName": {"Ref": "ImageRepositoryD8036990"}, "ImageTag": "src-647e4525aaba"},
        },
    },
    "Outputs": {
        "SourceImageTag": {"Value": {"Fn::GetAtt": ["SourceBuildB6778CE8", "ImageTag"]}},
        "RepositoryName": {"Value": {"Ref": "ImageRepositoryD8036990"}},
    },
}


def test_release_tag_tags_the_sandbox_s_own_build_and_points_at_its_deploy(worlds, cli, in_sandbox, monkeypatch):
    prod = worlds("prod")
    resolve = Resolver(IMAGE_TEMPLATE, "MangaAssist-prod-Image", prod.cfg.account, prod.cfg.region)
    outputs = seed_image_stack(prod.client, resolve)
    repository = outputs["RepositoryName"]
    assert outputs["SourceImageTag"] == "src-647e4525aaba" and repository.startswith("imagerepositoryd8036990-")
    # The endpoint's images come from that repository: the World's module global (conftest, loaded by pytest).
    monkeypatch.setitem(type(prod).deploy.__globals__, "REPOSITORY", repository)
    prod.deploy()

    result = cli("release-tag", "prod", "v0.2.0")

    assert result.exit_code == 0, result.output
    assert f"tagged {repository}:src-647e4525aaba as v0.2.0" in result.output
    assert "commit, and `bin/ops deploy prod`;" in result.output and "make deploy" not in result.output


def test_a_sandbox_deploy_is_not_judged_by_the_real_clock_s_peak_windows_unless_asked(
    prod, cli, in_sandbox, monkeypatch
):
    cli.runtime.now = lambda: PEAK
    deployed = []
    cli.runtime.deployer = lambda env, released: deployed.append(env) or 0

    result = cli("deploy", "prod")

    assert result.exit_code == 0, result.output
    assert "sandbox (MANGAASSIST_SANDBOX=prod): the peak windows of prod are not checked" in result.output
    assert deployed == ["prod"]
    assert deploy_window(["prod"]) == 0
    assert deploy_window(["prod", "--now", PEAK.isoformat()]) == 4  # a time given: judging it was asked for

    monkeypatch.setenv("MANGAASSIST_SANDBOX_PEAK_WINDOWS", "1")
    asked = cli("deploy", "prod")
    assert asked.exit_code == 4 and "refusing to deploy prod at Mon 2026-11-23 17:20 JST" in asked.stderr
    assert deployed == ["prod"]


def test_in_the_sandbox_deploys_go_to_it_and_its_guards_for_users_say_they_are_skipped(in_sandbox, capsys):
    """What the hook supplies beyond the tests above: the deploy, and the paging and assumed-capacity checks
    (nothing is paged and no user is served). A sandbox for prod says nothing about staging's paging."""
    assert Runtime().deployer is hook.sandbox_deploy
    assert paging_check.main(["prod"]) == 0
    assert capsys.readouterr().out == "paging: not checked in the sandbox standing in for prod\n"
    assert paging_check.main(["staging"]) == 0
    assert "warning: staging pages a placeholder" in capsys.readouterr().err
    assert hook.HOOK.assumed_capacity_allowed("prod") == (
        "sandbox (MANGAASSIST_SANDBOX=prod): deploying on an assumed capacity is not refused here"
    )
    assert hook.HOOK.slow_metrics_hint().endswith("`make sandbox-reset` starts it clean")  # bin/ops traffic


@pytest.mark.parametrize("released", [[], ["primary"]])
def test_a_sandbox_deploy_prints_the_command_it_runs_as_a_reader_can_run_it(released, capsys, monkeypatch):
    """The line names what runs, typed as from the repository root, where bin/ops runs it (not `python -m`,
    which a reader's shell may not have, or not with the project's packages)."""
    ran = []
    monkeypatch.setattr(hook, "run_child", lambda command, cwd: ran.append((command, cwd)) or 0)

    assert hook.sandbox_deploy("prod", released) == 0

    (line,) = capsys.readouterr().out.splitlines()
    printed = shlex.split(line.removeprefix("(in the sandbox: ").removesuffix(" instead of make deploy)"))
    [(command, cwd)] = ran
    assert (
        printed[1:]
        == command[1:]
        == ["-m", "workbench.sandbox", "deploy", "prod", *(["--released", *released] if released else [])]
    )
    assert cwd / printed[0] == Path(command[0])  # the same interpreter, relative to where it runs
    if Path(sys.executable).is_relative_to(REPO_ROOT):
        assert printed[0] == str(Path(sys.executable).relative_to(REPO_ROOT))  # .venv/bin/python, as the docs write


def test_the_alarm_topic_is_seeded_and_its_output_is_its_arn(moto):
    """`verify` lists the subscriptions of the topic the stack outputs: Ref of a topic is its ARN."""
    template = {
        "Resources": {
            "NotificationsTopicAE679CBD": {"Type": "AWS::SNS::Topic", "Properties": {}},
            "NotificationsTopicOncallEmail": {
                "Type": "AWS::SNS::Subscription",
                "Properties": {
                    "TopicArn": {"Ref": "NotificationsTopicAE679CBD"},
                    "Protocol": "email",
                    "Endpoint": "oncall@example.com",
                },
            },  # fmt: skip
        },
        "Outputs": {"AlarmTopicArn": {"Value": {"Ref": "NotificationsTopicAE679CBD"}}},
    }
    resolve = Resolver(template, "MangaAssist-prod-Serving", "123456789012", "us-east-1")
    sns = boto3.client("sns", region_name="us-east-1")
    seed_topics(sns, resolve)
    arn = resolve.outputs()["AlarmTopicArn"]
    assert arn.startswith("arn:aws:sns:us-east-1:123456789012:NotificationsTopicAE679CBD-")
    (subscription,) = sns.list_subscriptions_by_topic(TopicArn=arn)["Subscriptions"]
    assert subscription["Endpoint"] == "oncall@example.com" and subscription["SubscriptionArn"].startswith(arn)


def test_a_sandbox_server_that_fails_a_call_is_one_line_not_a_traceback(monkeypatch, capsys):
    import workbench.sandbox.cli as sandbox_cli

    def failing(argv: list[str]) -> int:
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.")

    monkeypatch.setattr(sandbox_cli, "run", failing)
    assert sandbox_cli.main(["traffic", "prod"]) == 1
    said = capsys.readouterr().err.splitlines()
    assert said == [
        "sandbox: a sandbox server did not answer (RemoteProtocolError: Server disconnected without sending a"
        " response.); the sandbox keeps what was done before; `make sandbox-reset` starts a fresh one"
    ]
