"""``kbwiki resume --kb NAME [--reset-budget]``: let a KB whose model work is paused continue now
(``stages.resume``)."""

from __future__ import annotations

import click

from kbwiki.command import command_deps, find_kb, kb_option, main, services, tenant_option
from stages.resume import resume_kb
from wiki.plural import counted


@main.command()
@kb_option
@tenant_option
@click.option(
    "--reset-budget",
    is_flag=True,
    help="Count the KB's token budget from zero again (the usage totals in `kbwiki status` are kept).",
)
def resume(kb_name: str, tenant: int, reset_budget: bool) -> None:
    """Resume a KB's model work paused for credit, a spent token budget or a configuration error.

    After topping up the provider's credit: the paused documents are claimable at once and a
    running worker maps them (if the provider still refuses, the KB pauses again after one call).
    A spent budget needs --reset-budget, or a raised budget (which resumes the KB by itself).
    """
    with services():
        deps = command_deps()
        kb = find_kb(deps, tenant, kb_name)
        result = resume_kb(kb.tenant_id, kb.id, deps, reset_budget=reset_budget)
    if result.budget_reset_from is not None:
        click.echo(f"token budget of {kb_name}: count reset from {counted(result.budget_reset_from, 'token')} to 0")
    if result.pause is None:
        click.echo(f"{kb_name} was not paused; {counted(result.woken, 'waiting document')} made claimable now")
        return
    click.echo(
        f"resumed {kb_name} (was paused for {result.pause.kind}: {result.pause.message});"
        f" {counted(result.woken, 'document')} claimable now"
    )
