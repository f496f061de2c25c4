"""Which model serves a request, as pure functions (container/serving/adapter_routing.py). The same
cases run through the stand-in in test_serving_middleware.py and through the real vLLM engine in
tests/engine (whose outputs show which adapter really served)."""

import json

import pytest

from container.serving.adapter_routing import AdapterChoice, AdapterRefused, AdapterRouter
from container.serving.errors import ECHO_LIMIT
from container.serving.guards import Rejection, RequestGuard

ADAPTERS = ("manga_domain_v3", "general_support_v2", "jp_style_v1")
ROUTER = AdapterRouter(ADAPTERS)
AVAILABLE = "available: base, general_support_v2, jp_style_v1, manga_domain_v3"


@pytest.mark.parametrize(
    ("body_model", "headers", "expected"),
    [
        # No header: the body decides, and the middleware adds the header vLLM will copy into `model`
        # (without it vLLM's inject_adapter_id writes null there and the base model answers).
        ("jp_style_v1", (), AdapterChoice("jp_style_v1", True)),
        (None, (), AdapterChoice("base", True)),
        ("base", (), AdapterChoice("base", True)),
        # A header: it names the adapter, as vLLM and SageMaker's adapter inference components do.
        (None, ("jp_style_v1",), AdapterChoice("jp_style_v1", False)),
        ("manga_domain_v3", ("jp_style_v1",), AdapterChoice("jp_style_v1", False)),
        (None, ("base",), AdapterChoice("base", False)),
    ],
)
def test_invocations_serve_the_header_else_the_body_else_the_base_model(body_model, headers, expected):
    assert ROUTER.choose(body_model, headers, invocations=True) == expected


@pytest.mark.parametrize(
    ("body_model", "headers", "expected"),
    [
        ("jp_style_v1", (), "jp_style_v1"),
        (None, (), "base"),
        ("jp_style_v1", ("jp_style_v1",), "jp_style_v1"),  # a header that agrees is harmless
    ],
)
def test_v1_routes_serve_the_body_and_never_need_a_header(body_model, headers, expected):
    assert ROUTER.choose(body_model, headers, invocations=False) == AdapterChoice(expected, False)


@pytest.mark.parametrize(
    ("body_model", "headers", "invocations", "says"),
    [
        # vLLM reads the first of repeated headers, the guard used to read the last: refuse both.
        (None, ("jp_style_v1", "manga_domain_v3"), True, "header was sent 2 times; send it once"),
        (None, ("jp_style_v1", "jp_style_v1"), False, "header was sent 2 times"),
        # vLLM looks the value up exactly: trailing whitespace would be its 404, an empty one the base model.
        (None, ("jp_style_v1 ",), True, "unknown adapter 'jp_style_v1 ' in the X-Amzn"),
        (None, ("jp style",), True, "unknown adapter 'jp style' in the X-Amzn-SageMaker-Adapter-Identifier header"),
        ("jp_style_v1", ("",), True, "unknown adapter '' in the X-Amzn-SageMaker-Adapter-Identifier header"),
        ("shoujo_v9", (), True, "unknown adapter 'shoujo_v9' in the 'model' field"),
        ("shoujo_v9", (), False, "unknown adapter 'shoujo_v9' in the 'model' field"),
        (7, (), True, "unknown adapter 7 in the 'model' field"),
        # /v1 routes ignore the header: one that disagrees with the body would be silently ignored.
        ("manga_domain_v3", ("jp_style_v1",), False, "header ('jp_style_v1') is not read on the /v1 routes"),
        (None, ("jp_style_v1",), False, "which serve the 'model' field ('base')"),
    ],
)
def test_ambiguous_or_unknown_names_are_refused(body_model, headers, invocations, says):
    with pytest.raises(AdapterRefused) as refused:
        ROUTER.choose(body_model, headers, invocations=invocations)
    assert says in str(refused.value)


def test_unknown_names_list_every_served_model():
    with pytest.raises(AdapterRefused) as refused:
        ROUTER.choose("shoujo_v9", (), invocations=True)
    assert AVAILABLE in str(refused.value)


def test_a_huge_name_is_not_echoed_whole():
    with pytest.raises(AdapterRefused) as refused:
        ROUTER.choose("x" * 1_000_000, (), invocations=True)
    message = str(refused.value)
    assert "x" * ECHO_LIMIT in message and "x" * (ECHO_LIMIT + 1) not in message and "999800 more" in message


def test_the_guard_answers_a_refusal_with_400_on_model_and_admits_with_the_choice():
    guard = RequestGuard(ADAPTERS, max_model_len=4096, generation_reserve_tokens=600)
    chat = json.dumps({"messages": [{"role": "user", "content": "hi"}], "model": "jp_style_v1"}).encode()
    refused = guard.check_body("/v1/chat/completions", chat, ("manga_domain_v3",))
    assert isinstance(refused, Rejection) and refused.status == 400 and refused.param == "model"
    admitted = guard.check_body("/invocations", chat, ())
    assert (admitted.adapter, admitted.add_adapter_header) == ("jp_style_v1", True)
    admitted = guard.check_body("/v1/chat/completions", chat, ())
    assert (admitted.adapter, admitted.add_adapter_header) == ("jp_style_v1", False)
