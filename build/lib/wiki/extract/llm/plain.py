"""Model-written strings as plain text before they are stored (issue 26): no tag, no script link.

A model's answer may hold HTML (``<script>``, ``<img onerror>``, ``<iframe>``) because a
document asked for it or because the model likes it; the web view escapes it, an exported vault
read in another Markdown viewer may not. Every model-written string (summary, body, description,
lead, index intro) goes through :func:`plain_text`, names and aliases through :func:`plain_name`:

- tags are dropped by nh3 (the ammonia sanitiser) with no tag allowed, ``<script>`` and
  ``<style>`` with their content, comments too; not by our own patterns;
- the entities nh3 writes are decoded once, then ``<`` and ``>`` written as ``&lt;`` and ``&gt;``
  again, so a ``&lt;script&gt;`` the model wrote as text can never turn into a tag later: every
  Markdown viewer shows it as the characters, none parses it as HTML;
- ``javascript:``, ``data:`` and ``vbscript:`` (``UNSAFE_SCHEMES``) are never written: a sentence
  holding one is dropped (:mod:`wiki.extract.llm.grounding` does that with the rest of a prose
  string's checks; :func:`has_unsafe_scheme` is the test).
"""

from __future__ import annotations

import html
import re

import nh3

#: URL schemes that run code or smuggle a document when a viewer follows them.
UNSAFE_SCHEMES = ("javascript", "vbscript", "data")
# "javascript :", "java\tscript:" and entity-spelled colons are read as browsers read them: a
# scheme is letters up to the colon, whitespace and control characters inside it ignored.
_UNSAFE = re.compile(
    r"(?i)\b(?:" + "|".join(r"[\s\x00-\x1f]*".join(s) for s in UNSAFE_SCHEMES) + r")[\s\x00-\x1f]*(?::|&colon;|&#0*58;)"
)


def has_unsafe_scheme(text: str) -> bool:
    """Whether ``text`` holds a ``javascript:``, ``vbscript:`` or ``data:`` scheme (any case,
    spaces or control characters inside the word, the colon as an entity)."""
    return _UNSAFE.search(text) is not None


def drop_tags(text: str) -> str:
    """``text`` with every HTML tag and comment dropped (nh3, no tag allowed; ``<script>`` and
    ``<style>`` with their content) and entities decoded once: the first half of
    :func:`plain_text`, for callers that read the text's Markdown marks (a ``>`` quote mark)
    before :func:`escape_angles`. Line breaks are kept."""
    return html.unescape(nh3.clean(text, tags=set()))


def escape_angles(text: str) -> str:
    """``<`` and ``>`` as ``&lt;`` and ``&gt;``: no tag can form again, every viewer shows them."""
    return text.replace("<", "&lt;").replace(">", "&gt;")


def plain_text(text: str) -> str:
    """``text`` (model prose, Markdown allowed) with every HTML tag and comment dropped
    (:func:`drop_tags`) and ``<``, ``>`` escaped again (:func:`escape_angles`): Markdown that
    shows the text, never HTML. Line breaks are kept (paragraphs of a body)."""
    return escape_angles(drop_tags(text))


def plain_name(text: str) -> str:
    """A model-written name or alias with its entities decoded, so that ``&lt;b&gt;`` is seen as
    the tag it spells: a name holding ``<`` or ``>`` (a tag, written or encoded) is then refused by
    ``wiki.extract.validate_item_name``, never cleaned into a name; "" for a name with an unsafe
    scheme (``javascript:alert(3)``)."""
    decoded = html.unescape(text)
    return "" if has_unsafe_scheme(decoded) else decoded
