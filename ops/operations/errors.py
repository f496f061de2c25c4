"""Exit codes and the one-line explanations the CLI prints instead of tracebacks."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from enum import IntEnum
from typing import Any, Protocol

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
    ProfileNotFound,
    TokenRetrievalError,
    UnauthorizedSSOTokenError,
    WaiterError,
)

from config import ConfigError, UnknownEnvironment
from ops.operations.output import one_line
from ops.operations.permissions import needed_policies_hint


class ExitCode(IntEnum):
    OK = 0
    AWS_ERROR = 1  # an AWS error not covered below; the line names its code
    USAGE = 2  # bad option, unknown environment or variant, invalid config, no region (click uses 2 too)
    CHECK_FAILED = 3  # verify, smoke or an artifact validation found a problem
    REFUSED = 4  # a guard refused (alarm, 5XX or TTFT margin, no evidence or nothing to compare); weights rolled back
    CREDENTIALS = 5  # no, expired or wrong-account credentials, or access denied
    NOT_FOUND = 6  # endpoint, stack or S3 prefix does not exist
    THROTTLED = 7  # still throttled after the retries
    OPERATION_FAILED = 8  # a wait, deploy or import job failed; scaling targets were put back
    SCALING_NOT_RESTORED = 9  # scaling targets could not be put back: act now (see the message)
    INTERRUPTED = 130  # Ctrl-C; SIGTERM 143, SIGHUP 129: 128 + the signal's number (ops/operations/interrupts.py)


class OpsError(Exception):
    """A failure the operator can act on: `str()` is the one line printed, `exit_code` the status."""

    def __init__(self, message: str, exit_code: ExitCode | int = ExitCode.AWS_ERROR):
        super().__init__(message)
        self.exit_code = exit_code


THROTTLING_CODES = {
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "RequestThrottled",
    "SlowDown",
}
ACCESS_DENIED = "access denied for"  # how an access denial's line starts, wherever it is wrapped (ops deploy)
ACCESS_DENIED_CODES = {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnrecognizedClientException"}
EXPIRED_CODES = {"ExpiredToken", "ExpiredTokenException", "RequestExpired", "InvalidClientTokenId"}
# The request was signed, but not with a key AWS knows or not with the secret that belongs to it. S3
# says "InvalidAccessKeyId ... does not exist in our records": a credentials problem, not a missing object.
BAD_KEY_CODES = {"SignatureDoesNotMatch", "InvalidAccessKeyId", "InvalidSignatureException", "IncompleteSignature"}
CALLER_PROBLEMS = THROTTLING_CODES | ACCESS_DENIED_CODES | EXPIRED_CODES | BAD_KEY_CODES
NOT_FOUND_CODES = {"ResourceNotFoundException", "NoSuchBucket", "NoSuchKey", "ObjectNotFoundException"}


def explain(error: OpsError | ConfigError | ClientError | BotoCoreError) -> OpsError:
    """An actionable OpsError for an exception of boto3, botocore or the config loader (others are bugs)."""
    if isinstance(error, OpsError):
        return error
    if isinstance(error, ConfigError):
        return _explain_config(error)
    if isinstance(error, NoCredentialsError | PartialCredentialsError):
        return OpsError(
            "no AWS credentials found: set AWS_PROFILE (then `aws sso login`) "
            "or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; to try the CLI without an AWS account, see "
            'docs/how-to/sandbox.md, "Try it without AWS"',
            ExitCode.CREDENTIALS,
        )
    if isinstance(error, ProfileNotFound):
        return OpsError(
            f"AWS profile '{error.kwargs.get('profile')}' is not in your AWS config: fix AWS_PROFILE "
            "(`aws configure list-profiles` lists them)",
            ExitCode.CREDENTIALS,
        )
    if isinstance(error, TokenRetrievalError | UnauthorizedSSOTokenError):
        return OpsError(f"AWS SSO session expired or invalid: run `aws sso login` ({error})", ExitCode.CREDENTIALS)
    if isinstance(error, EndpointConnectionError):
        return OpsError(f"cannot reach AWS ({error}): check the network and the region", ExitCode.AWS_ERROR)
    if isinstance(error, WaiterError):
        return _explain_waiter(error)
    if isinstance(error, ClientError):
        return _explain_client_error(error)
    return OpsError(f"AWS SDK error: {one_line(str(error))}", ExitCode.AWS_ERROR)


class Invocation(Protocol):
    info_name: str | None
    params: Mapping[str, Any]


def explain_for_command(
    error: OpsError | ConfigError | ClientError | BotoCoreError, invocation: Invocation | None
) -> OpsError:
    """`explain`; an access denial also names the policies the command needs (ops/operations/permissions.py)."""
    problem = explain(error)
    if invocation is None or not invocation.info_name or ACCESS_DENIED not in str(problem):
        return problem
    hint = needed_policies_hint(invocation.info_name, invocation.params)
    return OpsError(f"{problem}; {hint}", problem.exit_code) if hint else problem


def error_code(error: ClientError) -> str:
    return error.response.get("Error", {}).get("Code", "")


def error_message(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Message", ""))


def says_missing(error: ClientError, words: str) -> bool:
    """Whether AWS's message contains `words`: each service says "no such thing" its own way."""
    return words in error_message(error)


@contextmanager
def missing_is_not_found(words: str, problem: str) -> Iterator[None]:
    """A ClientError inside whose message contains `words` becomes `problem` (NOT_FOUND); others pass."""
    try:
        yield
    except ClientError as error:
        if says_missing(error, words):
            raise OpsError(problem, ExitCode.NOT_FOUND) from None
        raise


# What the CLI turns into one line and an exit code.
EXPLAINED = (OpsError, ConfigError, ClientError, BotoCoreError)


def _explain_config(error: ConfigError) -> OpsError:
    if isinstance(error, UnknownEnvironment):
        return OpsError(error.message, ExitCode.USAGE)
    return OpsError(f"invalid configuration, fix it first: {error}", ExitCode.USAGE)


def _explain_client_error(error: ClientError) -> OpsError:
    code = error_code(error) or "Unknown"
    message = one_line(error_message(error))
    operation = error.operation_name
    if code in THROTTLING_CODES:
        return OpsError(
            f"AWS kept throttling {operation} after retries ({code}): wait a minute and rerun; "
            "if it persists, look for other automation calling the same API",
            ExitCode.THROTTLED,
        )
    if code in ACCESS_DENIED_CODES:
        return OpsError(
            f"{ACCESS_DENIED} {operation}: the current role lacks that permission ({message})", ExitCode.CREDENTIALS
        )
    if code in BAD_KEY_CODES:
        return OpsError(
            f"AWS rejected the credentials' signature for {operation} ({code}): the access key or its secret is "
            "wrong; check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE",
            ExitCode.CREDENTIALS,
        )
    if code in EXPIRED_CODES:
        return OpsError(
            f"AWS credentials are expired or invalid ({code}): refresh them and rerun", ExitCode.CREDENTIALS
        )
    if code in NOT_FOUND_CODES or "does not exist" in message or "Could not find" in message:
        return OpsError(f"{operation}: {message or code}", ExitCode.NOT_FOUND)
    return OpsError(f"{operation} failed ({code}): {message}", ExitCode.AWS_ERROR)


def _explain_waiter(error: WaiterError) -> OpsError:
    last = error.last_response or {}
    name = error.kwargs.get("name", "waiter")
    if "Error" in last:
        return _explain_client_error(ClientError(last, name))
    return OpsError(f"gave up waiting ({name}): {error.kwargs.get('reason', error)}", ExitCode.OPERATION_FAILED)
