"""``kbwiki delete --kb NAME DOC...`` and ``kbwiki delete-kb --kb NAME --yes``.

A DOC is a knowledge id or the source_uri it was ingested from (``kbwiki ingest`` uses the path
relative to the KB's root folder, ``kbwiki.source_root``). Documents are deleted in batches of
``stages.delete.DELETE_BATCH``, one transaction each, and each batch's lines are printed as it
commits; a running worker removes the documents' pages and citations (``--wait`` shows it finish).
"""

from __future__ import annotations

import click

from kbwiki.command import (
    command_deps,
    find_kb,
    kb_option,
    lanes_timeout,
    main,
    services,
    signals_held,
    tenant_option,
    timeout_option,
)
from stages.delete import DELETE_BATCH, delete_documents, delete_knowledge_base
from wiki.errors import Interrupted, KnowledgeBaseDeleted, UnknownDocument
from wiki.models import printable
from wiki.plural import counted


@main.command()
@kb_option
@tenant_option
@click.argument("docs", nargs=-1, required=True)
@click.option(
    "--wait",
    is_flag=True,
    help="Wait until the wiki is complete again: pages, links and index rewritten (needs a worker).",
)
@timeout_option(600)
def delete(kb_name: str, tenant: int, docs: tuple[str, ...], wait: bool, timeout: float) -> None:
    """Delete documents (knowledge ids or source URIs) from a KB's wiki."""
    from kbwiki.ingest import wait_for_lanes

    with services():
        deps = command_deps()
        kb = find_kb(deps, tenant, kb_name)
        tally = {"deleting": 0, "already_deleted": 0, "unknown": 0}
        try:
            for start in range(0, len(docs), DELETE_BATCH):
                _delete_batch(deps, kb, docs[start : start + DELETE_BATCH], tally)
        except KeyboardInterrupt:
            raise Interrupted(
                f"delete stopped (Ctrl-C) after {tally['deleting'] + tally['already_deleted'] + tally['unknown']}"
                f" of {counted(len(docs), 'document')}: the {tally['deleting']} printed as deleting are deleted"
                " (their pages go on being removed in the workers); run the same command again for the rest"
                " (those say already_deleted)"
            ) from None
        if wait and tally["deleting"] and not wait_for_lanes(deps, kb, tally["deleting"], timeout):
            raise lanes_timeout(deps, kb, kb_name, timeout)
    if tally["unknown"]:
        raise UnknownDocument(f"{tally['unknown']} of {counted(len(docs), 'document')} not found in {kb_name!r}")


def _delete_batch(deps, kb, refs: tuple[str, ...], tally: dict[str, int]) -> None:
    """Delete the documents ``refs`` name in one transaction (``stages.delete.delete_documents``)
    and print one line per ref: ``unknown REF``, or ``deleting`` / ``already_deleted``, the
    knowledge id and the source URI. The commit and its lines are one step for SIGINT, SIGTERM
    and SIGHUP (:func:`kbwiki.command.signals_held`): a stop never leaves a committed delete
    unprinted, nor a printed one uncommitted. Counts each status in ``tally``."""
    found = deps.docs.find_many(kb.id, refs)  # deleted ones too: a rerun says "already_deleted", not "unknown"

    def say(results) -> None:
        by_id = iter(results)
        for ref in refs:
            doc = found.get(ref)
            if doc is None:
                status, line = "unknown", f"unknown {printable(ref)}"
            else:
                status = next(by_id).status
                line = f"{status} {doc.id} {printable(doc.source_uri or doc.title)}"
            tally[status] += 1
            click.echo(line)

    with signals_held():
        delete_documents(kb.tenant_id, kb.id, [found[r].id for r in refs if r in found], deps, on_commit=say)


@main.command("delete-kb")
@kb_option
@tenant_option
@click.option("--yes", is_flag=True, help="Confirm: the KB, its pages and its queued work are removed for good.")
def delete_kb(kb_name: str, tenant: int, yes: bool) -> None:
    """Delete a whole KB: its wiki pages, its queued work, and the KB itself."""
    if not yes:
        raise click.ClickException(f"deleting {kb_name!r} cannot be undone; pass --yes to confirm")
    with services():
        deps = command_deps()
        kb = find_kb(deps, tenant, kb_name)
        result = delete_knowledge_base(kb.tenant_id, kb.id, deps)
    if not result.deleted:
        raise KnowledgeBaseDeleted(f"{kb_name!r} was already deleted")
    click.echo(
        f"deleted {kb_name}: {counted(result.pages, 'page')}, {counted(result.documents, 'document')},"
        f" {counted(result.ops, 'queued op')}"
    )
