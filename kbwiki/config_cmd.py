"""``kbwiki config --kb NAME [--set KEY=VALUE]... [--unset KEY]...``: show or change a KB's own
settings (``knowledge_bases.wiki_config``: batch size, parallelism, link defer, its model
endpoint...), which win over the ``KBWIKI_*`` settings for that KB (``wiki.kb_config``)."""

from __future__ import annotations

import click

from kbwiki.command import command_deps, find_kb, kb_option, main, services, tenant_option
from wiki.errors import UnknownKnowledgeBase
from wiki.kb_config import changed, shown


@main.command()
@kb_option
@tenant_option
@click.option(
    "--set", "sets", multiple=True, metavar="KEY=VALUE", help="Set a key (repeatable); VALUE is JSON or text."
)
@click.option(
    "--unset", "unsets", multiple=True, metavar="KEY", help="Remove a key: the KBWIKI_* setting applies again."
)
def config(kb_name: str, tenant: int, sets: tuple[str, ...], unsets: tuple[str, ...]) -> None:
    """Show a KB's own settings, or change them (validated as a whole: all or nothing is stored).

    Keys: ingest_batch_size, ingest_map_parallel, crosslink_parallel, link_defer_s, and llm.<name>
    for the KB's model (llm.base_url, llm.model, llm.api_key, llm.token_budget, ...). Workers
    read them at their next batch; a model paused on a configuration error resumes when its
    llm.* settings change.
    """
    with services():
        deps = command_deps()
        kb = find_kb(deps, tenant, kb_name)
        stored = kb.wiki_config.model_dump(exclude_none=True)
        if sets or unsets:
            stored = deps.kbs.update_wiki_config(kb.id, lambda current: changed(current, sets, unsets))
            if stored is None:
                raise UnknownKnowledgeBase(f"knowledge base {kb_name!r} was deleted")
    lines = shown(stored)
    if not lines:
        click.echo(f"{kb_name} has no settings of its own: the KBWIKI_* settings apply")
        return
    click.echo(f"{kb_name}'s own settings (the KBWIKI_* settings apply to the rest):")
    for line in lines:
        click.echo(f"  {line}")
