"""A cheap prompt-length estimate for the context-budget guard.

Exact counts would mean running the tokenizer on the API server's event loop for every request,
on top of vLLM's own tokenisation. Instead: Llama-3's tokenizer averages about 4 ASCII characters per
token on English prose and about 1 token per character on Japanese, so the estimate is
ceil(ascii / 4) + non_ascii, plus the chat template's framing tokens. Non-ASCII characters are counted,
using the UTF-8 length, as 3 bytes each (kana, kanji and full-width punctuation are): exact for
English and Japanese text, and it needs only two lengths, so the whole body's bound below is O(1).
It is within roughly 20% on English and Japanese chat text; digits and code tokenise denser and are
under-estimated. vLLM still rejects anything longer than max_model_len itself, so an under-estimate
can only let through a prompt that then gets a shorter answer - never an engine failure.

Any JSON value may arrive here: shapes the engine does not accept count as nothing (the engine
refuses them itself), and nothing recurses, so deep nesting costs no stack.
"""

from __future__ import annotations

from typing import Any

ASCII_CHARS_PER_TOKEN = 4
# Llama-3 chat template: <|start_header_id|>role<|end_header_id|>\n\n ... <|eot_id|> per message.
TOKENS_PER_MESSAGE = 5
# <|begin_of_text|> plus the assistant header that opens the answer.
TOKENS_PER_PROMPT = 5


def _tokens(chars: int, utf8_bytes: int) -> int:
    """ceil(ascii / 4) + non_ascii, with non_ascii = (utf8_bytes - chars) / 2 (3-byte characters) and
    ascii = chars - non_ascii; linear in both lengths, so the sum over parts never exceeds the whole's."""
    return -(-(2 * chars + 3 * (utf8_bytes - chars)) // (2 * ASCII_CHARS_PER_TOKEN))


def estimate_text_tokens(text: str) -> int:
    if text.isascii():  # the common case, without a copy
        return -(-len(text) // ASCII_CHARS_PER_TOKEN)
    return _tokens(len(text), len(text.encode("utf-8", "surrogatepass")))


def _content_tokens(content: Any) -> int:
    if isinstance(content, str):
        return estimate_text_tokens(content)
    if isinstance(content, list):  # OpenAI content parts; only text parts count for a text model
        texts = (part.get("text") for part in content if isinstance(part, dict))
        return estimate_text_tokens("".join(text for text in texts if isinstance(text, str)))
    return 0


def estimate_chat_tokens(messages: list[Any]) -> int:
    text_tokens = sum(_content_tokens(message.get("content")) for message in messages if isinstance(message, dict))
    return text_tokens + TOKENS_PER_MESSAGE * len(messages) + TOKENS_PER_PROMPT


def chat_tokens_upper_bound(body: bytes, body_text: str, message_count: int) -> int:
    """At least estimate_chat_tokens(messages) for any `messages` parsed out of the UTF-8 body, in O(1):
    the messages' text is part of the body, the JSON around it only adds ASCII, an escape (\\n,
    \\uXXXX) adds more in the body than the character it stands for counts, and rounding up adds at
    most one token per message. So a body whose bound fits the budget needs no per-message estimate."""
    text_tokens = _tokens(len(body_text), len(body)) + message_count
    return text_tokens + TOKENS_PER_MESSAGE * message_count + TOKENS_PER_PROMPT


def _single_prompt_tokens(prompt: Any) -> int:
    """One prompt: a string, or a list of token ids."""
    if isinstance(prompt, str):
        return estimate_text_tokens(prompt) + 1
    if isinstance(prompt, list) and all(isinstance(token, int) for token in prompt):
        return len(prompt)
    return 0


def estimate_completion_tokens(prompt: Any) -> int:
    """Longest single prompt of the shapes the completion API takes: str, list of token ids, or a
    batch (list) of either."""
    single = _single_prompt_tokens(prompt)
    if single or not isinstance(prompt, list):
        return single
    return max((_single_prompt_tokens(item) for item in prompt), default=0)
