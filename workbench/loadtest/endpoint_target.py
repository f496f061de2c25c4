"""`bin/loadtest`, the part that needs an environment or AWS; the measuring is the library's
(workbench/loadtest/measurement.py). Here: the refusals, the deployed variant made a target (account
checked, endpoint InService, instances in service, a runtime client sized for the sweep), its captured
traffic, the answer turned into the exit codes, and --write-config through the YAML editor.

In the sandbox (`make sandbox`'s variables exported) a variant is the stand-in engine (workbench/standin/), not a
SageMaker instance: the record says so (`target.stand_in`) and --write-config is refused before the
sweep, so a stand-in's figure never becomes a `planning.capacity` measurement (docs/how-to/measure-capacity.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.config import Config

from config import EnvironmentConfig, environment_file, environment_label
from config.editor import EditRefused, UnsafeEdit
from ops.operations.aws import AwsClients
from ops.operations.endpoint import LiveEndpoint, LiveVariant, read_endpoint
from ops.operations.environment import Environment, config_variant, connect, load_environment_config
from ops.operations.errors import ExitCode, OpsError
from workbench.loadtest import Measurement, SettingsError
from workbench.loadtest.capture import captured_workload
from workbench.loadtest.conversations import ConversationWorkload, load_workload
from workbench.loadtest.record import NotAMeasurement, concurrent_sequences, floor_notes, record_measurement
from workbench.loadtest.report import answer_text
from workbench.loadtest.targets import UrlTarget, VariantTarget
from workbench.loadtest.workload import CapturedWorkload, Workload, WorkloadError
from workbench.sandbox.hook import SANDBOX_VARIABLE, sandbox_env

NO_ANSWER = ExitCode.CHECK_FAILED  # 3: broke at the first rate, generator too slow, time budget spent
# Enough connections for the sweep's requests in flight; one attempt: a retry would hide an error.
RUNTIME_CLIENT = Config(max_pool_connections=256, read_timeout=70, retries={"max_attempts": 1, "mode": "standard"})


def refuse_usage(
    env: str | None, variant: str | None, url: str | None, slo_ttft_ms: float | None, write_config: bool, workload: str
) -> None:
    """What the options alone refuse, before the config is read."""
    if (env is None) == (url is None):
        raise OpsError("give ENV --variant NAME (a deployed variant) or --url URL (a container)", ExitCode.USAGE)
    if env is not None and variant is None:
        raise OpsError("give --variant NAME: the sweep drives one variant", ExitCode.USAGE)
    if url is not None and slo_ttft_ms is None:
        raise OpsError("--url needs --slo-ttft-ms (there is no environment to take the objective from)", ExitCode.USAGE)
    if write_config and env is None:
        raise OpsError("--write-config records a deployed variant's measurement: give ENV --variant", ExitCode.USAGE)
    if url is not None and workload == "capture":
        raise OpsError("--workload capture reads a deployed variant's data capture: give ENV --variant", ExitCode.USAGE)
    if write_config and stand_in() is not None:
        raise OpsError(
            f"--write-config in the sandbox: {stand_in()}, so its figure is no instance type's capacity and "
            f"{environment_label(env or '')} is the real environment's file; measure without --write-config (the "
            "report still says what the stand-in served)",
            ExitCode.USAGE,
        )


def stand_in() -> str | None:
    """What serves a variant in the sandbox, as the record and the refusals name it; None on AWS."""
    sandbox = sandbox_env()
    if sandbox is None:
        return None
    return f"the sandbox's stand-in engine ({SANDBOX_VARIABLE}={sandbox}) serves its variants, not SageMaker instances"


def open_measured_environment(
    env: str, region: str | None, variant: str, allow_production: bool, client_overrides: dict[str, Any]
) -> Environment:
    """The config, read once; a production environment refused and the variant checked before any AWS
    call; then the session, with the account checked."""
    cfg = load_environment_config(env)
    if cfg.production and not allow_production:
        raise OpsError(
            f"{env} is production: the sweep drives {variant} past its objective on purpose, so its TTFT alarms "
            "fire and real users on it wait. Measure staging, or add --allow-production in a quiet hour.",
            ExitCode.USAGE,
        )
    config_variant(cfg, variant)
    return connect(cfg, region, client_overrides)


@dataclass(frozen=True)
class Subject:
    """What is measured: the target, the requests sent to it, and for a deployed variant its config."""

    target: UrlTarget | VariantTarget
    workload: ConversationWorkload | Workload | CapturedWorkload
    cfg: EnvironmentConfig | None = None
    instance_type: str | None = None
    planned_rpm: float | None = None  # planning.capacity today: the default rates' base

    def objective_ms(self, slo_ttft_ms: float | None) -> float:
        """--slo-ttft-ms, or the environment's alarms.ttft_p95_ms (refuse_usage asks a URL for one)."""
        if slo_ttft_ms is not None:
            return slo_ttft_ms
        assert self.cfg is not None
        return float(self.cfg.alarms.ttft_p95_ms)


def url_subject(url: str, workload: str) -> Subject:
    return Subject(UrlTarget(url.rstrip("/")), load_workload(workload))


def variant_subject(environment: Environment, variant: str, workload: str) -> Subject:
    """The deployed variant as the sweep's target, refused (exit 4) while the endpoint is not InService
    or the variant has no instance in service; `workload` is conversations, single, capture or a file.
    Conversations keep their prompts within the engine's budget, as the container's guard does."""
    cfg, clients = environment.cfg, environment.clients
    live = read_endpoint(clients.sagemaker, cfg.endpoint_name, cfg.name)
    if live.status != "InService":
        raise OpsError(
            f"{cfg.endpoint_name} is {live.status}, not InService: measure it once the update is over",
            ExitCode.REFUSED,
        )
    measured = live.variant(variant)
    instances = measured.current_instance_count or 0
    if instances < 1:
        raise OpsError(f"{variant} has no instance in service", ExitCode.REFUSED)
    instance_type = measured_type(cfg, measured)
    chosen = _captured(clients, live, cfg, variant) if workload == "capture" else load_workload(workload)
    if isinstance(chosen, ConversationWorkload):
        chosen = chosen.within(cfg.engine.max_model_len - cfg.engine.generation_reserve_tokens)
    details = {
        "image": measured.image,
        "image_tag": measured.image_tag,
        "instance_type": instance_type,
        "instances_by_type": measured.instances_by_type(),
        "engine": cfg.engine.model_dump(mode="json"),
    }
    if stand_in() is not None:
        details["stand_in"] = stand_in()
    runtime = clients.session.client("sagemaker-runtime", config=RUNTIME_CLIENT)
    # The platform's ConcurrentRequestsPerModel per step, read after the sweep (signal_reading, issue 52 item 6).
    target = VariantTarget(runtime, cfg.name, cfg.endpoint_name, variant, instances, details, cloudwatch=clients.cloudwatch)
    planned = cfg.planning.capacity.get(instance_type)
    return Subject(target, chosen, cfg, instance_type, planned.requests_per_minute if planned else None)


def measured_type(cfg: EnvironmentConfig, live: LiveVariant) -> str:
    """The one type every instance of the variant in service runs on, which the sweep measures (with
    instance pools, possibly a fallback); refused (exit 4) while they are of several types or the split is
    not reported. Through the runtime a variant's requests spread over its instances whatever their type
    (InvokeEndpointWithResponseStream names a variant, never an instance or a type: botocore
    sagemaker-runtime 2017-05-13), so such a sweep's answer would be a blend, no type's capacity."""
    serving = live.serving_type()
    if serving is not None:
        return serving
    counts = live.instances_by_type()
    if any(count is None for count in counts.values()):
        split = "DescribeEndpoint does not report its instances by type yet (an update under way?)"
    else:
        split = "it runs " + ", ".join(f"{n} × {t} ({_figure(cfg, t)})" for t, n in counts.items() if n)
    raise OpsError(
        f"{live.name} runs instance pools and {split}: through the runtime a sweep's requests spread over every "
        "instance of the variant, so its answer would be a blend, no type's capacity. Measure each type alone: "
        f'when all of {live.name}\'s instances are of one type (`bin/ops status {cfg.name}`, "Instances by type"), '
        'on a variant pinned to one type, or one container with --url (docs/how-to/measure-capacity.md "Measuring one '
        'instance type")',
        ExitCode.REFUSED,
    )


def _figure(cfg: EnvironmentConfig, instance_type: str) -> str:
    figure = cfg.planning.capacity.get(instance_type)
    return f"planning.capacity {figure.provenance()}" if figure else "no planning.capacity figure"


def _captured(clients: AwsClients, live: LiveEndpoint, cfg: EnvironmentConfig, variant: str) -> CapturedWorkload:
    """The variant's traffic from the data capture of the endpoint config in service."""
    described = clients.sagemaker.describe_endpoint_config(EndpointConfigName=live.config_name)
    capture = described.get("DataCaptureConfig") or {}
    if not capture.get("DestinationS3Uri"):
        raise WorkloadError(f"{live.config_name} has no data capture (data_capture.enabled in the config)")
    return captured_workload(clients.client("s3"), capture["DestinationS3Uri"], cfg.endpoint_name, variant)


@contextmanager
def usage_errors() -> Iterator[None]:
    """A workload or settings the sweep cannot use: one line and exit 2."""
    try:
        yield
    except (WorkloadError, SettingsError) as error:
        raise OpsError(str(error), ExitCode.USAGE) from None


def conclude(measurement: Measurement, slo_ttft_ms: float, say: Callable[[str], None]) -> None:
    """Says the answer; OpsError (exit 3) when there is none, or when the sweep did not finish and the
    answer is only a lower bound."""
    record, outcome, out = measurement.record, measurement.outcome, measurement.out
    answer = measurement.answer
    if answer is None:
        raise OpsError(f"no rate held the objective ({outcome.stopped}); report in {out}/", NO_ANSWER)
    say(
        f"answer: {answer_text(record)}, answered within the objective (TTFT p95 <= {slo_ttft_ms:g} ms) "
        f"({record['concurrent_requests_per_instance_at_slo']} in flight); {outcome.stopped}; report in {out}/"
    )
    if record["target"].get("stand_in"):
        say(f"note: {record['target']['stand_in']}: this is not a measurement of any instance type")
    if not outcome.complete:
        raise OpsError(f"the sweep did not finish ({outcome.stopped}): {answer:,.0f}/min is a lower bound", NO_ANSWER)


def record_answer(subject: Subject, measurement: Measurement) -> str:
    """--write-config: planning.capacity.<instance type> in the environment's YAML, validated first;
    the lines to print (what was written, then the floors it leaves carrying less)."""
    assert subject.cfg is not None and subject.instance_type is not None
    cfg, instance_type, record = subject.cfg, subject.instance_type, measurement.record
    report = measurement.out / "capacity.json"
    answer = record["requests_per_minute_per_instance"]
    notes = [f"note: {line}" for line in floor_notes(cfg, instance_type, answer)]
    if notes:
        notes.append(f"note: `make plan ENV={cfg.name}` says whether the fleet still carries its traffic")
    try:
        written = record_measurement(environment_file(cfg.name), instance_type, record, report)
    except NotAMeasurement as error:
        raise OpsError(f"{error}; report in {measurement.out}/", ExitCode.USAGE) from None
    except UnsafeEdit as error:
        raise OpsError(f"{error}: set planning.capacity.{instance_type} by hand", ExitCode.USAGE) from None
    except EditRefused as error:
        message = "\n".join([_refusal(error, instance_type, record, report), *notes])
        raise OpsError(message, ExitCode.USAGE) from None
    return "\n".join([written, *notes])


def _refusal(error: EditRefused, instance_type: str, record: dict[str, Any], report: Path) -> str:
    """What else must change before the measured figure can be written, and how to write it then."""
    answer, sequences = record["requests_per_minute_per_instance"], concurrent_sequences(record)
    figure = f"planning.capacity.{instance_type} ({answer:,g}/min, concurrent_sequences {sequences})"
    fixes = "\n".join(f"  - {path}: {message}" for path, message in error.problems)
    if not error.brought:
        return f"{figure} not written: {error.file} is already invalid; fix these first:\n{fixes}"
    return (
        f"{figure} not written: with it {error.file} would refuse synth. "
        f"Change these in the same commit first:\n{fixes}\nthen record the figure by hand from {report} "
        "(or measure again with --write-config)"
    )
