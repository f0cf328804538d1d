"""The parts of kbwiki installed apart, as pip extras: a producer app or an offline worker on Latin
text installs the core alone (``pip install kbwiki``), and each extra adds what one feature needs.

- ``cjk``: Chinese and Japanese text in the offline extractor (rjieba's tagger, MeCab through
  fugashi with IPADIC, and Python jieba, which wordfreq's Chinese module imports);
- ``llm``: the language-model extractor (the openai SDK, JSON repair, token counts, nh3);
- ``web``: ``kbwiki serve`` (the web view, the read API and MCP) and ``kbwiki mcp``.

``make install`` installs them all (the ``all`` extra). A feature calls :func:`require` before its
first import of an extra's module, so a missing one is a ``MissingExtra`` naming the extra, never a
bare ``ModuleNotFoundError`` from deep in a worker.
"""

from __future__ import annotations

import functools
import importlib

from wiki.errors import MissingExtra

#: What each extra makes work, for the error's first words.
EXTRAS = {
    "cjk": "Chinese and Japanese text",
    "llm": "the language-model extractor (KBWIKI_EXTRACTOR=llm)",
    "web": "the web face (kbwiki serve, kbwiki mcp)",
}

#: The modules ``kbwiki serve`` imports from the ``web`` extra (checked before it starts).
WEB_MODULES = ("starlette", "uvicorn", "jinja2", "markdown_it", "nh3", "itsdangerous", "limits", "fastapi", "mcp")
#: The modules ``kbwiki mcp`` imports from the ``web`` extra.
MCP_MODULES = ("starlette", "mcp")


@functools.cache
def require(extra: str, *modules: str) -> None:
    """Import ``modules`` (top-level names of ``extra``'s packages) or raise ``MissingExtra`` saying
    which extra to install. Cached: a feature calls it on each use (the tagger once per sentence)."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise MissingExtra(
                f"{EXTRAS[extra]} needs kbwiki's {extra} extra: pip install 'kbwiki[{extra}]'"
                f" (module {module} is missing: {exc})"
            ) from exc
