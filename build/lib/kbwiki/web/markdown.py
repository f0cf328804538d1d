"""A page's Markdown as HTML that cannot run script: ``[[slug|display]]`` become links, then the
HTML is sanitised.

Two layers: markdown-it renders CommonMark with raw HTML off (a ``<script>`` or ``<img onerror>``
in a page's text comes out as text), and nh3 (the ammonia sanitiser) then keeps only an allowlist
of tags and attributes and only http(s), mailto and relative URLs, so a ``javascript:`` link or
anything a future renderer option lets through is dropped too.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import nh3
from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

from wiki.links import parse_links

_WIKILINK = re.compile(r"\[\[[^\[\]\n]*\]\]")

#: Tags and attributes a page's HTML may keep (what CommonMark produces, nothing executable).
ALLOWED_TAGS = {
    "a",
    "p",
    "br",
    "hr",
    "em",
    "strong",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "img",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "class"},
    "img": {"src", "alt", "title"},
    "ol": {"start"},
    "th": {"align"},
    "td": {"align"},
}
ALLOWED_SCHEMES = {"http", "https", "mailto"}


def _wikilink_rule(href: Callable[[str], str], live: Callable[[str], bool]):
    def rule(state: StateInline, silent: bool) -> bool:
        if not state.src.startswith("[[", state.pos):
            return False
        m = _WIKILINK.match(state.src, state.pos)
        links = parse_links(m.group(0)) if m else []
        if not links:
            return False
        if not silent:
            link = links[0]
            token = state.push("link_open", "a", 1)
            token.attrs = {"href": href(link.slug), "class": "wikilink" if live(link.slug) else "wikilink dead"}
            text = state.push("text", "", 0)
            text.content = link.display or link.slug
            state.push("link_close", "a", -1)
        state.pos = m.end()
        return True

    return rule


def render_markdown(content: str, href: Callable[[str], str], live: Callable[[str], bool] = lambda _: True) -> str:
    """``content`` (a page's Markdown) as sanitised HTML. Every ``[[slug|display]]`` outside code
    becomes ``<a class="wikilink" href="{href(slug)}">display</a>`` (class ``dead`` too when
    ``live(slug)`` is False); raw HTML in ``content`` is shown as text."""
    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    md.inline.ruler.before("link", "wikilink", _wikilink_rule(href, live))
    return sanitise(md.render(content))


def sanitise(html: str) -> str:
    """``html`` with only :data:`ALLOWED_TAGS`, :data:`ALLOWED_ATTRIBUTES` and URL schemes kept."""
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=ALLOWED_SCHEMES,
        link_rel="noopener noreferrer",
    )
