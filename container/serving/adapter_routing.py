"""Which model serves a request: the adapter the middleware admits, logs and counts is the one vLLM runs.

What vLLM 0.32/0.33 does (read in the wheel, seen with the real engine in tests/engine):
- `/invocations` (vllm/entrypoints/serve/sagemaker/api_router.py) is wrapped in
  `inject_adapter_id(adapter_path="model")` from model-hosting-container-standards
  (sagemaker/lora/transforms/inject_to_body.py): the body's `model` is REPLACED by the
  X-Amzn-SageMaker-Adapter-Identifier header, read with Starlette's `headers.get` (the first of
  repeated headers) and null when the header is absent. A body naming an adapter without the header
  is therefore served by the base model; an empty header too.
- `/v1/chat/completions` and `/v1/completions` never read the header: the body's `model` decides.
- The HTTP server strips leading whitespace from header values but keeps trailing whitespace, and
  vLLM looks the name up exactly ("jp_style_v1 " is a 404).

The contract, per route (docs/reference/container.md, "Choosing the adapter"):
- `/invocations`: the header names the adapter when present (SageMaker sets it for adapter inference
  components), else the body's `model`, else the base model. The middleware makes the engine agree:
  without a header it adds one carrying the admitted adapter, which vLLM copies into `model`.
- `/v1/*`: the body's `model`, else the base model. A header naming anything else is refused: the
  engine would ignore it.
- Everywhere: a header sent more than once, or a name that is not exactly a served model
  (`base` or an adapter), is refused with 400 before the engine sees the request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import clip
from .settings import BASE_MODEL_NAME

ADAPTER_HEADER = "x-amzn-sagemaker-adapter-identifier"
HEADER_DISPLAY_NAME = "X-Amzn-SageMaker-Adapter-Identifier"


class AdapterRefused(ValueError):
    """The request names no served model unambiguously; the message says why (answered with 400)."""


@dataclass(frozen=True, slots=True)
class AdapterChoice:
    adapter: str  # the model that serves the request: what is logged and counted
    add_adapter_header: bool  # the middleware adds the adapter header so that vLLM serves `adapter`


class AdapterRouter:
    def __init__(self, adapters: tuple[str, ...]) -> None:
        self.served_models = frozenset((BASE_MODEL_NAME, *adapters))
        self.available = ", ".join((BASE_MODEL_NAME, *sorted(adapters)))

    def choose(self, body_model: Any, header_values: tuple[str, ...], *, invocations: bool) -> AdapterChoice:
        """header_values: every X-Amzn-SageMaker-Adapter-Identifier value as received (not stripped);
        invocations: the request is for SageMaker's /invocations (else an OpenAI /v1 route)."""
        if len(header_values) > 1:
            raise AdapterRefused(f"the {HEADER_DISPLAY_NAME} header was sent {len(header_values)} times; send it once")
        if invocations:
            if header_values:
                return AdapterChoice(self._served(header_values[0], f"the {HEADER_DISPLAY_NAME} header"), False)
            return AdapterChoice(self._from_body(body_model), True)
        adapter = self._from_body(body_model)
        if header_values and header_values[0] != adapter:
            raise AdapterRefused(
                f"the {HEADER_DISPLAY_NAME} header ({_shown(header_values[0])}) is not read on the /v1 routes, "
                f"which serve the 'model' field ({adapter!r}); name the adapter in 'model' or drop the header"
            )
        return AdapterChoice(adapter, False)

    def _from_body(self, body_model: Any) -> str:
        return BASE_MODEL_NAME if body_model is None else self._served(body_model, "the 'model' field")

    def _served(self, name: Any, source: str) -> str:
        if not isinstance(name, str) or name not in self.served_models:
            raise AdapterRefused(f"unknown adapter {_shown(name)} in {source}; available: {self.available}")
        return name


def _shown(value: Any) -> str:
    """Client input quoted in an error message, cut like every other echo (errors.clip)."""
    return repr(clip(value)) if isinstance(value, str) else clip(repr(value))
