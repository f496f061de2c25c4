"""Getting a change through a busy endpoint: wait for InService, retry on "in-progress".

UpdateEndpointWeightsAndCapacities "sets the endpoint status to Updating" (SageMaker API reference; botocore
sagemaker 2017-07-24), and while the endpoint is Updating (a scale-out, another weight change), SystemUpdating or
RollingBack it refuses with `ValidationException: Cannot update in-progress endpoint` (told apart by its
message). The Developer Guide's procedure is the same loop: "Call DescribeEndpoint repeatedly until ... InService"
(endpoint-scaling-update). So every write goes through `when_in_service`, waiting with a doubling pause (5 s to
60 s) for at most `operations.busy_endpoint_wait_seconds`, saying what it waits for and, on giving up, what
state the endpoint was left in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from config.schema import Operations
from ops.operations.errors import ExitCode, OpsError, error_code, error_message
from ops.operations.output import Console, seconds
from ops.operations.waiting import Timing

T = TypeVar("T")

# DescribeEndpoint statuses that end by themselves in InService (EndpointStatus in botocore's model).
PASSING = ("Updating", "SystemUpdating", "RollingBack", "Creating")
IN_PROGRESS = "in-progress"  # "Cannot update in-progress endpoint"


@dataclass(frozen=True)
class Patience:
    """How long a command waits out a busy endpoint, in seconds of waiting (not counting the calls)."""

    budget_seconds: float = Operations().busy_endpoint_wait_seconds
    first_pause: float = 5
    longest_pause: float = 60

    @classmethod
    def of(cls, operations: Operations | None) -> Patience:
        """From the config's `operations`; the default when the config is invalid (an emergency command)."""
        return cls() if operations is None else cls(float(operations.busy_endpoint_wait_seconds))


def is_in_progress(error: ClientError) -> bool:
    return error_code(error) == "ValidationException" and IN_PROGRESS in error_message(error)


def when_in_service(
    sagemaker: Any,
    endpoint: str,
    action: tuple[str, Callable[[], T]],
    console: Console,
    timing: Timing,
    patience: Patience,
) -> T:
    """`action` (what, call) once the endpoint is InService, retried while SageMaker says in-progress;
    OpsError in a state that does not pass, or when the budget runs out."""
    what, call = action
    waited, pause = 0.0, patience.first_pause
    while True:
        described = sagemaker.describe_endpoint(EndpointName=endpoint)
        status = described["EndpointStatus"]
        if status == "InService":
            try:
                return call()
            except ClientError as error:
                if not is_in_progress(error):
                    raise
                status = "InService but refusing updates (Cannot update in-progress endpoint)"
        elif status not in PASSING:
            raise OpsError(
                f"endpoint {endpoint} is {status}, which does not pass by itself: cannot {what}; "
                f"{_state(described)}; see its FailureReason in `aws sagemaker describe-endpoint`",
                ExitCode.REFUSED,
            )
        if waited + pause > patience.budget_seconds:
            raise OpsError(
                f"gave up after waiting {seconds(waited)} (operations.busy_endpoint_wait_seconds "
                f"{seconds(patience.budget_seconds)}) for endpoint {endpoint} to take a change: it is {status}; "
                f"NOT done: {what}; left as it was: {_state(described)}. Run the same command again",
                ExitCode.OPERATION_FAILED,
            )
        console.progress(
            f"endpoint {endpoint} is {status}: waiting {seconds(pause)} to {what} "
            f"({seconds(waited)} of at most {seconds(patience.budget_seconds)} waited)"
        )
        timing.sleep(pause)
        waited += pause
        pause = min(pause * 2, patience.longest_pause)


def _state(described: dict[str, Any]) -> str:
    variants = ", ".join(
        f"{v['VariantName']} weight {v.get('CurrentWeight', 0):g} (desired {v.get('DesiredWeight', 0):g}), "
        f"{v.get('CurrentInstanceCount', 0)} instances (desired {v.get('DesiredInstanceCount', 0)})"
        for v in described.get("ProductionVariants", [])
    )
    return f"{variants or 'no variants reported'}"


def update_weights_and_capacities(
    sagemaker: Any,
    endpoint: str,
    desired: list[dict[str, Any]],
    console: Console,
    timing: Timing,
    patience: Patience,
    what: str,
) -> None:

    def send() -> None:
        sagemaker.update_endpoint_weights_and_capacities(EndpointName=endpoint, DesiredWeightsAndCapacities=desired)

    when_in_service(sagemaker, endpoint, (what, send), console, timing, patience)


def wait_in_service(
    sagemaker: Any, endpoint: str, what: str, console: Console, timing: Timing, patience: Patience
) -> None:
    """Only the wait: before a change that goes through another service (Application Auto Scaling)."""
    when_in_service(sagemaker, endpoint, (what, lambda: None), console, timing, patience)
