"""``kbwiki delete --kb NAME DOC...`` and ``kbwiki delete-kb --kb NAME --yes``.

A DOC is a knowledge id or the source_uri it was ingested from (``kbwiki ingest`` uses the path
relative to the KB's root folder, ``kbwiki.source_root``). Deleting queues a retract per
document; a running worker removes the document's pages and citations (``--wait`` shows it finish).
"""

from __future__ import annotations

import click

from actors.deps import run_stage
from kbwiki.command import (
    command_deps,
    find_kb,
    kb_option,
    lanes_timeout,
    main,
    services,
    tenant_option,
    timeout_option,
)
from stages.delete import delete_document, delete_knowledge_base
from wiki.errors import KnowledgeBaseDeleted, UnknownDocument
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
        queued = missing = 0
        for ref in docs:
            doc = deps.docs.find(kb.id, ref, deleted_too=True)  # a rerun says "already_deleted", not "unknown"
            if doc is None:
                click.echo(f"unknown {ref}")
                missing += 1
                continue
            result = run_stage(delete_document, deps, kb.tenant_id, kb.id, doc.id)
            queued += result.status == "deleting"
            click.echo(f"{result.status} {doc.id} {doc.source_uri or doc.title}")
        if wait and queued and not wait_for_lanes(deps, kb, queued, timeout):
            raise lanes_timeout(deps, kb, kb_name, timeout)
    if missing:
        raise UnknownDocument(f"{missing} of {counted(len(docs), 'document')} not found in {kb_name!r}")


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
        result = run_stage(delete_knowledge_base, deps, kb.tenant_id, kb.id)
    if not result.deleted:
        raise KnowledgeBaseDeleted(f"{kb_name!r} was already deleted")
    click.echo(
        f"deleted {kb_name}: {counted(result.pages, 'page')}, {counted(result.documents, 'document')},"
        f" {counted(result.ops, 'queued op')}"
    )
