"""The ``kbwiki`` command: migrate, worker, ingest, status, export, demo; dead-letters, delete,
delete-kb, lint and resume live in their own ``*_cmd`` modules, registered at the end of this one.

Every command reads settings from the environment. With DATABASE_URL and REDIS_URL unset it
starts (or reuses) local servers under the home (``KBWIKI_HOME``, else ``~/.local/share/kbwiki``;
see ``kbwiki.services.home_folder``), says which on stderr, and applies migrations; with them set it
uses those servers and leaves migrations to ``kbwiki migrate`` (the Procfile's release line).
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import click

from kbwiki.command import (
    checked_settings,
    command_deps,
    find_kb,
    kb_name_param,
    kb_option,
    lanes_timeout,
    main,
    services,
    tenant_option,
    timeout_option,
)
from wiki.errors import DocumentsFailed
from wiki.plural import counted


@main.command()
@click.option("--rollback", is_flag=True, help="Roll back every migration instead (destroys data).")
def migrate(rollback: bool) -> None:
    """Apply pending database migrations (a no-op when up to date)."""
    from repos.db import apply_migrations, rollback_migrations

    with services(migrating=True) as settings:
        if rollback:
            click.echo(f"rolled back {rollback_migrations(settings.database_url)} migrations")
        else:
            click.echo(f"applied {apply_migrations(settings.database_url)} migrations")


@main.command()
@click.option("--processes", "-p", default=2, show_default=True, type=click.IntRange(1, 64))
@click.option("--threads", "-t", default=8, show_default=True, type=click.IntRange(1, 256))
@click.option("--watch", is_flag=True, help="Reload workers when code changes (development).")
def worker(processes: int, threads: int, watch: bool) -> None:
    """Run Dramatiq workers on the ``actors`` package until interrupted."""
    from kbwiki.workers import run_workers

    with services():
        sys.exit(run_workers(processes, threads, watch=watch))


@main.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@kb_option
@tenant_option
@click.option(
    "--wait", is_flag=True, help="Show progress until the wiki is complete (pages, cross-links and index page written)."
)
@timeout_option(3600)
@click.option(
    "--estimate",
    is_flag=True,
    help="Print the model calls, tokens and price ingesting PATH would cost; store, queue and call nothing.",
)
def ingest(path: Path, kb_name: str, tenant: int, wait: bool, timeout: float, estimate: bool) -> None:
    """Store the .md/.rst/.txt/.html documents under PATH and queue them for the wiki."""
    from kbwiki.corpus import Rejected, iter_folder_docs
    from kbwiki.ingest import estimate_docs, ingest_docs, lane_rows, problem_lines, rejected_line, wait_for_lanes
    from kbwiki.status import no_worker_warning, status_command

    docs = iter_folder_docs(path, checked_settings().max_file_mb)
    rejected = []
    for first in docs:  # read up to the first document: a folder without one creates no KB
        if not isinstance(first, Rejected):
            break
        rejected.append(first)
    else:
        lines = problem_lines([rejected_line(r) for r in rejected])
        # files of the right kind that could not be read are named with their reason below
        if len(rejected) == 1:
            found = f"nothing was stored: the one document file under {path} was rejected:"
        elif rejected:
            found = f"nothing was stored: all {len(rejected)} document files under {path} were rejected:"
        else:
            found = f"nothing was stored: no .md/.rst/.txt/.html document under {path}"
        raise click.ClickException("\n".join([found, *lines]))
    if estimate:
        with services():
            deps = command_deps()
            kb = deps.kbs.get_by_name(tenant, kb_name)  # None: a new KB (nothing cached)
            click.echo(estimate_docs(deps, kb, itertools.chain(rejected, [first], docs)).describe())
        return
    with services():
        deps = command_deps()
        new = deps.kbs.get_by_name(tenant, kb_name) is None
        kb = find_kb(deps, tenant, kb_name, create=True)
        if new:  # a mistyped name would otherwise make a second KB in silence
            click.echo(f"new knowledge base {kb_name!r} (tenant {tenant})")
        report = ingest_docs(deps, kb, itertools.chain(rejected, [first], docs), progress=True)
        click.echo(report.describe())
        # also when this call queued nothing but the KB still has work waiting: --wait would wait
        # for it in silence
        if (report.queued or lane_rows(deps, kb.id)) and (warning := no_worker_warning(deps)):
            click.echo(warning)
        if wait and not wait_for_lanes(deps, kb, report.queued, timeout):
            raise lanes_timeout(deps, kb, kb_name, timeout)
        if wait and (failed := deps.docs.count_by_status(kb.id).get("failed", 0)):
            # the wiki is complete, but without these documents: say so, and exit 1
            raise DocumentsFailed(
                f"{counted(failed, 'document')} of {kb_name!r} failed and wrote no page"
                f" (reasons: {status_command(kb)}; kbwiki dead-letters list)"
            )


@main.command()
@kb_option
@tenant_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(kb_name: str, tenant: int, as_json: bool) -> None:
    """Pages by type, links, orphans, dead links, rows per lane and dead letters of a KB, and
    up to 10 skipped or failed documents with the reason."""
    from kbwiki.status import kb_status, status_lines

    with services():
        deps = command_deps()
        report = kb_status(deps, find_kb(deps, tenant, kb_name))
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    for line in status_lines(report):
        click.echo(line)


@main.command()
@kb_option
@tenant_option
@click.option(
    "--replace", is_flag=True, help="Export into a folder holding another KB's export, replacing that export's files."
)
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
def export(kb_name: str, tenant: int, replace: bool, out_dir: Path) -> None:
    """Write the KB's wiki to OUT_DIR as an Obsidian-compatible vault.

    OUT_DIR is new, empty or an earlier export; a re-export replaces only the files that export
    wrote (files you added are kept).
    """
    from kbwiki.export import export_vault

    with services():
        deps = command_deps()
        kb = find_kb(deps, tenant, kb_name)
        n = export_vault(deps.pages, kb.id, out_dir, kb_name=kb.name, replace=replace, mentions=deps.mentions)
    click.echo(f"exported {n} pages to {out_dir}")


@main.command()
@click.option("--kb", "kb_name", default="python-stdlib", show_default=True, callback=kb_name_param)
@click.option("--out", "out_dir", default="wiki-out", show_default=True, type=click.Path(path_type=Path))
@click.option("--processes", "-p", default=2, show_default=True, type=click.IntRange(1, 64))
@click.option("--threads", "-t", default=4, show_default=True, type=click.IntRange(1, 256))
def demo(kb_name: str, out_dir: Path, processes: int, threads: int) -> None:
    """Build a wiki of the Python standard library's documentation, export it and print its numbers."""
    from kbwiki.demo import run_demo

    with services():
        sys.exit(run_demo(command_deps(), kb_name, out_dir, processes, threads))


# Each module registers its commands on ``main`` (``kbwiki.command``) when imported.
from kbwiki import dead_letters_cmd, delete_cmd, lint_cmd, resume_cmd, serve_cmd  # noqa: E402,F401

if __name__ == "__main__":
    main()
