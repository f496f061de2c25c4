"""A rollback the primary can carry: the instances the live traffic needs, raised in the same run.

The traffic is the busiest minute of the last five (AWS/SageMaker Invocations, Sum per minute, every variant
added up): a queue forms in the busiest minute, and the one still filling would read as quiet. Each instance
counts at its own type's `planning.capacity` (ops/operations/pool_capacity.py); rounded up, at most MaxCapacity.
DesiredInstanceCount is raised first, then the scalable target's MinCapacity (RegisterScalableTarget with the
target's tag; "Any parameters that you don't specify are not changed", botocore application-autoscaling
2016-02-06), so target tracking cannot scale it in before the traffic lands. Desired first: a minimum above
capacity makes Application Auto Scaling update the endpoint itself, racing our own call.

The raised minimum is recorded (SSM and the state directory) for `restore-scaling`, which lowers it only while
it is still the one set. A shift a guard stops sizes the primary the same way. Without a valid config there is
no capacity figure: the rollback happens and says the floor was not raised.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from config import ConfigError, EnvironmentConfig, load_catalog
from config.domain.prices import prices_in
from config.schema import InstanceCapacity
from ops.operations import floor_store
from ops.operations.aws import AwsClients
from ops.operations.endpoint import LiveVariant, read_endpoint
from ops.operations.errors import ExitCode, OpsError, explain
from ops.operations.metric_window import invocations_per_minute, window_end
from ops.operations.output import Console, percent, seconds
from ops.operations.pool_capacity import PoolCapacity, UnknownCapacity
from ops.operations.scaling import register_target, scalable_target
from ops.operations.target import Target

TRAFFIC_WINDOW_SECONDS = 300  # "the last few minutes": five one-minute sums
RECORD_KIND = "rollback-floor"
INVALID_CONFIG = (
    "the config is invalid (the warning above names its first problem), so planning.capacity, what one "
    "instance serves, is unknown"
)


class Unsized(OpsError):
    """Nothing to size the primary on (an invalid config, no planning.capacity figure for its type)."""

    def __init__(self, message: str):
        super().__init__(message, ExitCode.REFUSED)


@dataclass(frozen=True)
class Sizing:
    """What the floor is computed from: the config's `planning` and the catalog's on-demand prices."""

    capacity: Mapping[str, InstanceCapacity]  # per instance type
    provisioning_minutes: int
    provisioning_provenance: str  # "assumed: 8 min, …" or "measured: p95 …"
    prices_per_hour: Mapping[str, float]  # USD on demand, per instance type, where the environment deploys
    prices_where: str  # "ap-northeast-1 prices" (config.domain.prices: the region; ASSUMED if it borrows another's)

    @classmethod
    def of(cls, cfg: EnvironmentConfig) -> Sizing:
        """Never raises: it runs before a rollback (a catalog that fails to load only costs the prices)."""
        planning = cfg.planning
        try:
            regional = prices_in(cfg.region, load_catalog())
            prices, where = {name: p.usd_per_hour for name, p in regional.prices.items()}, regional.short()
        except ConfigError:
            prices, where = {}, "no prices: config/catalog.yaml failed to load"
        provenance = planning.provisioning_provenance()
        return cls(dict(planning.capacity), planning.provisioning_minutes, provenance, prices, where)


@dataclass
class Floor:
    """One command's floor: its sizing (None and `missing` why, with an invalid config) and its record."""

    state_dir: Path
    sizing: Sizing | None = None
    missing: str = ""
    record: Path | None = None  # the local copy (a cache)
    min_before: int | None = None  # the minimum before this run first raised it
    published: str | None = None  # the SSM parameter any operator finds it in (ops/operations/floor_store.py)

    @classmethod
    def of(cls, cfg: EnvironmentConfig | None, state_dir: Path) -> Floor:
        return cls(state_dir, missing=INVALID_CONFIG) if cfg is None else cls(state_dir, Sizing.of(cfg))


@dataclass(frozen=True)
class Primary:
    """The primary as it is now: the live variant and its scalable target's range (None: not registered)."""

    live: LiveVariant
    variants: tuple[str, ...]  # every variant of the endpoint: its traffic is theirs added up
    min_capacity: int | None
    max_capacity: int | None

    @property
    def in_service(self) -> int:
        return self.live.current_instance_count or 0


@dataclass(frozen=True)
class Need:
    traffic: float  # invocations per minute the primary is to carry
    pools: PoolCapacity  # what its instances serve within the SLO, each at its own type's figure
    wanted: int  # instances that carry it
    count: int  # wanted, at most the scalable target's maximum

    @property
    def per_instance(self) -> float:
        """What one more instance serves (the figure new ones are sized at)."""
        return self.pools.per_instance[self.pools.new_type]


def read_primary(clients: AwsClients, target: Target) -> Primary:
    endpoint = read_endpoint(clients.sagemaker, target.endpoint, target.env_name)
    found = scalable_target(clients.autoscaling, target.endpoint, target.primary)
    low, high = (found["MinCapacity"], found["MaxCapacity"]) if found else (None, None)
    return Primary(endpoint.variant(target.primary), tuple(v.name for v in endpoint.variants), low, high)


def busiest_minute(cloudwatch: Any, endpoint: str, variants: tuple[str, ...]) -> float:
    """Invocations in the busiest minute of the last TRAFFIC_WINDOW_SECONDS, all variants; 0 without data."""
    end = window_end()
    minutes: dict[datetime, float] = {}
    start = end - timedelta(seconds=TRAFFIC_WINDOW_SECONDS)
    for stamp, value in invocations_per_minute(cloudwatch, endpoint, variants, start, end):
        minutes[stamp] = minutes.get(stamp, 0.0) + value
    return max(minutes.values(), default=0.0)


def _rate(value: float) -> str:
    return f"{value:,.0f}/min"


def _window() -> str:
    return seconds(TRAFFIC_WINDOW_SECONDS)


def size(clients: AwsClients, target: Target, sizing: Sizing, share: float) -> tuple[Primary, Need]:
    """The primary now and what `share` % of the live traffic needs; Unsized without a capacity figure."""
    primary = read_primary(clients, target)
    try:
        pools = PoolCapacity.of(primary.live, sizing.capacity)
    except UnknownCapacity as error:
        raise Unsized(f"{error}, so what {target.primary} needs is unknown") from None
    traffic = busiest_minute(clients.cloudwatch, target.endpoint, primary.variants) * share / 100
    wanted = pools.instances_for(traffic)
    count = wanted if primary.max_capacity is None else min(wanted, primary.max_capacity)
    return primary, Need(traffic, pools, wanted, count)


def _each(sizing: Sizing, need: Need, count: int) -> str:
    """'5 × ml.g5.xlarge at 274/min each (planning.capacity …)', or with pools of different figures the split."""
    pools = need.pools
    if not pools.mixed:
        instance_type = pools.new_type
        return (
            f"{count} × {instance_type} at {_rate(need.per_instance)} each "
            f"(planning.capacity {sizing.capacity[instance_type].provenance()})"
        )
    used = [t for t in pools.per_instance if t in pools.in_service or t == pools.new_type]
    return f"{count} instances: {pools.describe(count)} (planning.capacity of each type: {', '.join(used)})"


def _describe_need(
    target: Target, sizing: Sizing, primary: Primary, need: Need, share: float, console: Console
) -> None:
    _pools_note(target, primary, need, console)
    of_what = "the endpoint's" if share == 100 else f"{percent(share)} of the endpoint's"
    console.line(
        f"{target.primary} must carry {_rate(need.traffic)} ({of_what} busiest minute in the last {_window()}): "
        f"{_each(sizing, need, need.wanted)}"
    )
    if need.wanted > need.count:
        console.warn(
            f"{need.wanted} instances needed, but {target.primary}'s scalable target allows at most "
            f"{primary.max_capacity}: raising to {need.count}, which serve {_rate(need.pools.serves_with(need.count))}; "
            f"beyond that users queue until autoscaling.{target.primary}.max_capacity is raised and deployed"
        )
    serves = need.pools.serves()
    if serves >= need.traffic:
        console.ok(f"its {primary.in_service} instances in service serve {_rate(serves)}: no queue expected")
        return
    coming = max(need.count, primary.live.desired_instance_count or 0) - primary.in_service
    if coming <= 0:  # at its maximum already: the warning above says what to do
        console.warn(f"its {primary.in_service} instances in service serve {_rate(serves)}, and no more are coming")
        return
    verb = "is" if coming == 1 else "are"
    console.warn(
        f"its {primary.in_service} instances in service serve {_rate(serves)}: users may queue for about "
        f"{sizing.provisioning_minutes} min until {coming} more {verb} in service (planning.provisioning_minutes "
        f"{sizing.provisioning_provenance})"
    )


def _pools_note(target: Target, primary: Primary, need: Need, console: Console) -> None:
    if primary.live.has_pools:
        console.warn(
            f"{target.primary} runs instance pools ({', '.join(primary.live.instance_types)}): each instance in "
            f"service counts at its own type's planning.capacity; new ones at {need.pools.new_type}'s, the weakest "
            "of the pools SageMaker is providing from now"
        )


def _raise(clients: AwsClients, target: Target, floor: Floor, primary: Primary, count: int, console: Console) -> bool:
    """DesiredInstanceCount, then MinCapacity, each only if below `count`; True if desired was raised. The
    minimum is recorded first, so a process killed after the call leaves the way back."""
    desired = primary.live.desired_instance_count or 0
    if desired < count:
        clients.sagemaker.update_endpoint_weights_and_capacities(
            EndpointName=target.endpoint,
            DesiredWeightsAndCapacities=[{"VariantName": target.primary, "DesiredInstanceCount": count}],
        )
        console.ok(f"{target.primary} desired instances {desired} → {count} (UpdateEndpointWeightsAndCapacities)")
    if primary.min_capacity is None:
        if desired < count:
            console.warn(
                f"{target.primary} has no scalable target: nothing scales it in, and nothing gives the extra "
                f"instances back ({desired} → {count}): lower its instance count yourself once the canary is fixed"
            )
        return desired < count
    if primary.min_capacity >= count:
        console.ok(f"{target.primary}'s scalable target minimum is {primary.min_capacity}: target tracking keeps it")
        return desired < count
    _remember(clients, floor, target, (primary.min_capacity, count), console)
    register_target(clients.autoscaling, target.endpoint, target.primary, MinCapacity=count)
    console.ok(
        f"{target.primary}'s scalable target minimum {primary.min_capacity} → {count}: target tracking cannot "
        "scale it in before the traffic lands"
    )
    return desired < count


def _remember(clients: AwsClients, floor: Floor, target: Target, minimums: tuple[int, int], console: Console) -> None:
    """The record (first minimum found, last set) in SSM and the state directory; refused by SSM, it stays local."""
    min_before, raised_to = minimums
    if floor.record is None:
        stamp = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
        floor.record = floor.state_dir / f"{RECORD_KIND}-{target.endpoint}-{stamp}.json"
        floor.min_before = min_before
    assert floor.min_before is not None
    record = FloorRecord(target.endpoint, target.primary, floor.min_before, raised_to, datetime.now(UTC).isoformat())
    record.save(floor.record)
    try:
        floor.published = floor_store.publish(clients.ssm, target.env_name, target.primary, record.document())
    except (ClientError, BotoCoreError) as error:
        floor.published = None
        console.warn(f"the floor record is only on this machine ({floor.record}): SSM refused it ({explain(error)})")


def restore_command(target: Target, floor: Floor) -> str:
    """`bin/ops restore-scaling ENV`, which reads the record from SSM; with the local file if SSM has none."""
    region = ["--region", target.region] if target.region else []
    record = [] if floor.published or floor.record is None else [str(floor.record)]
    return shlex.join(["bin/ops", "restore-scaling", target.env_name, *record, *region])


def carry(clients: AwsClients, target: Target, floor: Floor, share: float, console: Console) -> str:
    """The primary sized for `share` % of the live traffic and raised; a one-line outcome."""
    if floor.sizing is None:
        raise Unsized(floor.missing)
    primary, need = size(clients, target, floor.sizing, share)
    if need.traffic <= 0:
        console.warn(f"CloudWatch has no invocations of {target.endpoint} in the last {_window()}: nothing to size on")
        return f"{target.primary} not resized: no invocations in the last {_window()}"
    _describe_need(target, floor.sizing, primary, need, share, console)
    raised = _raise(clients, target, floor, primary, need.count, console)
    sized = f"{target.primary} sized for {_rate(need.traffic)}: {need.count} instances"
    if floor.record is not None:
        restore = restore_command(target, floor)
        console.line(f"  put the floor back once the traffic has settled: {restore}")
        return f"{sized}, its minimum raised; put it back with `{restore}`"
    return f"{sized}{', desired count raised' if raised else ', already there'}"


def carry_rollback(clients: AwsClients, target: Target, floor: Floor, console: Console) -> None:
    """After `bin/ops rollback` put the weights in effect: the weights stand whatever happens here."""
    try:
        carry(clients, target, floor, 100, console)
    except (OpsError, ClientError, BotoCoreError) as error:
        problem = explain(error)
        message = f"{target.primary}'s floor was NOT raised: {problem}"
        if isinstance(error, Unsized):  # no figure to size on: the rollback itself did its job
            console.warn(f"{message}; check its instances with `bin/ops status {target.env_name}`")
            return
        raise OpsError(
            f"all traffic is on {target.primary} ({target.canary} weight 0 in effect), but {message}",
            problem.exit_code,
        ) from None


def carry_return(clients: AwsClients, target: Target, floor: Floor | None, weight: float, console: Console) -> str:
    """After a stopped shift put the canary back at `weight`: "; <outcome>" for the error line, never raising."""
    if floor is None or weight >= 100:
        return ""
    try:
        return f"; {carry(clients, target, floor, 100 - weight, console)}"
    except (OpsError, ClientError, BotoCoreError) as error:
        return f"; {target.primary}'s floor was NOT raised ({explain(error)})"


def keep_floor(clients: AwsClients, target: Target, floor: Floor | None, console: Console) -> int:
    """`--keep-rollback-floor` before a step: the primary at what a full rollback needs; the instances to wait
    for (0 when desired was not raised)."""
    if floor is None or floor.sizing is None:
        raise Unsized(f"--keep-rollback-floor: {floor.missing if floor else 'no sizing'}")
    primary, need = size(clients, target, floor.sizing, 100)
    if need.traffic <= 0:
        console.warn(f"no invocations of {target.endpoint} in the last {_window()}: no rollback floor to keep")
        return 0
    _pools_note(target, primary, need, console)
    each = _served_each(need, need.count)
    console.line(
        f"rollback floor: {target.primary} at {need.count} instances, what {_rate(need.traffic)} needs "
        f"({each}, planning.capacity)"
    )
    extra = max(0, need.count - (primary.live.desired_instance_count or 0))
    if extra:
        console.warn(f"while it stands, keeping it costs {_cost(floor.sizing, need.pools.new_type, extra)}")
    _raise(clients, target, floor, primary, need.count, console)
    raised_min = primary.min_capacity is not None and primary.min_capacity < need.count
    if floor.record is not None and raised_min:
        console.line(f"  the floor stays after the shift; put it back with {restore_command(target, floor)}")
    return need.count if extra else 0


def warn_if_short(clients: AwsClients, target: Target, floor: Floor | None, console: Console) -> None:
    """At the start of a hold: could the primary take the canary's share back within the SLO?"""
    if floor is None or floor.sizing is None:
        return
    try:
        primary, need = size(clients, target, floor.sizing, 100)
    except (OpsError, ClientError, BotoCoreError) as error:
        console.warn(f"not checked: whether {target.primary} could carry a rollback ({explain(error)})")
        return
    serves = need.pools.serves()
    if serves >= need.traffic:
        return
    extra = need.count - primary.in_service
    offer = (
        f"--keep-rollback-floor keeps {target.primary} at {need.count} during the holds "
        f"({_cost(floor.sizing, need.pools.new_type, extra)})"
        if extra > 0
        else f"its max_capacity {primary.max_capacity} allows no more: raise autoscaling.{target.primary}.max_capacity"
    )
    console.warn(
        f"a rollback now would put {_rate(need.traffic)} on {target.primary}, whose {primary.in_service} instances "
        f"in service serve {_rate(serves)} within the SLO ({_served_each(need, need.pools.count)}, planning.capacity): "
        f"users would queue for about {floor.sizing.provisioning_minutes} min while more start; {offer}"
    )


def _served_each(need: Need, count: int) -> str:
    """'274/min each', or with pools of different figures the split of `count` instances."""
    return need.pools.describe(count) if need.pools.mixed else f"{_rate(need.per_instance)} each"


def _cost(sizing: Sizing, instance_type: str, extra: int) -> str:
    price = sizing.prices_per_hour.get(instance_type)
    if price is None:
        return f"+{extra} × {instance_type}, no price for it in config/catalog.yaml ({sizing.prices_where})"
    return f"+{extra} × {instance_type} at ${price:.3f}/h = ${extra * price:,.2f}/hour; {sizing.prices_where}"


@dataclass(frozen=True)
class FloorRecord:
    """What `restore-scaling` needs to put a raised minimum back (a sibling of deploy's snapshot)."""

    endpoint: str
    variant: str
    min_before: int
    raised_to: int
    raised_at: str  # ISO 8601, UTC

    def document(self) -> str:
        return json.dumps({"kind": RECORD_KIND, **self.__dict__}, indent=2) + "\n"

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.document())

    @staticmethod
    def is_one(path: Path) -> bool:
        """True for a floor record; anything else (a snapshot, an unreadable file) is the snapshot's to read."""
        try:
            raw = json.loads(path.read_text())
        except (OSError, ValueError):
            return False
        return isinstance(raw, dict) and raw.get("kind") == RECORD_KIND

    @classmethod
    def load(cls, path: Path) -> FloorRecord:
        try:
            return cls.parse(path.read_text(), str(path))
        except OSError as error:
            raise OpsError(f"cannot read floor record {path}: {error}", ExitCode.USAGE) from None

    @classmethod
    def parse(cls, document: str, where: str) -> FloorRecord:
        try:
            raw = json.loads(document)
            fields = ("endpoint", "variant", "min_before", "raised_to", "raised_at")
            return cls(**{name: raw[name] for name in fields})
        except (ValueError, KeyError, TypeError) as error:
            raise OpsError(f"cannot read floor record {where}: {error}", ExitCode.USAGE) from None


def restore_floor(autoscaling: Any, record: FloorRecord, console: Console) -> None:
    """The minimum back to what it was, only while it is still the one the record set."""
    found = scalable_target(autoscaling, record.endpoint, record.variant)
    if found is None:
        console.warn(f"{record.variant} has no scalable target now (a deploy removed it?): nothing to put back")
        return
    now = found["MinCapacity"]
    if now != record.raised_to:
        console.warn(
            f"{record.variant}'s minimum is {now}, not the {record.raised_to} set at {record.raised_at}: changed "
            "since (a scheduled action, a deploy or by hand), so it is left as it is"
        )
        return
    register_target(autoscaling, record.endpoint, record.variant, MinCapacity=record.min_before)
    console.ok(
        f"{record.variant}'s scalable target minimum {record.raised_to} → {record.min_before}; target tracking "
        "scales it in as the traffic allows"
    )
