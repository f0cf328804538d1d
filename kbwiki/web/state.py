"""What every route handler of the web face reads: the app's :class:`WebState` on ``app.state``,
and the helpers each page uses (render a template, find the URL's KB, the operator's session, a
page's HTML, a KB view's URL)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

from prometheus_client import CollectorRegistry
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from kbwiki.outage import OutageLog
from kbwiki.web.markdown import render_markdown
from kbwiki.web.ops import COOKIE, OpsGuard
from repos.dead_letters import TaskDeadLetterRepository
from repos.lint import LintRepository
from repos.pages import WikiPageRepository
from repos.revisions import PageRevisionRepository
from repos.web import WebRepository
from stages.revert import Reverted
from wiki.links import out_link_slugs
from wiki.models import KnowledgeBase, Page

#: ``requeue(dead_letter_id, tenant_id) -> outcome``: ``stages.requeue.requeue_dead_letter`` on
#: the process's deps; raises ``DeadLetterNotFound`` / ``RequeueRefused``.
Requeue = Callable[[int, int], str]

#: ``revert(tenant_id, kb_id, slug, version) -> Reverted``; raises what ``stages.revert.write_revert`` raises.
Revert = Callable[[int, str, str, int], Reverted]


def _quote(value: str) -> str:
    return quote(value, safe="")


def kb_url(kb_id: str, *parts: str) -> str:
    """The path of a KB's view: ``/kb/<id>/<part>/...`` with each part percent-encoded."""
    return "/".join([f"/kb/{_quote(kb_id)}", *(_quote(p) for p in parts)])


class TtlCache:
    """Values computed at most once per ``ttl_s`` seconds per key (thread-safe enough: two
    threads may both compute a missing value; the last one is kept)."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._values: dict[object, tuple[float, object]] = {}

    def get(self, key: object, compute: Callable[[], object]):
        hit = self._values.get(key)
        if hit is None or time.monotonic() - hit[0] > self.ttl_s:
            hit = (time.monotonic(), compute())
            self._values[key] = hit
        return hit[1]


@dataclass(frozen=True)
class WebState:
    """What the web face's route handlers read, one per app (``app.state.web``): the tenant it
    serves, its repositories, the ops guard, how a dead letter is requeued and a page reverted, the
    templates, the page counts' cache, the metrics registry and the outage log."""

    tenant_id: int
    web: WebRepository
    pages: WikiPageRepository
    lint: LintRepository
    dead_letters: TaskDeadLetterRepository
    guard: OpsGuard
    requeue: Requeue
    templates: Jinja2Templates
    counts: TtlCache
    registry: CollectorRegistry
    outage: OutageLog
    revisions: PageRevisionRepository
    revert: Revert


def web_state(request: Request) -> WebState:
    """The app's :class:`WebState` (``app.state.web``)."""
    return request.app.state.web


def render(request: Request, name: str, status_code: int = 200, **context) -> Response:
    """The template ``name`` rendered with ``context`` (the app's templates)."""
    return web_state(request).templates.TemplateResponse(request, name, context, status_code=status_code)


def session(request: Request) -> str | None:
    """The request's session cookie when it is an open session, else None."""
    cookie = request.cookies.get(COOKIE)
    return cookie if web_state(request).guard.signed_in(cookie) else None


def the_kb(request: Request) -> KnowledgeBase:
    """The tenant's live KB the URL names; 404 otherwise (unknown, deleted, another tenant's)."""
    s = web_state(request)
    kb = s.web.kb(s.tenant_id, request.path_params["kb_id"])
    if kb is None:
        raise HTTPException(404, "no such knowledge base")
    return kb


def the_page(s: WebState, kb: KnowledgeBase, slug: str) -> Page:
    """The live page ``slug`` of ``kb`` (the tenant's: ``the_kb``); 404 otherwise."""
    page = s.web.page(s.tenant_id, kb.id, slug)
    if page is None:
        raise HTTPException(404, "no such page")
    return page


def page_html(s: WebState, kb: KnowledgeBase, content: str) -> str:
    """A page's Markdown as sanitised HTML, its links to pages that are gone struck through."""
    live = s.pages.existing_slugs(kb.id, out_link_slugs(content))  # kb is the tenant's (the_kb)
    return render_markdown(content, lambda slug: kb_url(kb.id, "page", slug), lambda slug: slug in live)
