"""The web face's page history: the versions a page keeps, a diff between any two of them, and the
revert button behind the operations sign-in.

- ``/kb/<id>/history/<slug>``: the current version and the earlier ones kept, newest first
  (``kbwiki history``'s lines), with a form picking two versions to compare;
- ``/kb/<id>/diff/<slug>?from=A&to=B``: the unified diff (``difflib``) of their contents and
  which sources one cites and the other does not. Page text is shown as text: every line goes
  through Jinja's autoescape, never through the Markdown renderer, so a version's raw HTML stays
  inert;
- ``/ops/kb/<id>/revert/<slug>?version=V``: what reverting to V changes, and for a signed-in
  operator the button; the form posts to the same path with the session's CSRF token
  (``kbwiki.web.ops``), and the revert is ``stages.revert.write_revert``, the command's own.

The revert lives under ``/ops`` because the session cookie is sent there only. Reading needs no
sign-in, like every page; every route finds the KB among the tenant's (another tenant's is a 404).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from psycopg_pool import ConnectionPool
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from kbwiki.web.ops import operator_form
from kbwiki.web.state import Revert, WebState, render, session, the_kb, the_page, web_state
from repos.knowledge import KnowledgeBaseRepository
from repos.pages import WikiPageRepository
from repos.pending_ops import TaskPendingOpsRepository
from repos.revisions import MAX_READ, PageRevisionRepository
from stages.revert import Reverted, write_revert
from wiki.errors import KnowledgeBaseDeleted, RevertRefused, UnknownKnowledgeBase, UnknownPage
from wiki.models import KnowledgeBase, Page, SourceRef
from wiki.revisions import diff_lines, sources_at, sources_diff

#: Sources a diff names on each side (the rest are counted): a hub page may cite thousands.
SOURCES_SHOWN = 50


def _version(value: str | None) -> int | None:
    """A version number from a query or form field (1 to 9 digits), else None."""
    return int(value) if value and value.isdigit() and len(value) < 10 and int(value) > 0 else None


@dataclass
class Side:
    """One version of a diff: its number, content and sources (None: not kept)."""

    version: int
    content: str
    refs: list[SourceRef] | None
    current: bool


def store_revert(pool: ConnectionPool, revisions_keep: int) -> Revert:
    """Revert through repositories on ``pool`` (page writes keep ``revisions_keep`` revisions).
    The page's cross-link op is queued; a worker's sweeper triggers it (the web holds no broker)."""
    kbs, pages = KnowledgeBaseRepository(pool), WikiPageRepository(pool, revisions_keep=revisions_keep)
    revisions, ops = PageRevisionRepository(pool), TaskPendingOpsRepository(pool)

    def revert(tenant_id: int, kb_id: str, slug: str, version: int) -> Reverted:
        return write_revert(
            tenant_id, kb_id, slug, version, pool=pool, kbs=kbs, pages=pages, revisions=revisions, ops=ops
        )

    return revert


def _sides(s: WebState, kb: KnowledgeBase, page: Page, versions: list[int]) -> list[Side]:
    """The versions asked, from the live page and its revisions (404 for one not kept)."""
    assert page.id is not None
    newer = s.revisions.since(s.tenant_id, kb.id, page.id, min(versions), content_of=versions)
    by_version = {rev.version: rev for rev in newer}
    out = []
    for v in versions:
        if v == page.version:
            out.append(Side(v, page.content, page.source_refs, True))
        elif v in by_version:
            out.append(Side(v, by_version[v].content, sources_at(page.source_refs, newer, v), False))
        else:
            raise HTTPException(404, f"version {v} of this page is not kept")
    return out


def _diff_context(a: Side, b: Side) -> dict:
    lines, cut = diff_lines(a.content, b.content)
    removed, added = sources_diff(a.refs, b.refs) if a.refs is not None and b.refs is not None else (None, None)
    return {
        "a": a,
        "b": b,
        "lines": lines,
        "cut": cut,
        "removed": removed,
        "added": added,
        "shown": SOURCES_SHOWN,
    }


def history(request: Request) -> Response:
    s = web_state(request)
    kb = the_kb(request)
    slug = request.path_params["slug"]
    lines = s.revisions.history(s.tenant_id, kb.id, slug, limit=MAX_READ)
    if lines is None:
        raise HTTPException(404, "no such page")
    reverted = _version(request.query_params.get("reverted"))
    now = _version(request.query_params.get("now"))
    message = f"Reverted to version {reverted}: the page is version {now} now." if reverted and now else ""
    title = the_page(s, kb, slug).title
    return render(request, "page_history.html", kb=kb, slug=slug, title=title, lines=lines, message=message)


def diff(request: Request) -> Response:
    s = web_state(request)
    kb = the_kb(request)
    page = the_page(s, kb, request.path_params["slug"])
    lines = s.revisions.history(s.tenant_id, kb.id, page.slug, limit=1) or []
    earlier = lines[1].version if len(lines) > 1 else page.version
    a = _version(request.query_params.get("from")) or earlier
    b = _version(request.query_params.get("to")) or page.version
    old, new = _sides(s, kb, page, [a, b])
    return render(request, "page_diff.html", kb=kb, page=page, **_diff_context(old, new))


def revert_view(request: Request) -> Response:
    s = web_state(request)
    kb = the_kb(request)
    page = the_page(s, kb, request.path_params["slug"])
    version = _version(request.query_params.get("version"))
    if version is None:
        raise HTTPException(404, "no such version")
    current, target = _sides(s, kb, page, [page.version, version])
    cookie = session(request)
    return render(
        request,
        "page_revert.html",
        kb=kb,
        page=page,
        version=version,
        guard=s.guard,
        signed_in=cookie is not None,
        csrf=s.guard.csrf_value(cookie) if cookie else "",
        **_diff_context(current, target),
    )


async def revert_action(request: Request) -> Response:
    s = web_state(request)
    form = await operator_form(s.guard, request)
    kb = await run_in_threadpool(the_kb, request)
    slug = request.path_params["slug"]
    version = _version(str(form.get("version", "")))
    if version is None:
        raise HTTPException(404, "no such version")
    try:
        done = await run_in_threadpool(s.revert, s.tenant_id, kb.id, slug, version)
    except (UnknownKnowledgeBase, KnowledgeBaseDeleted):
        raise HTTPException(404, "no such knowledge base") from None
    except UnknownPage as exc:
        raise HTTPException(404, str(exc)) from None
    except RevertRefused as exc:
        raise HTTPException(409, f"Not reverted: {exc}") from None
    url = f"/kb/{quote(kb.id, safe='')}/history/{quote(slug, safe='')}"
    return RedirectResponse(f"{url}?reverted={done.version}&now={done.new_version}", status_code=303)


#: The routes of a page's history, diffs and revert (``create_app`` adds them).
ROUTES = [
    Route("/kb/{kb_id}/history/{slug}", history),
    Route("/kb/{kb_id}/diff/{slug}", diff),
    Route("/ops/kb/{kb_id}/revert/{slug}", revert_view),
    Route("/ops/kb/{kb_id}/revert/{slug}", revert_action, methods=["POST"]),
]
