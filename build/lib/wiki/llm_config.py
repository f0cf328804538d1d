"""The language model's connection settings: the process-wide ones (``KBWIKI_LLM_*``) and a KB's
override (``wiki_config.llm``), merged into one ``LLMConfig``.

Kept apart from ``wiki.extract.llm`` so that ``wiki.models`` can validate a KB's override without
importing the extractor (and the ``openai`` SDK).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: Dramatiq's time limit of ``wiki_map`` (seconds). A document's calls get at most
#: ``MAX_DOCUMENT_BUDGET_S`` of it, so a slow model fails the document with a reason (counted,
#: retried later) instead of being interrupted by Dramatiq mid-call; the last 20 s are for the
#: rest of the map (the extraction's write, the next slots).
MAP_TIME_LIMIT_S = 300
MAX_DOCUMENT_BUDGET_S = MAP_TIME_LIMIT_S - 20

#: Request fields that turn a model's thinking off on the common OpenAI-compatible servers
#: (vLLM and llama.cpp's server pass ``chat_template_kwargs`` to Qwen3/DeepSeek-style templates).
#: Sent only on the one retry after an answer with reasoning but no content.
DEFAULT_THINKING_OFF: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": False}}


class LLMOverride(BaseModel):
    """A KB's overrides of the ``KBWIKI_LLM_*`` settings (``wiki_config["llm"]``); ``None`` keeps
    the process setting. Bounds match ``LLMConfig``."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    model: str | None = Field(default=None, min_length=1)
    api_key: str | None = None
    timeout_s: float | None = Field(default=None, gt=0, le=3600)
    connect_timeout_s: float | None = Field(default=None, gt=0, le=600)
    max_tokens: int | None = Field(default=None, ge=64, le=1_000_000)
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] | None = None
    extra_body: dict[str, Any] | None = None
    thinking_off: dict[str, Any] | None = None
    section_chars: int | None = Field(default=None, ge=500, le=2_000_000)
    document_budget_s: float | None = Field(default=None, gt=0, le=MAX_DOCUMENT_BUDGET_S)
    bounded_schema: bool | None = None
    index_intro: bool | None = None
    page_leads: bool | None = None
    token_budget: int | None = Field(default=None, ge=1)
    price_in_per_mtok: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    price_out_per_mtok: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    max_concurrency: int | None = Field(default=None, ge=0, le=4096)
    rpm: int | None = Field(default=None, ge=0)
    tpm: int | None = Field(default=None, ge=0)


class LLMConfig(BaseModel):
    """Everything one LLM extractor needs (frozen; ``fingerprint`` identifies it).

    - ``base_url``: the OpenAI-compatible endpoint (``None``: the SDK's default, OpenAI's API);
    - ``timeout_s`` / ``connect_timeout_s``: one HTTP request's read and connect timeouts;
    - ``max_tokens``: the answer's token cap per call (an answer cut by it is retried on a smaller
      input, never accepted); ``max_tokens_field`` the request field that carries it (OpenAI's
      reasoning models take only ``max_completion_tokens``);
    - ``extra_body``: fields merged into every request (e.g. ``{"temperature": 0}``);
    - ``thinking_off``: fields added on the one retry after an empty answer with reasoning;
    - ``section_chars``: the longest piece of a document sent in one call; longer documents are
      cut into sections at headings and paragraphs, one call each;
    - ``document_budget_s``: the time all calls of one document may take, waits included; a request
      gets at most what is left of it;
    - ``transport_attempts`` / ``retry_max_wait_s``: tries of one request through timeouts, 408,
      429 and 5xx, and the longest wait between two (a longer ``Retry-After`` is cut to it);
    - ``max_invalid_share``: an answer with a larger share of invalid items fails as a whole;
    - ``index_intro``: the index page opens with a paragraph the model writes from the 200 most
      recent summaries (``wiki.extract.llm.intro``; one call per about 50 new documents). Not in
      ``fingerprint``;
    - ``page_leads``: an entity or concept page that two or more sources describe opens with a
      paragraph the model writes from its first four contributions (``stages.leads``; one call per
      8 such pages, again only when those contributions change). Not in ``fingerprint``;
    - ``bounded_schema``: the answer schema also bounds every string (``maxLength``) and list
      (``maxItems``). Off by default: OpenAI's strict structured outputs refuse ``maxLength``. On
      for small local models behind a grammar (llama.cpp's server): without bounds they repeat a
      phrase until ``max_tokens`` (measured with SmolLM2-135M: 0 of 20 documents without, see
      docs/decisions.md).
    - ``token_budget``: tokens in and out the KB may spend (``wiki_llm_usage``, counted since
      ``kbwiki resume --reset-budget``); once spent, the KB's model work pauses. None: no budget.
      In the fingerprint, so raising it resumes a KB paused on it;
    - ``price_in_per_mtok`` / ``price_out_per_mtok``: the model's price per million prompt and
      completion tokens, for the estimated cost in the log and ``kbwiki status`` (0: unknown).
    - ``max_concurrency`` / ``rpm`` / ``tpm``: the model's limit shared by every worker process
      (``repos.rate_limit``): requests in flight, requests a minute, tokens a minute; 0 is
      unlimited. The endpoint and model name the limit, so KBs on the same model share it (the
      last caller's numbers apply). Not part of ``fingerprint``: they decide pace, not success.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = None
    model: str = Field(default="gpt-4o-mini", min_length=1)
    api_key: str | None = None
    timeout_s: float = Field(default=120.0, gt=0, le=3600)
    connect_timeout_s: float = Field(default=10.0, gt=0, le=600)
    max_tokens: int = Field(default=4096, ge=64, le=1_000_000)
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    extra_body: dict[str, Any] = Field(default_factory=dict)
    thinking_off: dict[str, Any] = Field(default_factory=lambda: dict(DEFAULT_THINKING_OFF))
    section_chars: int = Field(default=24_000, ge=500, le=2_000_000)
    document_budget_s: float = Field(default=240.0, gt=0, le=MAX_DOCUMENT_BUDGET_S)
    transport_attempts: int = Field(default=5, ge=1, le=50)
    retry_max_wait_s: float = Field(default=60.0, ge=0, le=3600)
    max_invalid_share: float = Field(default=0.5, ge=0, le=1)
    bounded_schema: bool = False
    index_intro: bool = True
    page_leads: bool = True
    token_budget: int | None = Field(default=None, ge=1)
    price_in_per_mtok: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    price_out_per_mtok: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    # 16 in flight: two worker processes' map threads (2 x 6) fit with room; a provider that
    # allows fewer answers 429 and the shared limit halves (see docs/decisions.md).
    max_concurrency: int = Field(default=16, ge=0, le=4096)
    rpm: int = Field(default=0, ge=0)
    tpm: int = Field(default=0, ge=0)

    def with_override(self, override: LLMOverride | None) -> LLMConfig:
        """This config with the override's set fields replacing its own."""
        if override is None:
            return self
        changes = override.model_dump(exclude_none=True)
        return self.model_copy(update=changes) if changes else self

    def fingerprint(self) -> str:
        """16 hex digits that change whenever a field that decides whether calls can succeed
        changes (endpoint, model, key, request fields); a KB paused on a configuration error
        resumes when its fingerprint changes. The key enters only hashed."""
        data = self.model_dump(mode="json", exclude=_PACE_FIELDS)
        data["api_key"] = hashlib.sha256((self.api_key or "").encode()).hexdigest()
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def estimated_usd(config: LLMConfig, prompt_tokens: int, completion_tokens: int) -> float | None:
    """The price of these tokens at ``config``'s prices, in US dollars; None unless both prices are
    set (a 0 is unknown: never shown as free, nor a half price as the whole)."""
    if not (config.price_in_per_mtok and config.price_out_per_mtok):
        return None
    return (prompt_tokens * config.price_in_per_mtok + completion_tokens * config.price_out_per_mtok) / 1_000_000


#: Fields that set how fast calls go, not whether they can succeed (kept out of ``fingerprint``).
_PACE_FIELDS = {"max_concurrency", "rpm", "tpm", "index_intro", "page_leads"}


def config_from_settings(settings: Any) -> LLMConfig:
    """The process-wide ``LLMConfig`` from ``wiki.settings.Settings``' ``llm_*`` fields."""
    fields = {
        name: getattr(settings, f"llm_{name}")
        for name in (
            "base_url",
            "model",
            "api_key",
            "timeout_s",
            "connect_timeout_s",
            "max_tokens",
            "max_tokens_field",
            "extra_body",
            "section_chars",
            "document_budget_s",
            "transport_attempts",
            "retry_max_wait_s",
            "max_invalid_share",
            "bounded_schema",
            "index_intro",
            "page_leads",
            "token_budget",
            "price_in_per_mtok",
            "price_out_per_mtok",
            "max_concurrency",
            "rpm",
            "tpm",
        )
    }
    if settings.llm_thinking_off is not None:
        fields["thinking_off"] = settings.llm_thinking_off
    return LLMConfig(**fields)
