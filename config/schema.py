"""Typed shape of one environment's configuration.

Field-level rules (types, ranges, allowed values) live here as pydantic constraints; rules that
relate several fields live in `config.checks`. Both report every problem by field path.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from config.domain.release_calendar import ReleaseCalendar
from config.metric_names import HIGH_RESOLUTION, INVOCATIONS_PER_INSTANCE
from config.naming import environment_label
from config.variant_lookup import by_name
from container.serving import contract


class CeilingFigure(Protocol):
    """What provenance lines read of a physical ceiling (config.domain.physics.Ceiling; a protocol, so this
    module, which config.domain.physics reads, does not import it back)."""

    @property
    def requests_per_minute(self) -> float: ...

    @property
    def batch(self) -> int: ...


# Image tags that move: an endpoint must never reference one, in any letter case (config.checks.variants).
MUTABLE_TAGS = ("latest", "stable", "prod", "production", "staging", "dev", "main")

NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"  # SageMaker endpoint and variant names

# Upper bounds: a typo (10^12 instances, a 10^15 ms threshold) must not pass as intent.
# Instances per variant: a Friday release on ml.g6.xlarge alone needs about 103 (prod's window maximum,
# `bin/plan prod --tune`, issue 52) and blue/green needs the fleet twice over; SageMaker's per-account
# instance quotas are far below this unless raised on purpose.
MAX_INSTANCES = 150
# An account's endpoint-instance quota per type: far above anything granted, low enough to catch a typo.
MAX_QUOTA = 10_000
# SageMaker answers a real-time invocation within 60 s or fails it: a latency threshold above that
# can never be crossed, which silently disables the (rollback) alarm.
INVOCATION_TIMEOUT_MS = 60_000
# The admission deadline, unless set, is this many times the TTFT objective (alarms.ttft_p95_ms): the
# objective is a p95 for a healthy fleet; a request is turned away (429, the gateway falls back) only
# when it would wait several objectives for its first token, not at the first slow minute.
ADMISSION_DEADLINE_TTFT_MULTIPLE = 4
MAX_COOLDOWN_SECONDS = 3600  # a longer cooldown freezes scaling past any peak
# AWS tag values: up to 256 letters, digits, spaces and _ . : / = + - @ (Tagging API).
TAG_VALUE = Field(min_length=1, max_length=256, pattern=r"^[\w\s.:/=+\-@]+$")


class Strict(BaseModel):
    # .inf and .nan are YAML floats; no setting means them, and they crash synth inside jsii.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# --- catalog (config/catalog.yaml) ---------------------------------------------------------------


class InstanceType(Strict):
    gpu: str
    gpu_count: int = Field(ge=1)
    gpu_memory_gib: float = Field(gt=0)
    vcpus: int = Field(ge=1)
    memory_gib: float = Field(gt=0)
    local_nvme: bool


class Gpu(Strict):
    """One GPU's peak figures (config/catalog.yaml `gpus:` cites each), for the physical ceiling of an
    instance's requests per minute (config.domain.physics)."""

    fp16_dense_tflops: float = Field(gt=0)  # the dense FP16/BF16 matrix rate the GPU reaches, no sparsity
    memory_bandwidth_gb_per_s: float = Field(gt=0)  # datasheet
    # Share of the bandwidth ECC takes where the GPU runs it (GDDR6 with ECC on: inline check bits).
    ecc_bandwidth_loss: float = Field(default=0.0, ge=0, lt=1)
    source: str = Field(min_length=1)

    @property
    def usable_bandwidth_gb_per_s(self) -> float:
        return self.memory_bandwidth_gb_per_s * (1 - self.ecc_bandwidth_loss)


class ModelProfile(Strict):
    parameters_billion: float = Field(gt=0)
    num_layers: int = Field(ge=1)
    hidden_size: int = Field(ge=1)  # attention FLOPs: 4 x layers x hidden_size per attended position
    num_kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    kv_dtype_bytes: int = Field(ge=1)
    weights_gib: float = Field(gt=0)
    runtime_overhead_gib: float = Field(ge=0)
    max_position_embeddings: int = Field(ge=1)
    min_startup_seconds: int = Field(ge=60, le=3600)

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * self.kv_dtype_bytes


class InferenceAmi(Strict):
    """A host AMI a variant can pick with InferenceAmiVersion (config/catalog.yaml says where from)."""

    nvidia_driver: int = Field(ge=1)
    cuda_version: str = Field(pattern=r"^\d+\.\d+$")  # the newest CUDA the driver runs
    instance_families: list[str] = Field(min_length=1)  # "g5" for ml.g5.*

    @property
    def cuda(self) -> tuple[int, int]:
        return cuda_tuple(self.cuda_version)


class ServingImage(Strict):
    """The pinned base image of container/Dockerfile and the CUDA version its engine is built for."""

    base_image: str
    cuda_version: str = Field(pattern=r"^\d+\.\d+$")

    @property
    def cuda(self) -> tuple[int, int]:
        return cuda_tuple(self.cuda_version)


def cuda_tuple(version: str) -> tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)


class Price(Strict):
    """One instance type's on-demand SageMaker real-time inference price in one region."""

    usd_per_hour: float = Field(gt=0)
    as_of: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")  # the date the source states, or the month it was read
    source: str = Field(min_length=1)  # where the figure comes from; "UNVERIFIED: ..." when nothing confirms it


class RegionPrices(Strict):
    """A region's prices, or a labelled stand-in: `assumed_from` another region's, `assumption` saying why."""

    instance_types: dict[str, Price] = Field(default_factory=dict)
    assumed_from: str | None = None
    assumption: str | None = Field(default=None, min_length=1)


class Pricing(Strict):
    unpinned_region: str  # where an environment without a region (environment-agnostic) is priced
    regions: dict[str, RegionPrices] = Field(min_length=1)


class Catalog(Strict):
    gpus: dict[str, Gpu]
    instance_types: dict[str, InstanceType]
    pricing: Pricing
    models: dict[str, ModelProfile]
    inference_amis: dict[str, InferenceAmi]
    serving_image: ServingImage


# --- one environment (config/environments/<env>.yaml) --------------------------------------------


class Tags(Strict):
    Project: str = TAG_VALUE
    Environment: str = TAG_VALUE
    CostCenter: str = TAG_VALUE


class Variant(Strict):
    name: str = Field(pattern=NAME_PATTERN)
    instance_type: str
    initial_instance_count: int = Field(ge=1, le=MAX_INSTANCES)
    initial_weight: float = Field(ge=0, le=100)
    # Immutable tag (the repository refuses to overwrite tags) or a digest `sha256:<64 hex>`.
    image_tag: str = Field(pattern=r"^(sha256:[0-9a-f]{64}|[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})$")
    # Uncompressed model data (S3 prefix holding base/ and lora/<adapter>/), mounted read-only at
    # /opt/ml/model; network isolation keeps the container off the internet.
    model_data_s3_uri: str = Field(pattern=r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/([^/]+/)+$")
    # Only for instance types without local NVMe storage; refused otherwise.
    volume_size_gb: int | None = Field(default=None, ge=1, le=512)
    # ProductionVariant.InferenceAmiVersion: the host AMI (NVIDIA driver). Must run the image's CUDA
    # version on this instance type (config/catalog.yaml, config.checks.platform).
    inference_ami_version: str
    # ProductionVariant.InstancePools: when `instance_type` cannot be provisioned (insufficient
    # capacity), SageMaker tries these in order, at creation, scale-out and scale-in (priority 2..5;
    # botocore InstancePoolList: at most 5 pools). Every rule on instance_type applies to each.
    fallback_instance_types: list[str] = Field(default_factory=list, max_length=4)
    # VariantInstanceProvisionTimeoutInSeconds (botocore: 300-3600): the total time SageMaker spends
    # provisioning across all pools before the operation fails. None: SageMaker's default (unstated).
    instance_provision_timeout_seconds: int | None = Field(default=None, ge=300, le=3600)

    @property
    def instance_types(self) -> list[str]:
        """Every type the variant may run on, preferred first (InstancePools priority 1..n)."""
        return [self.instance_type, *self.fallback_instance_types]


class Engine(Strict):
    model: str
    quantization: Literal["awq", "awq_marlin"] = "awq"
    gpu_memory_utilization: float = Field(gt=0, le=1)
    max_model_len: int = Field(ge=256)
    max_num_seqs: int = Field(ge=1)
    max_num_batched_tokens: int = Field(ge=1)
    block_size: int = Field(ge=1)
    max_loras: int = Field(ge=1)
    max_lora_rank: int
    adapters: list[str] = Field(min_length=1)
    # KV-cache tokens each of max_num_seqs sequences must get before vLLM starts preempting.
    kv_cache_min_tokens_per_sequence: int = Field(ge=16)
    # Output tokens kept free in max_model_len; prompts longer than the rest are refused (400).
    generation_reserve_tokens: int = Field(ge=1)


class Container(Strict):
    startup_health_check_timeout_seconds: int = Field(ge=60, le=3600)
    warmup_requests: int = Field(ge=0, le=100)
    warmup_timeout_seconds: int = Field(ge=1, le=3600)
    # SageMaker sends SIGKILL 30 s after SIGTERM; the drain must finish before that, and the
    # container keeps some of it to stop the engine (limits shared with the container).
    drain_seconds: int = Field(gt=contract.ENGINE_STOP_GRACE_SECONDS, lt=contract.SAGEMAKER_SIGKILL_SECONDS)
    metrics_interval_seconds: int = Field(ge=1, le=60)
    # No token progress on unfinished requests for this long = a hung engine: /ping 503, the container
    # exits (container/serving/progress.py). Below SageMaker's 60 s invocation timeout, so it is
    # declared while clients still wait; at least 5 s, far above one prefill or decode step.
    engine_stall_seconds: int = Field(default=30, ge=5, lt=INVOCATION_TIMEOUT_MS // 1000)
    # A GPU check failing this long after its first failure: the container drains and exits non-zero, so
    # SageMaker replaces the instance (docs/explanation/serving-image.md "Signals and failures"). At least two check
    # intervals, so one failed nvidia-smi run never ends a container; the upper bound is
    # config.checks.container (inside the startup health-check window, drain included).
    unhealthy_exit_seconds: int = Field(
        default=contract.DEFAULT_UNHEALTHY_EXIT_SECONDS, ge=2 * contract.GPU_CHECK_INTERVAL_SECONDS, le=3600
    )
    # A request projected to wait longer than this for its first token is answered 429 at once
    # (container/serving/admission.py, docs/reference/container.md "Admission"). None: ADMISSION_DEADLINE_TTFT_MULTIPLE
    # x alarms.ttft_p95_ms; read it through EnvironmentConfig.admission_deadline_ms. At most SageMaker's
    # 60 s invocation timeout (config.checks.container).
    admission_deadline_ms: int | None = Field(default=None, ge=1)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_retention_days: Literal[7, 14, 30, 60, 90, 180, 365, 731] = 90


class CapacitySize(Strict):
    type: Literal["INSTANCE_COUNT", "CAPACITY_PERCENT"]
    value: int = Field(ge=1, le=100)  # a percentage, or instances (at most half a variant, config.checks.platform)


class Deployment(Strict):
    traffic_routing: Literal["ALL_AT_ONCE", "CANARY", "LINEAR"]
    # CanarySize for CANARY, LinearStepSize for LINEAR; unused for ALL_AT_ONCE.
    step_size: CapacitySize | None = None
    wait_interval_seconds: int = Field(ge=0, le=3600)  # the bake time of each step
    termination_wait_seconds: int = Field(ge=0, le=3600)
    # None (the default): derived from the update's parts with a margin (config/blue_green_timeout.py); an
    # explicit value below them is refused.
    maximum_execution_timeout_seconds: int | None = Field(default=None, ge=600, le=28800)


class DataCapture(Strict):
    """Users' prompts and answers: personal data (docs/reference/configuration.md "Data capture"; config.checks.capture)."""

    enabled: bool
    sampling_percentage: int = Field(default=5, ge=1, le=100)
    # DataCaptureConfig.CaptureOptions: the request ("input": CaptureMode Input), the response
    # ("output": Output) or "both" (Input and Output, as SageMaker's real-time capture guide writes it).
    capture_options: Literal["input", "output", "both"] = "input"
    # S3 lifecycle expiry of captured objects; null would keep them forever (refused when enabled).
    retention_days: int | None = Field(default=7, ge=1, le=3650)
    # Required beside retention_days above 7 in a production environment: why they are kept longer.
    retention_reason: str | None = Field(default=None, min_length=1, max_length=500)
    # "kms": the capture bucket's own customer-managed key, the only value accepted while enabled.
    encryption: Literal["kms", "sse-s3", "none"] = "kms"
    # Who may assume the break-glass CaptureReader role, the only principal the capture key lets decrypt
    # (constructs/capture_reader_role.py): the organisation's break-glass principals, IAM roles or users of
    # the environment's account by ARN, `*` allowed (ArnLike on aws:PrincipalArn), e.g. an IAM Identity Center
    # permission set's role, `arn:aws:iam::<account>:role/aws-reserved/sso.amazonaws.com/*/AWSReservedSSO_
    # BreakGlass_*`; empty, the account itself. Either way the reader's own policy (or permission set) must
    # allow sts:AssumeRole on the role: the trust names the account, narrowed by aws:PrincipalArn.
    readers: list[Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:iam::\d{12}:(role|user)/[A-Za-z0-9+=,.@_/*-]+$")]] = (
        Field(default_factory=list, max_length=20)
    )
    # Require MFA to assume it (aws:MultiFactorAuthPresent). IAM sees MFA only for IAM users and the root
    # user who sign in or call GetSessionToken/AssumeRole with it; set false for readers whose sign-in and
    # MFA are an identity provider's (IAM Identity Center, SAML), whose sessions IAM sees without MFA
    # (config.checks.capture refuses true with an Identity Center role).
    reader_mfa: bool = True


class EndpointMetrics(Strict):
    """The endpoint config's MetricsConfig, always set explicitly (botocore's sagemaker model; what each field
    does and costs: docs/explanation/platform-notes.md "Endpoint metrics and a sick instance"), and the instance-outlier
    alarm that the per-instance metrics make possible (constructs/instance_outlier.py)."""

    # EnableEnhancedMetrics (API default False): invocation and utilisation metrics also per InstanceId.
    enhanced_metrics: bool = True
    # EnableDetailedObservability (API default True for new endpoint configs): SageMaker scrapes the
    # container's /metrics on 8080, vLLM's whole Prometheus text, into CloudWatch. Off: the image already
    # sends what alarms and scaling use as EMF (container/serving/contract.py).
    detailed_observability: bool = False
    # MetricPublishFrequencyInSeconds (API: 10, 30, 60, 120, 180, 240, 300; default 60). With enhanced
    # metrics it applies to invocation metrics too: above 60 the 1-minute alarms would miss minutes.
    publish_frequency_seconds: Literal[10, 30, 60] = 60
    # Instance outlier (ticket): the slowest serving instance's mean ModelLatency at least this many times
    # the fastest's ...
    outlier_latency_ratio: float = Field(default=2.0, gt=1, le=100)
    outlier_minutes: int = Field(default=10, ge=3, le=60)  # ... in this many consecutive minutes


class Operations(Strict):
    """How the ops CLI treats the live endpoint (docs/how-to/shift-promote-rollback.md "A busy endpoint")."""

    # The most a command waits, in all, for an endpoint that is Updating (a scale-out, another change)
    # before its weight or capacity change is taken: with instance pools one scale-out may hold the
    # endpoint Updating for its instance_provision_timeout_seconds (config.checks.variants compares them).
    busy_endpoint_wait_seconds: int = Field(default=1200, ge=60, le=7200)


class ImageBuild(Strict):
    keep_images: int = Field(default=30, ge=2, le=1000)  # ECR lifecycle: newest N images kept


EMAIL_PATTERN = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"
SNS_TOPIC_ARN_PATTERN = r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$"


class AlarmDestination(Strict):
    """Who hears one of the two alarm topics (docs/reference/alarms.md "Two destinations"). The stack subscribes
    each address and endpoint to its own topic; `topic_arn` is an existing topic in this environment's
    account and region that the alarms publish to as well (its policy must let CloudWatch publish)."""

    emails: list[Annotated[str, Field(pattern=EMAIL_PATTERN, max_length=320)]] = Field(
        default_factory=list, max_length=10
    )
    # PagerDuty's or Opsgenie's Amazon SNS integration URL: the way they receive SNS notifications.
    https_endpoints: list[Annotated[str, Field(pattern=r"^https://\S+$", max_length=2048)]] = Field(
        default_factory=list, max_length=10
    )
    topic_arn: str | None = Field(default=None, pattern=SNS_TOPIC_ARN_PATTERN)


class Alarms(Strict):
    # Seeds' SLOs: error rate < 0.1 % (24 h); time to first token p95 < 500 ms. No ModelLatency
    # threshold: what it measures for streamed responses is not documented (docs/reference/alarms.md "Rollback alarms").
    error_rate_5xx_percent: float = Field(gt=0, le=100)
    evaluation_minutes: int = Field(default=5, ge=1, le=60)
    error_rate_4xx_percent: float = Field(default=5, gt=0, le=100)
    overhead_latency_p99_ms: int = Field(default=100, ge=1, le=INVOCATION_TIMEOUT_MS)
    gpu_memory_percent: float | None = Field(default=None, gt=0, le=100)  # None: derived (config/gpu_memory.py)
    cpu_percent: float = Field(default=90, gt=0, le=100)
    gpu_idle_percent: float = Field(default=10, gt=0, le=100)  # cost: GPU mostly idle ...
    gpu_idle_minutes: int = Field(default=60, ge=5, le=1440)  # ... for this long
    # Serving-image alarms (seeds 001, scenario 8). TTFT p95 also rolls a deployment back.
    ttft_p95_ms: int = Field(default=500, ge=1, le=INVOCATION_TIMEOUT_MS)
    # A minute with fewer streamed requests than this does not count against the TTFT alarm: with 20,
    # the p95 is the 19th value, so one or two slow requests cannot make it.
    ttft_min_requests_per_minute: int = Field(default=20, ge=1, le=100_000)
    # A broken release, the whole fleet at once: 5XX above this share, or TTFT p95 above this, in 2 of 3
    # minutes with at least this many requests rolls it back within 3 min (docs/reference/alarms.md "When each
    # alarm fires"), beside the 5-minute SLO alarms above, which catch what is merely worse.
    release_5xx_percent: float = Field(default=5, gt=0, le=100)
    release_ttft_p95_ms: int = Field(default=1000, ge=1, le=INVOCATION_TIMEOUT_MS)
    release_min_requests_per_minute: int = Field(default=20, ge=1, le=100_000)
    # Waiting requests per instance: 1,200/min at the SLO drain 1,200 in the 60 s timeout, so a
    # queue of 10,000 is already all timeouts.
    queue_depth_critical: float = Field(default=80, gt=0, le=10_000)
    kv_cache_percent: float = Field(default=95, gt=0, le=100)
    # Requests shed by the admission check (429, container.admission_deadline_ms): any for 5 minutes is a
    # ticket; more than this share of the variant's invocations for evaluation_minutes pages (the gateway
    # falls back for each of them: users get another model's answers, or errors if it cannot).
    shed_page_percent: float = Field(default=5, gt=0, le=100)
    prefix_cache_hit_min_percent: float = Field(default=50, ge=0, le=100)
    # What users feel now pages `paging`; the rest is a ticket (docs/reference/alarms.md). Paging is required in
    # production environments and where `paging_required` says so (config.checks.alerting). Replaces `email_subscriptions` (one topic for all).
    paging: AlarmDestination = AlarmDestination()
    ticket: AlarmDestination = AlarmDestination()
    # Must `paging` reach someone? Always for `production: true`; set it where a non-production
    # environment must page too (staging). config.checks.alerting refuses an empty `paging` then.
    paging_required: bool = False
    # capacity-ceiling (ticket): target tracking pinned at its maximum (all of it in service) while the
    # load it tracks stays above this % of what one instance serves within the SLO (planning.capacity),
    # for this long, longer than a scale-out takes (config.checks.alerting): users would queue and only a
    # higher max_capacity helps (docs/reference/alarms.md "Capacity ceiling").
    capacity_ceiling_percent: float = Field(default=100, gt=0, le=1000)
    capacity_ceiling_minutes: int = Field(default=15, ge=5, le=120)
    # The monthly AWS Budgets limit in USD (constructs/cost_budget.py), written by the planner: `bin/plan ENV
    # --write-config` sets it to the configured scenario's cost in `make plan` times budget_margin, and `bin/plan
    # ENV` fails while it is stale. Synth reads the figure and simulates nothing (the product runs no workbench).
    monthly_budget_usd: float = Field(gt=0, le=1_000_000)  # ~20x prod: a larger figure is a typo
    budget_margin: float = Field(default=1.2, ge=1, le=10)


class TargetTracking(Strict):
    """One target-tracking policy: set `target_value`, or (high-resolution metric) `target_share_of_concurrency`."""

    # High resolution (10 s) scales out faster; it needs no extra endpoint setting.
    metric: Literal[INVOCATIONS_PER_INSTANCE, HIGH_RESOLUTION] = INVOCATIONS_PER_INSTANCE
    # Invocations per instance per minute (or concurrent requests): 100,000/min is ~80x what an
    # ml.g5.xlarge serves at the SLO (planning.capacity), so a larger target never scales out.
    target_value: float | None = Field(default=None, gt=0, le=100_000)
    # High-resolution metric only: the target is this share of planning.capacity.<type>.concurrent_sequences,
    # the lowest among the variant's instance types (the instance that saturates first), so a measured
    # capacity moves the target (config.scaling_target; config.checks.scaling refuses both or neither).
    target_share_of_concurrency: float | None = Field(default=None, gt=0, lt=1)
    scale_out_cooldown_seconds: int = Field(default=60, ge=0, le=MAX_COOLDOWN_SECONDS)
    scale_in_cooldown_seconds: int = Field(default=300, ge=0, le=MAX_COOLDOWN_SECONDS)


class StepAdjustment(Strict):
    at_or_above: float = Field(ge=0, le=100_000)  # metric value where this step starts
    add_instances: int = Field(ge=1, le=MAX_INSTANCES)


class EngineStepScaling(Strict):
    """Step scaling on a metric the serving image emits (container/serving/contract.py)."""

    metric: str
    scale_out: list[StepAdjustment] = Field(min_length=1)
    scale_out_after_minutes: int = Field(default=1, ge=1, le=60)
    # None: no step scale-in, target tracking alone scales in. A second scale-in signal that only
    # sees "no queue" removes instances the traffic still needs (`make plan` shows the sawtooth).
    scale_in_below: float | None = Field(default=None, ge=0, le=100_000)
    scale_in_after_minutes: int = Field(default=5, ge=1, le=60)  # conservative: five quiet minutes per step
    cooldown_seconds: int = Field(default=60, ge=0, le=MAX_COOLDOWN_SECONDS // 5)  # scale-in waits 5x

    @property
    def scale_in_cooldown_seconds(self) -> int:
        """Scale in five times slower than out: one instance at a time, after the last one settled."""
        return self.cooldown_seconds * 5


class ScheduledWindow(Strict):
    """Raise the capacity range at `start`, return it to the target's range at `end` (local time)."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,40}$")
    # Application Auto Scaling takes up to 1,600 characters for each (botocore PutScheduledAction).
    timezone: str = Field(max_length=1600)
    start: str = Field(max_length=1600)
    end: str = Field(max_length=1600)
    min_capacity: int = Field(ge=1, le=MAX_INSTANCES)
    max_capacity: int | None = Field(default=None, ge=1, le=MAX_INSTANCES)
    # Why max_capacity is below 1.2 x min_capacity (config/checks/scaling.py WINDOW_ROOM), if it is.
    max_capacity_reason: str | None = Field(default=None, min_length=20, max_length=400)


class VariantScaling(Strict):
    min_capacity: int = Field(ge=1, le=MAX_INSTANCES)
    max_capacity: int = Field(ge=1, le=MAX_INSTANCES)
    target_tracking: TargetTracking
    step_scaling: list[EngineStepScaling] = Field(default_factory=list)
    schedules: list[ScheduledWindow] = Field(default_factory=list)


class CapacityMeasurement(Strict):
    """Where a `planning.capacity` figure comes from: written by `bin/loadtest --write-config`."""

    where: str = Field(min_length=1, max_length=200)  # "staging/canary" or "url http://..."
    measured_at: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}T")  # ISO 8601, UTC
    image_tag: str | None = None  # the image the variant ran; None for a URL target
    slo_ttft_p95_ms: float = Field(gt=0)
    report: str | None = None  # the capacity.json it came from
    # What the platform's ConcurrentRequestsPerModel read (Average) over the client's mean in flight during
    # the held steps (workbench/loadtest/signal_reading.py); None: not read, assumed 1.0 (config.scaling_target).
    concurrency_reading_ratio: float | None = Field(default=None, gt=0, le=100)


class InstanceCapacity(Strict):
    """What one instance serves while the latency SLO holds (seeds: ml.g5.xlarge with AWQ Llama-3-8B)."""

    requests_per_minute: float = Field(gt=0)
    concurrent_sequences: int = Field(ge=1)  # running sequences at that rate
    measured: CapacityMeasurement | None = None  # None: an assumption (ASSUMED_CAPACITY or the config's)

    def provenance(self, ceiling: CeilingFigure | None = None) -> str:
        """What the figure stands on, in one line for plans, reviews and status; with the instance
        type's physical ceiling (config.domain.physics.ceiling_if_known) when the caller gives it."""
        rate = f"{self.requests_per_minute:,.0f}/min"
        share = ""
        if ceiling is not None:
            share = (
                f"{100 * self.requests_per_minute / ceiling.requests_per_minute:.0f} % of the "
                f"{ceiling.requests_per_minute:,.0f}/min physical ceiling at batch {ceiling.batch} (config/domain/physics.py)"
            )
        if self.measured is None:
            return f"assumed: {rate}, {share + ', ' if share else ''}never measured (`bin/loadtest`)"
        m = self.measured
        image = f", image {m.image_tag}" if m.image_tag else ""
        # The rate answered within the objective, never the rate offered (workbench/loadtest/record.py).
        objective = f"answered within TTFT p95 <= {m.slo_ttft_p95_ms:g} ms"
        line = f"measured: {rate} on {m.where} {m.measured_at[:10]}{image} ({objective})"
        return f"{line}, {share}" if share else line


# What one instance is assumed to serve until `bin/loadtest` measures it, where config.domain.calibration cannot
# derive it for the environment (EnvironmentConfig._derived_capacity: the batch the TTFT objective allows,
# at most 16, the most a published run held within it, and the calibrated share, 83 %, of the ceiling at
# that batch for config/domain/workload.yaml's conversations with each turn's history cached, as PREFIX_AWARE with a
# per-conversation PrefixAwareId keeps it). These are the figures derived for the 500 ms objective:
# tests/config/test_physics.py holds them to config.domain.calibration.
ASSUMED_CAPACITY = {
    "ml.g5.xlarge": InstanceCapacity(requests_per_minute=123, concurrent_sequences=16),
    "ml.g6.xlarge": InstanceCapacity(requests_per_minute=77, concurrent_sequences=16),
}


UNANNOUNCED_REASON = (
    "seeds 001 accept <1 % errors during unpredicted spikes; judged over the worst rolling 24 h, as the "
    "seeds' error-rate SLO is, because no causal policy can meet a spike that grows faster than one "
    'provisioning round (docs/how-to/plan-capacity.md "Capacity plan")'
)


class PlanBudget(Strict):
    """What `make plan` may call "met" (workbench/planner/verdict.py): every figure within its budget. A request
    fails when it is rejected or its queue wait pushes its first token past the objective."""

    # Requests failed inside the traffic's peak windows (release calendar, audiences' evenings): those
    # are announced, so the fleet is expected to be ready for them.
    failed_in_peaks: int = Field(default=0, ge=0)
    # Failed requests in the worst rolling hour, as a share of its arrivals: room for the spikes no
    # calendar announces, with the reason that allowance stands on.
    unannounced_failed_percent: float = Field(default=1.0, ge=0, le=100)
    unannounced_reason: str = Field(default=UNANNOUNCED_REASON, min_length=20, max_length=400)
    # Queue wait a request may have before it counts as failed; None: the TTFT objective
    # (alarms.ttft_p95_ms), as if serving took no time of it. A figure needs its reason beside it.
    max_queue_wait_seconds: float | None = Field(default=None, gt=0, le=60)
    max_queue_wait_reason: str | None = Field(default=None, min_length=20, max_length=400)
    # Minutes with a queue anywhere, per 7 days (pro rata for other lengths).
    shortfall_minutes_per_week: int = Field(default=30, ge=0)
    # The configured scaling costs at most this multiple of the cheapest configuration `bin/plan ENV
    # --tune` finds meeting the same budget (planning.frontier).
    cost_vs_frontier: float = Field(default=1.05, ge=1)

    @model_validator(mode="after")
    def _wait_has_reason(self) -> PlanBudget:
        if self.max_queue_wait_seconds is not None and not self.max_queue_wait_reason:
            raise ValueError("max_queue_wait_seconds needs max_queue_wait_reason: why this wait, not the objective")
        return self


class PlanFrontier(Strict):
    """The cheapest configuration `bin/plan ENV --tune` found meeting planning.budget (--write-config
    writes it): what the verdict judges the configured scaling's cost against. `inputs` is a digest of
    what the search stood on (traffic, capacity, prices, provisioning, budget, search space): the plan
    calls the frontier stale when it no longer matches."""

    monthly_cost_usd: float = Field(gt=0)  # the cheapest holding the stress set too (planning.stress)
    bare_monthly_cost_usd: float | None = Field(default=None, gt=0)  # the cheapest at the bare assumptions
    inputs: str = Field(pattern=r"^[0-9a-f]{12}$")
    tuned_at: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}")


# Provisioning with SageMaker's container caching (on for any ECR image on accelerator instances since
# June 2026): AWS ML blog "Introducing container caching in Amazon SageMaker AI for faster model
# scaling", 2026-06-16, customer 3: ml.g5.xlarge, 10.6 GB image, 6.5 GB model, P50 scale-out 346 s ->
# 216 s. 216 s rounded up to whole minutes; a median of one customer, not a p95 of ours: measure it.
CACHED_SCALE_OUT_MINUTES = 4
CACHED_SCALE_OUT_SOURCE = (
    "216 s P50 scale-out of an ml.g5.xlarge with container caching, rounded up (AWS ML blog, "
    '"Introducing container caching in Amazon SageMaker AI for faster model scaling", 2026-06-16)'
)
SEEDS_PROVISIONING_MINUTES = 8  # seeds: 5-8 min; the incident took 8. The plan also judges at this.


class PlanTraffic(Strict):
    """The traffic this environment is planned for; the report's header names it."""

    # A week in the planner's reference-week format, or a per-minute CSV; relative to the repository.
    # None: the planner's own reference week (config names no file of a higher layer).
    profile: str | None = Field(default=None, pattern=r"\.(ya?ml|csv)$")
    scale: float = Field(default=1.0, gt=0, le=100)  # multiplies every minute of the profile


class ProvisioningMeasurement(Strict):
    """Where `planning.provisioning_minutes` comes from: written by `ops scaling-history --write-config`
    from Application Auto Scaling's record of successful scale-outs (StartTime to EndTime)."""

    where: str = Field(min_length=1, max_length=200)  # "prod: primary, canary (mangaassist-llm-prod)"
    measured_at: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}T")  # ISO 8601, UTC
    days: int = Field(ge=1, le=42)  # DescribeScalingActivities keeps six weeks
    samples: int = Field(ge=1)  # successful scale-outs
    p50_minutes: float = Field(ge=0)
    p95_minutes: float = Field(ge=0)


class PlanStress(Strict):
    """The scenarios the verdict must also pass besides the bare assumptions (issue 52;
    workbench/planner/stress.py). A field left out takes the prudent default; one that asks for less
    margin than the default needs `reason`, which the plan prints."""

    # Every capacity this much lower. Default: an assumed figure's band (the spread of the published runs
    # it is calibrated on, at least 20 %), a measured one's error (10 %).
    capacity_low_percent: float | None = Field(default=None, ge=0, le=90)
    # Provisioning at a high percentile. Default: a measured p95 (scaling-history records no p90), else the
    # seeds' 8 min or twice the cited median, whichever is larger.
    provisioning_minutes: int | None = Field(default=None, ge=0, le=60)
    # Each calendar window with its variants' preferred type unavailable from this long before it starts
    # (so the pre-scale finds none either) to its end; None: no such scenarios.
    preferred_unavailable_hours_before: float | None = Field(default=2, ge=0, le=24)
    # Release windows with the prefix cache's affinity lost (every turn re-prefills its history).
    affinity_lost_in_releases: bool = True
    reason: str | None = Field(default=None, min_length=20, max_length=400)


class Planning(Strict):
    """Assumptions for `make plan` (planner/); nothing here reaches a template."""

    # Per instance type; an entry in the file (a measurement, `bin/loadtest --write-config`) replaces
    # the assumption for its type only: the other types keep ASSUMED_CAPACITY's own objects
    # (_assumed_unless_given), which config.loader replaces by the figures derived for the environment's
    # objective, routing and engine (config.domain.calibration.fill_derived_capacity).
    capacity: dict[str, InstanceCapacity] = Field(default_factory=lambda: dict(ASSUMED_CAPACITY))
    # Scale-out decision to in service. Unmeasured: the cited container-caching figure (CACHED_SCALE_OUT_*).
    provisioning_minutes: int = Field(default=CACHED_SCALE_OUT_MINUTES, ge=0, le=60)
    provisioning_measured: ProvisioningMeasurement | None = None  # None: the figure is assumed
    # A request still queued after this long fails (SageMaker real-time invocations time out at 60 s).
    request_timeout_seconds: int = Field(default=60, ge=1, le=3600)
    traffic: PlanTraffic = PlanTraffic()
    budget: PlanBudget = PlanBudget()
    stress: PlanStress = PlanStress()  # "met" means met in each of these scenarios too
    frontier: PlanFrontier | None = None  # None: never tuned; the cost check then fails

    @field_validator("capacity")
    @classmethod
    def _assumed_unless_given(cls, capacity: dict[str, InstanceCapacity]) -> dict[str, InstanceCapacity]:
        return {**ASSUMED_CAPACITY, **capacity}


    def provisioning_provenance(self) -> str:
        """What provisioning_minutes stands on, in one line for plans, reviews and status."""
        minutes, m = self.provisioning_minutes, self.provisioning_measured
        if m is None:
            if minutes == CACHED_SCALE_OUT_MINUTES:
                return f"assumed: {minutes} min, {CACHED_SCALE_OUT_SOURCE}; never measured (`bin/ops scaling-history`)"
            seeds = ", the seeds' guess" if minutes == SEEDS_PROVISIONING_MINUTES else ""
            return f"assumed: {minutes} min{seeds}; never measured (`bin/ops scaling-history`)"
        by_hand = f"; set to {minutes} min by hand" if minutes != math.ceil(m.p95_minutes) else ""
        return (
            f"measured: p95 {m.p95_minutes:.1f} min (p50 {m.p50_minutes:.1f}) over {m.samples} scale-outs "
            f"on {m.where} {m.measured_at[:10]}{by_hand}"
        )


class PrefixAwareRouting(Strict):
    """ProductionVariant.RoutingConfig.PrefixAwareRoutingConfig, read only with routing_strategy PREFIX_AWARE.
    Ranges from botocore's sagemaker model; a field left out is derived (config/routing.py)."""

    # Bytes from the start of the request body that decide the instance: the shared system prompt plus
    # enough of the conversation's first turn to tell conversations apart.
    prefix_length: int | None = Field(default=None, ge=1024, le=65536)
    # In-flight requests on the chosen instance at which the next one goes elsewhere; default
    # planning.capacity's concurrent_sequences of the variant's weakest instance type.
    concurrency_threshold: int | None = Field(default=None, ge=1, le=1024)


class Ci(Strict):
    """The GitHub repository whose deploy workflow may deploy this environment: the optional stack
    `MangaAssist-<env>-CiAccess` (stacks/ci_access_stack.py, docs/how-to/deploy.md "CI pipelines") gives it a
    role that trusts GitHub's OIDC tokens of this repository, GitHub environment and branch only."""

    # owner/name, or owner@ID/name@ID where GitHub issues immutable subject claims (repositories created
    # from 15 July 2026 or opted in: GitHub Docs, "OpenID Connect reference", "Immutable subject claims").
    github_repository: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}(@\d+)?/[A-Za-z0-9._-]{1,100}(@\d+)?$", max_length=200
    )
    # The GitHub environment of the deploy job (`environment:` in .github/workflows/deploy.yml); no ':',
    # which GitHub writes as %3A in the subject claim.
    github_environment: str = Field(pattern=r"^[A-Za-z0-9._-]{1,255}$")
    branch: str = Field(default="main", pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")
    # True: the subject claim carries the branch as well (`...:environment:ENV:ref:refs/heads/BRANCH`), which
    # needs the repository's OIDC subject template set to repo, context, ref (docs/how-to/deploy.md "CI pipelines").
    # False: GitHub's default subject (`repo:OWNER/NAME:environment:ENV`); the branch is then held only by
    # the GitHub environment's deployment-branch rule.
    pin_branch: bool = True
    # "create": the stack creates the account's GitHub OIDC provider (IAM allows one per URL and account);
    # else the ARN of the one that exists.
    oidc_provider: str = Field(
        default="create",
        pattern=r"^(create|arn:aws[a-z-]*:iam::\d{12}:oidc-provider/token\.actions\.githubusercontent\.com)$",
    )


class UnknownVariant(LookupError):
    def __init__(self, env_name: str, name: str, known: list[str]):
        self.message = f"{environment_label(env_name)} has no variant '{name}' (it has: {', '.join(known)})"
        super().__init__(self.message)


class EnvironmentConfig(Strict):
    name: str
    # A production environment: deploys bake at least 10 minutes per step (config.checks.deployment)
    # and `bin/loadtest` drives it past its objective only with --allow-production.
    production: bool = False
    account: str | None = Field(default=None, pattern=r"^\d{12}$")
    region: str | None = Field(default=None, pattern=r"^[a-z]{2}(-[a-z]+)+-\d$")
    endpoint_name: str = Field(pattern=NAME_PATTERN)
    tags: Tags
    # Storage-volume KMS key for the endpoint config; refused on local-NVMe instance types.
    endpoint_kms_key_arn: str | None = Field(
        default=None, pattern=r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(key|alias)/[A-Za-z0-9/_-]{1,256}$"
    )
    # The customer-managed KMS key the model-data buckets encrypt with by default (SSE-KMS), if any:
    # SageMaker downloads model data with the execution role, which then needs kms:Decrypt, granted only
    # through S3 (kms:ViaService). None: SSE-S3 or the AWS managed aws/s3 key. `bin/ops preflight` compares.
    model_data_kms_key_arn: str | None = Field(
        default=None, pattern=r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]{1,256}$"
    )
    variants: list[Variant] = Field(min_length=1, max_length=10)
    engine: Engine
    container: Container
    deployment: Deployment
    data_capture: DataCapture
    image_build: ImageBuild = ImageBuild()
    endpoint_metrics: EndpointMetrics = EndpointMetrics()
    alarms: Alarms
    autoscaling: dict[str, VariantScaling]  # keyed by variant name
    planning: Planning = Planning()
    operations: Operations = Operations()
    # When users come for sure (audiences' evenings, release days): the windows `make plan` judges shortfall
    # in, whatever traffic it replays and whatever the schedules say (config/domain/release_calendar.py).
    release_calendar: ReleaseCalendar
    # ProductionVariant.RoutingConfig.RoutingStrategy for every variant. Long streamed answers make
    # RANDOM routing uneven; docs/explanation/capacity-model.md "Routing" says when each strategy pays. KV_AWARE is
    # refused (config.checks.routing: CloudFormation does not take it, and it needs a SageMaker container).
    routing_strategy: Literal["LEAST_OUTSTANDING_REQUESTS", "RANDOM", "PREFIX_AWARE", "KV_AWARE"] = (
        "LEAST_OUTSTANDING_REQUESTS"
    )
    prefix_aware_routing: PrefixAwareRouting | None = None  # with PREFIX_AWARE only; None: all derived
    # This account's SageMaker quota "<instance type> for endpoint usage" (Service Quotas), per
    # instance type: blue/green provisions a second full fleet, so it must cover twice the largest.
    endpoint_instance_quotas: dict[str, Annotated[int, Field(ge=0, le=MAX_QUOTA)]] = Field(default_factory=dict)
    ci: Ci | None = None  # None: no CI access stack (docs/how-to/deploy.md "CI pipelines")

    @property
    def admission_deadline_ms(self) -> int:
        """container.admission_deadline_ms, or its default derived from the TTFT objective."""
        return self.container.admission_deadline_ms or ADMISSION_DEADLINE_TTFT_MULTIPLE * self.alarms.ttft_p95_ms

    def variant(self, name: str) -> Variant:
        """The variant called `name`; UnknownVariant (a LookupError) names the ones there are."""
        found = by_name(self.variants, name)
        if found is None:
            raise UnknownVariant(self.name, name, [v.name for v in self.variants])
        return found
