"""Request guards and the prompt-length estimate, as pure functions (the process tests in
test_serving_middleware.py send the same requests through vLLM's app)."""

import json
import random

import pytest

from container.serving.guards import MAX_BODY_BYTES, Admitted, Rejection, RequestGuard
from container.serving.tokens import (
    chat_tokens_upper_bound,
    estimate_chat_tokens,
    estimate_completion_tokens,
    estimate_text_tokens,
)

ADAPTERS = ("manga_domain_v3", "general_support_v2", "jp_style_v1")
GUARD = RequestGuard(ADAPTERS, max_model_len=4096, generation_reserve_tokens=600)


def body(**payload):
    return json.dumps(payload).encode()


def chat(content="Recommend a manga.", **extra):
    return body(messages=[{"role": "user", "content": content}], **extra)


@pytest.mark.parametrize(
    ("content_type", "content_length", "status"),
    [
        ("application/json", "12", None),
        ("application/json; charset=utf-8", None, None),
        ("Application/JSON", None, None),
        ("text/plain", "12", 400),
        (None, "12", 400),
        ("application/json", str(MAX_BODY_BYTES + 1), 413),
        ("application/json", str(MAX_BODY_BYTES), None),
    ],
)
def test_header_checks(content_type, content_length, status):
    outcome = GUARD.check_headers(content_type, content_length)
    assert (outcome.status if outcome else None) == status


@pytest.mark.parametrize(
    ("path", "raw", "param"),
    [
        ("/invocations", b"{not json", None),
        ("/invocations", b"\xff\xfe", None),
        ("/invocations", b"[1, 2]", None),
        ("/invocations", body(max_tokens=5), "messages"),
        ("/invocations", body(messages=[]), "messages"),
        ("/invocations", body(messages="hello"), "messages"),
        ("/invocations", body(prompt=""), "prompt"),
        ("/v1/chat/completions", body(prompt="hello"), "messages"),
        ("/v1/completions", body(messages=[{"role": "user", "content": "hi"}]), "prompt"),
    ],
)
def test_malformed_bodies_are_400(path, raw, param):
    outcome = GUARD.check_body(path, raw, ())
    assert isinstance(outcome, Rejection) and outcome.status == 400
    assert outcome.param == param


def test_a_good_chat_request_is_admitted_for_its_adapter():
    outcome = GUARD.check_body("/invocations", chat(model="jp_style_v1", stream=True), ())
    assert outcome == Admitted(
        adapter="jp_style_v1",
        stream=True,
        estimated_prompt_tokens=outcome.estimated_prompt_tokens,
        add_adapter_header=True,  # adapter_routing: vLLM's /invocations then serves the body's adapter
    )
    assert outcome.estimated_prompt_tokens > 0


def test_a_prompt_over_the_budget_is_400_with_the_numbers():
    long_history = [{"role": "user", "content": "word " * 800}] * 4  # about 4 x 1000 tokens
    outcome = GUARD.check_body("/invocations", body(messages=long_history), ())
    assert isinstance(outcome, Rejection) and outcome.status == 400 and outcome.param == "messages"
    estimate = estimate_chat_tokens(long_history)
    assert f"about {estimate} tokens" in outcome.message
    assert "context budget of 3496 tokens" in outcome.message
    assert "max_model_len 4096 minus 600" in outcome.message


def test_a_prompt_just_inside_the_budget_is_admitted():
    budget = 4096 - 600
    text = "a" * 4 * (budget - 5 - 5)  # leaves room for one message's framing and the prompt's
    messages = [{"role": "user", "content": text}]
    assert estimate_chat_tokens(messages) == budget
    assert isinstance(GUARD.check_body("/invocations", body(messages=messages), ()), Admitted)
    messages[0]["content"] += "aaaa"
    assert isinstance(GUARD.check_body("/invocations", body(messages=messages), ()), Rejection)


def test_the_estimate_counts_ascii_by_four_and_other_characters_one_each():
    assert estimate_text_tokens("") == 0
    assert estimate_text_tokens("abcd") == 1
    assert estimate_text_tokens("abcde") == 2
    assert estimate_text_tokens("おすすめの漫画") == 7
    assert estimate_text_tokens("manga おすすめ") == 2 + 4


def test_completion_prompts_of_every_shape():
    assert estimate_completion_tokens("abcd") == 2
    assert estimate_completion_tokens([1, 2, 3]) == 3
    assert estimate_completion_tokens(["abcd", "a" * 40]) == 11
    assert estimate_completion_tokens([[1, 2], [1, 2, 3, 4]]) == 4


def test_content_parts_count_their_text():
    parts = [{"role": "user", "content": [{"type": "text", "text": "abcd" * 10}, {"type": "image_url"}]}]
    assert estimate_chat_tokens(parts) == 10 + 5 + 5


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_the_whole_body_bound_is_never_below_the_estimate(ensure_ascii):
    """The guard skips the per-message estimate when a bound computed from the body's two lengths
    already fits the budget; that is only safe if the bound can never be below the estimate."""
    rng = random.Random(7)
    alphabet = ["a", "b", " ", "\n", '"', "\\", "お", "漫", "é", "ж", "😀", "\u2028", "1", "{", "\t"]
    for _ in range(300):
        messages = []
        for _ in range(rng.randint(1, 6)):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
            content = text if rng.random() < 0.7 else [{"type": "text", "text": text}, {"type": "image_url"}]
            messages.append(rng.choice([{"role": "user", "content": content}, {"content": content}, 5, "x"]))
        raw = json.dumps({"messages": messages, "model": "base"}, ensure_ascii=ensure_ascii).encode()
        assert chat_tokens_upper_bound(raw, raw.decode(), len(messages)) >= estimate_chat_tokens(messages)


def test_the_estimate_takes_non_ascii_characters_as_three_utf8_bytes():
    assert estimate_text_tokens("é") == 1  # 2 bytes: counted as half a CJK character, rounded up
    assert estimate_text_tokens("😀") == 2  # 4 bytes
    assert estimate_text_tokens("漫画" * 100) == 200
