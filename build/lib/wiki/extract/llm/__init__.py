"""The LLM extractor (``KBWIKI_EXTRACTOR=llm``): any OpenAI-compatible chat endpoint.

Re-exports only; see ``extractor`` (validation, handles, output modes), ``client`` (transport
retries), ``errors`` (who owns which failure), ``schema`` and ``prompts``. ``LLMExtractor`` is
imported on first use: the ``openai`` SDK takes about a second to import, which the offline
extractor's workers and the ``kbwiki`` commands should not pay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wiki.errors import LLMConfigError, LLMError, LLMOutputInvalid, LLMRefused, LLMUnavailable

if TYPE_CHECKING:
    from wiki.extract.llm.extractor import LLMExtractor

__all__ = ["LLMConfigError", "LLMError", "LLMExtractor", "LLMOutputInvalid", "LLMRefused", "LLMUnavailable"]


def __getattr__(name: str) -> Any:
    if name == "LLMExtractor":
        from wiki.extract.llm.extractor import LLMExtractor

        return LLMExtractor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
