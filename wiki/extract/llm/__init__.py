"""The LLM extractor (``KBWIKI_EXTRACTOR=llm``): any OpenAI-compatible chat endpoint.

Re-exports only; see ``extractor`` (validation, handles, output modes), ``client`` (transport
retries), ``errors`` (who owns which failure), ``schema`` and ``prompts``.
"""

from wiki.extract.llm.errors import LLMConfigError, LLMError, LLMOutputInvalid, LLMRefused, LLMUnavailable
from wiki.extract.llm.extractor import LLMExtractor

__all__ = ["LLMConfigError", "LLMError", "LLMExtractor", "LLMOutputInvalid", "LLMRefused", "LLMUnavailable"]
