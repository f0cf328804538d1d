"""One chat completion through the ``openai`` SDK, with the transport retries owned here.

The SDK's own retries are off (``max_retries=0``): tenacity retries timeouts, connection errors,
408, 409, 429 and 5xx with jittered exponential backoff, honouring ``Retry-After`` /
``retry-after-ms`` (cut to ``retry_max_wait_s``), for at most ``transport_attempts`` tries, then
raises ``LLMUnavailable``. A 400 (or 413) is raised as ``ModeRejected`` (the output-mode ladder, or
for an input too long for the context the section splitter, decides what it means); 401, 402, 403,
404 and 422 raise ``LLMConfigError`` at once. An account out of credit (:func:`out_of_credit`)
raises ``LLMOutOfCredit`` at once, whatever the status (OpenAI says it with a 429): no retry spent.

A 200 whose body is no chat completion (a web page, text, other JSON: the SDK hands those back as
they are) raises ``LLMNotAChatEndpoint`` with one line saying what came back
(:func:`not_a_completion`), never an ``AttributeError``. An answer whose content is empty or null
but which has tool calls (servers that implement structured output as a forced tool call) is read
from the first tool call's ``arguments``.

Every HTTP request (each try) first takes a lease of the model's shared rate limit
(``ratelimit.RateLimiter``, waiting up to the document's deadline) and gives it back with the
tokens used and whether the answer was a 429.

Every try is bounded in wall time (``deadline``): connect, first byte and the whole answer within
``timeout_s`` and what is left of the document's budget, whatever pace the server sends at; a try
that runs out fails as a timeout ("model slow: ..."). The tokens of a call are the server's
``usage`` when plausible, else counted (``tokens.usage_of``) and marked estimated. While a 429's
back-off lasts, the KB's status says so (``RateLimiter.notice``).
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from dataclasses import dataclass
from typing import Any, Literal

import openai
import structlog
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
    wait_random_exponential,
)

from wiki.errors import LLMConfigError, LLMNotAChatEndpoint, LLMOutOfCredit, LLMUnavailable
from wiki.extract.llm import deadline as deadlines
from wiki.extract.llm import tokens
from wiki.extract.llm.ratelimit import UNLIMITED, ModelLimits, RateLimiter, current_share, estimate_tokens, model_key
from wiki.llm_config import LLMConfig
from wiki.plural import counted

log = structlog.get_logger(__name__)

OutputMode = Literal["json_schema", "json_object", "fenced"]
_RETRIED_STATUS = {408, 409, 429}
#: How long a "model slow" line stays in the KB's status after the try that timed out.
NOTICE_S = 600.0
#: Statuses no retry can change: the key, the credit, the model or path (404, 405), the request's
#: shape (422), a server that does not implement chat completions at all (501).
_CONFIG_STATUS = {401, 402, 403, 404, 405, 422, 501}


#: How providers say that the prompt does not fit the model's context (OpenAI, vLLM, llama.cpp,
#: Ollama, gateways): a 400 that names the input's size, not the configuration.
_TOO_LONG = re.compile(
    r"context[ _]length|context window|maximum context|too many tokens|prompt is too long"
    r"|exceeds? the (?:available )?context|input is too long|reduce the length",
    re.I,
)


#: The provider's codes for an account without credit (OpenAI's ``error.code`` / ``error.type``),
#: at any status: OpenAI answers an empty balance with 429 ``insufficient_quota``.
_CREDIT_CODES = {"insufficient_quota", "insufficient_balance", "insufficient_credits", "billing_hard_limit_reached"}
#: Words that say the balance is empty, at any status (OpenRouter's "Insufficient credits",
#: DeepSeek's "Insufficient Balance", Anthropic's "Your credit balance is too low").
_CREDIT_WORDS = re.compile(
    r"insufficient[ _](?:credit|balance|funds|quota)|credit balance is too low|out of credits?"
    r"|requires more credits|billing hard limit",
    re.I,
)
#: Words that say it too, except under a 429: Gemini and Azure OpenAI send "You exceeded your
#: current quota, please check your plan and billing details" for per-minute rate limits that a
#: wait clears, so under a 429 only a code or ``_CREDIT_WORDS`` count.
_QUOTA_WORDS = re.compile(r"exceeded your current quota|\bbilling\b", re.I)


def out_of_credit(exc: BaseException) -> bool:
    """Whether an HTTP error says the account is out of credit: status 402, a code or type in
    ``_CREDIT_CODES``, ``_CREDIT_WORDS`` in the message, or ``_QUOTA_WORDS`` under any status but
    429. Such an error is never retried (retries of a call that cannot succeed cost money at some
    providers and time at all)."""
    if not isinstance(exc, openai.APIStatusError):
        return False
    if exc.status_code == 402:
        return True
    body = exc.body if isinstance(exc.body, dict) else {}
    inner = body.get("error", body)
    inner = inner if isinstance(inner, dict) else {}
    found = (getattr(exc, "code", None), getattr(exc, "type", None), inner.get("code"), inner.get("type"))
    codes = {str(v).lower() for v in found if v}
    if codes & _CREDIT_CODES:
        return True
    message = _message(exc)
    return bool(_CREDIT_WORDS.search(message)) or (exc.status_code != 429 and bool(_QUOTA_WORDS.search(message)))


_HTML = re.compile(r"\s*(?:<!doctype html|<html|<head|<body|<!--|<\?xml|<[a-z]+[\s>])", re.I)


def not_a_completion(completion: Any) -> str | None:
    """What a 200 answer is when it is not a chat completion, in one line ending "is the base URL
    right?"; None for a chat completion (``choices`` a list, empty or not). ``completion`` is what
    the SDK returned, or the body as text when it could not read it (empty, or JSON cut short)."""
    if isinstance(completion, str):
        if not completion.strip():
            return "the endpoint answered 200 with an empty body, not a chat completion: is the base URL right?"
        if completion.lstrip().startswith(("{", "[")):
            start = " ".join(completion.split())[:30]
            return (
                f"the endpoint answered 200 with a body that is not JSON ({start!r}),"
                " not a chat completion: is the base URL right?"
            )
        if _HTML.match(completion):
            return "the endpoint answered 200 with an HTML page, not a chat completion: is the base URL right?"
        start = " ".join(completion.split())[:60]
        return f"the endpoint answered 200 with text, not a chat completion ({start!r}): is the base URL right?"
    if not isinstance(getattr(completion, "choices", None), list):
        return "the endpoint answered 200 with JSON that is not a chat completion: is the base URL right?"
    return None


class _NotACompletion(Exception):
    """Raised inside the retries (never retried) and turned into ``LLMNotAChatEndpoint``."""


class ModeRejected(Exception):
    """The endpoint answered 400 to a request in this output mode (``message``: its words).
    ``too_long``: the refusal says the input does not fit the context (or the status was 413),
    so a smaller section may pass where another mode would not help."""

    def __init__(self, message: str, too_long: bool = False) -> None:
        self.message, self.too_long = message, too_long
        super().__init__(message)


@dataclass(frozen=True)
class ChatAnswer:
    """One completion: ``content`` (``""`` when none; the first tool call's arguments when the
    content is empty and there are tool calls, ``finish_reason`` ``tool_calls`` then read as
    ``stop``), ``finish_reason``, the ``reasoning`` text a thinking model returned beside it
    (``reasoning_content`` or ``reasoning``), and token counts; ``estimated_tokens``: the call's
    tokens when they were counted here (no plausible ``usage`` from the server,
    ``tokens.usage_of``), else 0."""

    content: str
    finish_reason: str | None
    reasoning: str
    prompt_tokens: int
    completion_tokens: int
    estimated_tokens: int = 0


def _transient(exc: BaseException) -> bool:
    if out_of_credit(exc):
        return False
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
        return True
    return isinstance(exc, openai.APIStatusError) and (
        exc.status_code in _RETRIED_STATUS or (exc.status_code >= 500 and exc.status_code not in _CONFIG_STATUS)
    )


def retry_after_s(exc: BaseException | None) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, ``Retry-After`` as seconds or an
    HTTP date), or None when it did not say."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):  # neither seconds nor a date: as if the server had not said
        return None
    return max(parsed.timestamp() - time.time(), 0.0)


class _Wait:
    """tenacity wait: the server's ``Retry-After`` when it gave one, else full-jitter exponential."""

    def __init__(self, max_wait_s: float) -> None:
        self.max_wait_s = max_wait_s
        self.jittered = wait_random_exponential(multiplier=0.5, max=max_wait_s)

    def __call__(self, state: RetryCallState) -> float:
        asked = retry_after_s(state.outcome.exception() if state.outcome else None)
        return min(asked, self.max_wait_s) if asked is not None else self.jittered(state)


class ChatClient:
    """Chat completions against one endpoint and model (``LLMConfig``); thread-safe. ``limiter``:
    the model's rate limit shared by every process (``UNLIMITED``: none)."""

    def __init__(self, config: LLMConfig, limiter: RateLimiter | None = None) -> None:
        self.config = config
        self.limiter = limiter or UNLIMITED
        self.limit_key = model_key(config.base_url, config.model)
        self.limits = ModelLimits(config.max_concurrency, config.rpm, config.tpm)
        self.sdk = openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key or "none",
            max_retries=0,
            timeout=openai.Timeout(config.timeout_s, connect=config.connect_timeout_s),
            http_client=deadlines.http_client(),
        )

    def complete(
        self,
        messages: list[dict[str, str]],
        mode: OutputMode,
        schema: dict[str, Any],
        extra_body: dict[str, Any] | None = None,
        deadline: float | None = None,
    ) -> ChatAnswer:
        """One completion in ``mode``, done by ``deadline`` (a ``time.monotonic()`` value: no request
        or retry wait goes past it). Raises ``ModeRejected`` on a 400 or 413, ``LLMConfigError`` on
        401, 402, 403, 404 and 422 (``LLMOutOfCredit`` when :func:`out_of_credit`, at any status),
        ``LLMUnavailable`` once the transport retries or the time are spent
        (waiting for the shared rate limit included), ``LLMNotAChatEndpoint`` when a 200's body is no
        chat completion."""
        c = self.config
        left = c.document_budget_s if deadline is None else deadline - time.monotonic()
        end = time.monotonic() + left
        if left <= 0:
            raise LLMUnavailable(f"the document's time budget ({c.document_budget_s:.0f} s) is spent")
        kwargs: dict[str, Any] = {
            "model": c.model,
            "messages": messages,
            c.max_tokens_field: c.max_tokens,
            "timeout": openai.Timeout(min(c.timeout_s, left), connect=min(c.connect_timeout_s, left)),
        }
        if mode == "json_schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "wiki_extraction", "strict": True, "schema": schema},
            }
        elif mode == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        body = {**c.extra_body, **(extra_body or {})}
        if body:
            kwargs["extra_body"] = body
        retrying = Retrying(
            retry=retry_if_exception(_transient),
            stop=stop_after_attempt(c.transport_attempts) | stop_before_delay(left),
            wait=_Wait(c.retry_max_wait_s),
            reraise=True,
            before_sleep=self._log_retry,
        )
        try:
            completion, usage = retrying(self._limited, end, **kwargs)
        except openai.BadRequestError as exc:
            _raise_if_out_of_credit(exc, c)
            raise ModeRejected(_message(exc), too_long=bool(_TOO_LONG.search(_message(exc)))) from exc
        except openai.APIStatusError as exc:
            _raise_if_out_of_credit(exc, c)
            if exc.status_code == 413:
                raise ModeRejected(_message(exc), too_long=True) from exc
            if exc.status_code in _CONFIG_STATUS:
                raise LLMConfigError(exc.status_code, _message(exc), c.base_url, c.model) from exc
            raise LLMUnavailable(
                f"HTTP {exc.status_code} after {counted(retrying.statistics.get('attempt_number', 1), 'try')}:"
                f" {_message(exc)}"
            ) from exc
        except openai.APITimeoutError as exc:
            tries = counted(retrying.statistics.get("attempt_number", 1), "try")
            slow = f"slow: no complete answer in {min(c.timeout_s, left):.0f} s ({tries})"
            self.limiter.notice(current_share(), slow, NOTICE_S)
            raise LLMUnavailable(f"model {slow}") from exc
        except openai.APIConnectionError as exc:
            raise LLMUnavailable(
                f"{type(exc).__name__} after {counted(retrying.statistics.get('attempt_number', 1), 'try')}: {exc}"
            ) from exc
        except _NotACompletion as exc:
            raise LLMNotAChatEndpoint(str(exc), c.base_url, c.model) from None
        if not completion.choices:  # no answer, but the server may have counted the prompt
            return ChatAnswer("", None, "", usage.prompt, usage.completion, usage.estimated_tokens)
        choice = completion.choices[0]
        message = choice.message
        content, finish_reason = message.content or "", choice.finish_reason
        arguments = _tool_arguments(message)
        if not content.strip() and arguments and arguments[0]:
            content, finish_reason = arguments[0], "stop" if finish_reason == "tool_calls" else finish_reason
        return ChatAnswer(
            content=content,
            finish_reason=finish_reason,
            reasoning=_reasoning(message),
            prompt_tokens=usage.prompt,
            completion_tokens=usage.completion,
            estimated_tokens=usage.estimated_tokens,
        )

    def _limited(self, end: float, **kwargs: Any) -> tuple[Any, tokens.Usage]:
        """One request under a lease of the shared rate limit, done by ``end`` (connect, every
        byte and the whole answer: ``deadline.within``); returns the completion and its tokens."""
        c = self.config
        prompt_chars = sum(len(m.get("content") or "") for m in kwargs["messages"])
        reserved = estimate_tokens(prompt_chars, c.max_tokens)
        lease = self.limiter.acquire(self.limit_key, current_share(), self.limits, reserved, end)
        used: int | None = None
        throttled = False
        try:
            left = max(end - time.monotonic(), 0.001)
            kwargs["timeout"] = openai.Timeout(min(c.timeout_s, left), connect=min(c.connect_timeout_s, left))
            with deadlines.within(time.monotonic() + min(c.timeout_s, left)):
                try:
                    completion = self.sdk.chat.completions.create(**kwargs)
                except json.JSONDecodeError as exc:  # the SDK reads a JSON content type's body itself
                    completion = exc.doc
            words = not_a_completion(completion)
            if words:
                raise _NotACompletion(words)
            usage = tokens.usage_of(
                getattr(completion, "usage", None),
                kwargs["messages"],
                _answer_text(completion),
                c.max_tokens,
                kwargs.get("response_format"),
            )
            if usage.estimated:
                log.info("llm.usage_estimated", model=c.model, reported=repr(getattr(completion, "usage", None))[:200])
            used = usage.prompt + usage.completion
            return completion, usage
        except openai.APIStatusError as exc:
            # OpenAI says "out of credit" with a 429 too (code insufficient_quota): no pace cures that.
            throttled = exc.status_code == 429 and not out_of_credit(exc)
            used = prompt_chars // 4  # refused or failed: the answer's reservation was not spent
            raise
        finally:
            lease.release(used, throttled)

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, openai.APIStatusError) and exc.status_code == 429:
            wait_s = state.upcoming_sleep
            self.limiter.notice(current_share(), f"waiting {wait_s:.0f} s for rate limit (HTTP 429)", wait_s + 5)
        log.warning(
            "llm.retry",
            model=self.config.model,
            attempt=state.attempt_number,
            error=repr(exc),
            wait_s=round(state.upcoming_sleep, 2),
        )


def _reasoning(message: Any) -> str:
    """The reasoning text a thinking model returned beside its answer (``reasoning_content`` or
    ``reasoning``), or ``""``."""
    extra = message.model_extra or {}
    reasoning = extra.get("reasoning_content") or extra.get("reasoning") or ""
    return reasoning if isinstance(reasoning, str) else str(reasoning)


def _tool_arguments(message: Any) -> list[str]:
    """Each tool call's ``function.arguments`` of a completion's message, in order (text only)."""
    calls = getattr(message, "tool_calls", None) or []
    arguments = [getattr(getattr(call, "function", None), "arguments", None) for call in calls]
    return [a for a in arguments if isinstance(a, str)]


def _answer_text(completion: Any) -> str:
    """The text a completion's tokens were spent on: content, reasoning and tool-call arguments."""
    choices = getattr(completion, "choices", None) or []
    if not choices:
        return ""
    message = choices[0].message
    parts = [message.content or "", _reasoning(message), *_tool_arguments(message)]
    return "\n".join(p for p in parts if p)


def _raise_if_out_of_credit(exc: openai.APIStatusError, c: LLMConfig) -> None:
    if out_of_credit(exc):
        raise LLMOutOfCredit(exc.status_code, _message(exc), c.base_url, c.model) from exc


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:500]
        if isinstance(inner, str):
            return inner[:500]
    return str(exc.message)[:500]
