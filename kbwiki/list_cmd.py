"""``kbwiki kbs`` and ``kbwiki documents``: what exists, a page at a time.

``kbs`` lists the live KBs (every tenant's, or one's with ``--tenant``): documents by status, pages,
last activity and whether their model work is paused. ``documents --kb NAME`` lists a KB's
documents in source URI order: knowledge id (what ``kbwiki delete`` takes), source URI, title,
status, the number of pages citing it and when it last changed. Both print one page (``--limit``,
default 50) and the command for the next one (``--after CURSOR``, keyset pagination), or JSON with
``--json``. ``kbwiki status`` without ``--kb`` prints the first page of ``kbs``.
"""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime

import click

from kbwiki.command import TENANT_ID, command_deps, find_kb, kb_option, main, services, tenant_option
from repos.listing import LISTED_STATUSES, MAX_LIST_PAGE, DocumentListing, KbListing
from wiki.cursor import decode_cursor, encode_cursor
from wiki.errors import BadInput

#: Rows per page unless ``--limit`` says otherwise.
DEFAULT_PAGE = 50

limit_option = click.option(
    "--limit", default=DEFAULT_PAGE, show_default=True, type=click.IntRange(1, MAX_LIST_PAGE), help="Rows per page."
)
after_option = click.option("--after", default=None, help="The cursor the previous page printed: the next page.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def decode_after(cursor: str, kind: str, types: tuple[type, ...]) -> tuple:
    """``--after``'s sort keys (:func:`wiki.cursor.decode_cursor`); ``click.BadParameter`` (a usage
    error, exit 2) when it is not a cursor this command printed."""
    try:
        return decode_cursor(cursor, kind, types)
    except BadInput:
        raise click.BadParameter(f"{cursor!r} is not a cursor this command printed", param_hint="--after") from None


def _when(moment: datetime | None) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds") if moment else "-"


def _by_status(documents: dict[str, int]) -> str:
    """``done=12 failed=1``: pipeline order, then any other status by name."""
    order = {s: i for i, s in enumerate(LISTED_STATUSES)}
    parts = sorted(documents.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))
    return " ".join(f"{status}={n}" for status, n in parts) or "none"


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """Lines of columns padded to their widest cell (two spaces apart; the last one unpadded)."""
    lines = [header, *rows]
    widths = [max(len(r[i]) for r in lines) for i in range(len(header) - 1)]
    return ["  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]).rstrip() for r in lines]


def _print_page(
    header: tuple[str, ...], cells: list[tuple[str, ...]], argv: list[str], limit: int, cursor: str | None
) -> None:
    """A page's table, then the command that prints the next page (``argv``, then ``--limit`` unless
    it is the default, then ``--after`` the page's ``cursor``), or "end of list" on the last page."""
    for line in _table(header, cells):
        click.echo(line)
    if cursor is None:
        click.echo("end of list")
        return
    argv = [*argv, *(["--limit", str(limit)] if limit != DEFAULT_PAGE else []), "--after", cursor]
    click.echo("next page: " + shlex.join(["kbwiki", *argv]))


def kb_json(kb: KbListing) -> dict:
    """One ``kbwiki kbs --json`` row."""
    return {
        "name": kb.name,
        "id": kb.id,
        "tenant_id": kb.tenant_id,
        "documents": kb.documents,
        "pages": sum(kb.pages.values()),
        "pages_by_type": kb.pages,
        "last_activity": _when(kb.last_activity),
        "paused": {"kind": kb.paused, "since": _when(kb.paused_since)} if kb.paused else None,
    }


def print_kbs(deps, *, tenant: int | None, limit: int, start: tuple | None, as_json: bool) -> None:
    """Print one page of ``kbwiki kbs`` (also ``kbwiki status`` without ``--kb``): the KBs after
    ``start`` (a decoded cursor, None for the first page)."""
    rows = deps.listing.knowledge_bases(tenant_id=tenant, after=start, limit=limit + 1)
    page, more = rows[:limit], len(rows) > limit
    cursor = encode_cursor("kbs", page[-1].tenant_id, page[-1].name) if more else None
    if as_json:
        report = {"knowledge_bases": [kb_json(kb) for kb in page], "next_after": cursor}
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
        return
    if not page:
        whose = "" if tenant is None else f" of tenant {tenant}"
        click.echo(f"no knowledge base{whose}" if start is None else "end of list")
        return
    header = ("NAME", "TENANT", "PAGES", "LAST ACTIVITY", "PAUSED", "DOCUMENTS")
    cells = [
        (
            kb.name,
            str(kb.tenant_id),
            str(sum(kb.pages.values())),
            _when(kb.last_activity),
            kb.paused or "-",
            _by_status(kb.documents),
        )
        for kb in page
    ]
    _print_page(header, cells, ["kbs", *(["--tenant", str(tenant)] if tenant is not None else [])], limit, cursor)


@main.command("kbs")
@click.option("--tenant", default=None, type=TENANT_ID, help="Only this tenant's KBs (default: every tenant's).")
@json_option
@limit_option
@after_option
def kbs(tenant: int | None, as_json: bool, limit: int, after: str | None) -> None:
    """The live knowledge bases: name, tenant, pages, last activity, paused model work, documents
    by status; in (tenant, name) order, a page at a time."""
    start = decode_after(after, "kbs", (int, str)) if after else None  # a bad one starts no server
    with services():
        print_kbs(command_deps(), tenant=tenant, limit=limit, start=start, as_json=as_json)


def document_json(doc: DocumentListing) -> dict:
    """One ``kbwiki documents --json`` row."""
    return {
        "id": doc.id,
        "source_uri": doc.source_uri,
        "title": doc.title,
        "status": doc.status,
        "pages": doc.pages,
        "updated_at": _when(doc.updated_at),
    }


@main.command("documents")
@kb_option
@tenant_option
@click.option("--status", default=None, type=click.Choice(LISTED_STATUSES), help="Only documents in this status.")
@json_option
@limit_option
@after_option
def documents(kb_name: str, tenant: int, status: str | None, as_json: bool, limit: int, after: str | None) -> None:
    """A KB's documents in source URI order: knowledge id (what `kbwiki delete` takes), status,
    pages citing it, last change, source URI and title; a page at a time."""
    start = decode_after(after, "documents", (str, str)) if after else None
    with services():
        deps = command_deps()
        kb = find_kb(deps, tenant, kb_name)
        rows = deps.listing.documents(kb.id, status=status, after=start, limit=limit + 1)
    page, more = rows[:limit], len(rows) > limit
    cursor = encode_cursor("documents", page[-1].source_uri, page[-1].id) if more else None
    if as_json:
        report = {
            "knowledge_base": {"name": kb.name, "id": kb.id, "tenant_id": kb.tenant_id},
            "documents": [document_json(doc) for doc in page],
            "next_after": cursor,
        }
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
        return
    if not page:
        which = f" in status {status}" if status else ""
        click.echo(f"no document{which} in {kb_name!r}" if not after else "end of list")
        return
    header = ("ID", "STATUS", "PAGES", "UPDATED", "SOURCE URI", "TITLE")
    cells = [
        (doc.id, doc.status, str(doc.pages), _when(doc.updated_at), doc.source_uri or "-", doc.title) for doc in page
    ]
    argv = ["documents", "--kb", kb_name, *(["--tenant", str(tenant)] if tenant != 1 else [])]
    _print_page(header, cells, argv + (["--status", status] if status else []), limit, cursor)
