"""``kbwiki lint --kb NAME [--json] [--fix]``: what is wrong with a KB's wiki, and its health score.

Runs the lint walk in this process (``stages.lint.run_lint``), stores the report as the KB's
latest and prints it: the one-line summary, issues by type with severity and whether ``--fix``
can mend them, and a few examples per type. ``--json`` prints the whole report as JSON.
"""

from __future__ import annotations

import click

from kbwiki.command import command_deps, find_kb, kb_option, main, services, tenant_option
from stages.lint import run_lint
from stages.lint_checks import CHECKS
from wiki.plural import noun

#: Examples printed per issue type in the text output (the report keeps up to 20).
EXAMPLES_SHOWN = 5


@main.command()
@kb_option
@tenant_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--fix", is_flag=True, help="Mend broken links, stale source refs, empty pages and unlinked mentions.")
def lint(kb_name: str, tenant: int, as_json: bool, fix: bool) -> None:
    """Check a KB's wiki: broken links, orphans, empty pages, stale sources, unlinked mentions, duplicates."""
    with services():
        deps = command_deps()
        report = run_lint(
            tenant,
            find_kb(deps, tenant, kb_name).id,
            deps,
            fix=fix,
        )
    if as_json:
        click.echo(report.model_dump_json(indent=2))
        return
    click.echo(report.summary)
    width = max(len(check.name) for check in CHECKS)  # the longest name sets the column
    for check in CHECKS:
        type_ = check.name
        fixable = "fixable" if check.fixable else "not fixable"
        line = (
            f"  {type_:<{width}} {report.counts[type_]:>7,}  on {report.pages_affected[type_]:,}"
            f" {noun(report.pages_affected[type_], 'page')}"
            f"  [{check.severity}, {fixable}]"
        )
        if fix:
            line += f"  fixed {report.fixed[type_]:,}"
        click.echo(line)
        for issue in report.samples[type_][:EXAMPLES_SHOWN]:
            click.echo(f"      {issue.page}: {issue.description}")
