"""What can go wrong between kbwiki and a language model, one owner each.

- ``LLMUnavailable``: the endpoint did not answer (timeouts, 408, 429, 5xx) through all of the
  client's own retries; the map stage counts it and tries the document again later.
- ``LLMConfigError``: the endpoint refused the request itself (400 in every output mode, 401,
  403, 404, 422): retrying cannot help until the configuration changes, so the map stage records it
  once for the KB and pauses the KB's model work.
- ``LLMOutputInvalid``: the model answered, but the answer is truncated, empty, not JSON or has
  too many invalid items; counted like ``LLMUnavailable``, a dead letter once the document's budget
  is spent; ``raw`` keeps the answer for triage.
- ``LLMRefused``: the provider's content filter stopped the answer: not retried (``for_good``),
  the document becomes a dead letter at once.
"""

from __future__ import annotations

#: Characters of a raw answer kept in an error for triage (dead letters keep 8 KiB of the error).
RAW_KEPT_CHARS = 4000


class LLMError(Exception):
    """Base of the LLM extractor's errors. ``for_good``: retrying the document cannot help."""

    for_good = False


class LLMUnavailable(LLMError):
    """The endpoint stayed unreachable or overloaded through the client's retries."""


class LLMConfigError(LLMError):
    """The endpoint refused the request (``status``: 400, 401, 403, 404 or 422); ``message`` is the
    provider's own words. Not retried: the KB waits until its configuration changes."""

    def __init__(self, status: int, message: str, base_url: str | None, model: str) -> None:
        self.status, self.message, self.base_url, self.model = status, message, base_url, model
        super().__init__(f"the model endpoint refused the request with HTTP {status} "
                         f"(base URL {base_url or 'default'}, model {model}): {message}")


class LLMOutputInvalid(LLMError):
    """The answer cannot be made valid; ``reason`` says why, ``raw`` is the answer (cut)."""

    def __init__(self, reason: str, raw: str = "") -> None:
        self.reason, self.raw = reason, raw[:RAW_KEPT_CHARS]
        super().__init__(f"invalid model output: {reason}" + (f"\n--- raw answer ---\n{self.raw}" if raw else ""))


class LLMRefused(LLMOutputInvalid):
    """The provider's content filter stopped the answer (``finish_reason == "content_filter"``)."""

    for_good = True
