"""No log line of the engine process carries an exception's message (issue 51).

vLLM's streaming generators catch an engine exception themselves and log it with its traceback before
sending the client an error event (`logger.exception("Error in chat completion stream generator.")` in
vllm/entrypoints/openai/serving_chat.py), and a traceback ends with the exception's message, which may
quote the prompt. So the middleware, once in the API server's process, puts a filter on the handlers of
vLLM's logger and of the root logger: a record with an exception keeps its own message and says where the
exception was raised and its type, never its text (the traceback is dropped). A handler's filters see every
record it emits, those propagated from child loggers (`vllm.entrypoints…`) included (Python docs, "Logging
HOWTO": handler filters; "Filter objects")."""

from __future__ import annotations

import logging
import traceback

# vLLM's loggers are `vllm.…` and do not propagate past `vllm` (vllm/logger.py's default configuration);
# the root logger's handlers take every other library's records.
LOGGERS = ("vllm", "")


def raised_at(exc: BaseException) -> str:
    """' at FILE:LINE in FUNCTION' (FILE from site-packages/ on): where an unhandled exception was raised, for
    a log line. Never its message: an engine's may quote the request (users' chats are personal data)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    frame = frames[-1]
    path = frame.filename.rsplit("site-packages/", 1)[-1]
    if path == frame.filename:  # not an installed package: its last two path parts say enough
        path = "/".join(path.rsplit("/", 2)[-2:])
    return f" at {path}:{frame.lineno} in {frame.name}"


class ExceptionTypeOnly(logging.Filter):
    """Replaces a record's exception (and so its traceback) with the exception's type and where it was raised."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            record.msg = f"{record.getMessage()} ({type(exc).__name__}{raised_at(exc)}; its message is not logged)"
            record.args = None
            record.exc_info = record.exc_text = None
        return True


def withhold_exception_messages() -> None:
    """Every handler of vLLM's and the root logger gets the filter, once."""
    for name in LOGGERS:
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(f, ExceptionTypeOnly) for f in handler.filters):
                handler.addFilter(ExceptionTypeOnly())
