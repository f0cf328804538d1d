"""``kbwiki history --kb NAME SLUG`` and ``kbwiki revert --kb NAME SLUG VERSION``: a page's kept
versions, and writing one of them again as its new version (``stages.revert``).

``history`` prints the current version and the earlier ones the page keeps
(``KBWIKI_PAGE_REVISIONS_KEEP``, 20), newest first: version, when and by whom it was written,
its size in bytes and how many sources it cited. ``revert`` writes the chosen version's content
and sources through the pipeline's own page write, under the same locks, as a new version; it
refuses, writing nothing, a version that is current or not kept, whose content and sources are
the page's already, whose sources were not kept, or that cites a document deleted since.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click

from kbwiki.command import command_deps, find_kb, kb_option, main, services, tenant_option
from repos.revisions import MAX_READ
from stages.revert import revert_page
from wiki.errors import UnknownPage
from wiki.revisions import RevisionInfo

#: Versions ``history`` prints unless ``--limit`` says otherwise (above the default retention of 20).
DEFAULT_HISTORY = 50


def _when(moment: datetime | None) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds") if moment else "-"


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    """The history's lines: columns padded to their widest cell, two spaces apart, numbers (size,
    sources) to the right."""
    header = ("VERSION", "WRITTEN AT", "WRITTEN BY", "SIZE", "SOURCES")
    lines = [header, *rows]
    widths = [max(len(r[i]) for r in lines) for i in range(len(header))]
    right = {3, 4}
    return [
        "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in lines
    ]


def history_json(line: RevisionInfo) -> dict:
    """One ``kbwiki history --json`` version."""
    return {
        "version": line.version,
        "current": line.current,
        "written_at": _when(line.written_at),
        "written_by": line.written_by,
        "size_bytes": line.size,
        "sources": line.sources,
    }


@main.command("history")
@kb_option
@tenant_option
@click.argument("slug")
@click.option(
    "--limit",
    default=DEFAULT_HISTORY,
    show_default=True,
    type=click.IntRange(1, MAX_READ - 1),
    help="Earlier versions to print at most.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def history(kb_name: str, tenant: int, slug: str, limit: int, as_json: bool) -> None:
    """A page's current version and the earlier ones it keeps, newest first: version, when and by
    whom it was written (batch:<n> a reduce batch, document:<id> one document's ingest or delete,
    crosslink, lead, index, lint, revert:<version>; "-" unknown), its size in bytes and sources."""
    with services():
        deps = command_deps()
        kb = find_kb(deps, tenant, kb_name)
        lines = deps.revisions.history(kb.tenant_id, kb.id, slug, limit=limit + 1)
    if lines is None:
        raise UnknownPage(f"no live page {slug!r} in knowledge base {kb_name!r}")
    shown, more = lines[: limit + 1], len(lines) > limit + 1
    if as_json:
        report = {
            "knowledge_base": {"name": kb.name, "id": kb.id, "tenant_id": kb.tenant_id},
            "slug": slug,
            "versions": [history_json(line) for line in shown],
            "more": more,
        }
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
        return
    rows = [
        (
            f"{line.version} current" if line.current else str(line.version),
            _when(line.written_at),
            line.written_by or "-",
            f"{line.size:,}",
            f"{line.sources:,}",
        )
        for line in shown
    ]
    for text in _table(rows):
        click.echo(text)
    if more:
        click.echo(f"older versions not shown: kbwiki history --kb {kb_name} {slug} --limit {limit * 2}")
    elif len(shown) == 1:
        click.echo("no earlier version kept")


@main.command("revert")
@kb_option
@tenant_option
@click.argument("slug")
@click.argument("version", type=click.IntRange(1, 2**31 - 1))
def revert(kb_name: str, tenant: int, slug: str, version: int) -> None:
    """Write VERSION of the page SLUG again, as its new version (see `kbwiki history`).

    The version's content and sources come back; the page's title, aliases and the facts it is
    rendered from stay, so the next ingest that changes the page writes over the revert (`kbwiki
    lint` reports it). Refused, with nothing written, for the current version, a version not kept,
    one whose content and sources the page already has, and one citing a document deleted since.
    """
    with services():
        deps = command_deps()
        kb = find_kb(deps, tenant, kb_name)
        done = revert_page(kb.tenant_id, kb.id, slug, version, deps)
    click.echo(
        f"reverted {slug} to version {done.version}: it is version {done.new_version} now (cross-linking queued)"
    )
