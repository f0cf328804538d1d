"""The ``kbwiki`` command: migrate, worker, ingest, status, export, demo; dead-letters, delete,
config, delete-kb, lint, mcp, resume, serve, up, down, kbs, documents, history and revert live in their own
``*_cmd`` modules, registered at the end of this one.

Every command reads settings from the environment. With DATABASE_URL and REDIS_URL unset it uses
the local servers that the home's supervisor runs (``kbwiki.supervisor``, started when none runs)
under the home (``KBWIKI_HOME``, else ``~/.local/share/kbwiki``; see
``kbwiki.services.state.home_folder``), says which on stderr, and applies migrations; with them set
it uses those servers and leaves migrations to ``kbwiki migrate`` (the Procfile's release line).
"""

from __future__ import annotations

import itertools
import json
import sys
from collections import Counter
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
from kbwiki.list_cmd import DEFAULT_PAGE, print_kbs
from kbwiki.servers_cmd import idle_line, refuse_when_down, watched
from repos.db import apply_migrations, database_contents, rollback_migrations
from wiki.errors import BadInput, DocumentsFailed, RollbackRefused, StoreConflict
from wiki.models import DocStatus
from wiki.plural import counted


@main.command()
@click.option(
    "--rollback", is_flag=True, help="Roll back every migration instead: drops every kbwiki table (asks first)."
)
@click.option("--yes", is_flag=True, help="With --rollback: do not ask (needed when stdin is not a terminal).")
@click.option("--force", is_flag=True, help="With --rollback: drop the tables even though KBs hold documents or pages.")
def migrate(rollback: bool, yes: bool, force: bool) -> None:
    """Apply pending database migrations (a no-op when up to date).

    --rollback first says what it drops (the migrations, every table, the KBs, documents and pages
    the database holds) and asks; off a terminal it needs --yes, and while KBs hold documents or
    pages it refuses without --force. A refusal exits 1 and drops nothing.
    """
    if (yes or force) and not rollback:
        raise click.UsageError("--yes and --force go with --rollback")
    with services(migrating=True) as settings:
        if not rollback:
            click.echo(f"applied {counted(apply_migrations(settings.database_url), 'migration')}")
            return
        contents = database_contents(settings.database_url)
        if not contents.migrations:
            click.echo("rolled back 0 migrations (none is applied)")
            return
        drops = f"rolling back drops every kbwiki table ({contents.migrations} migrations)"
        if contents.holds_data and not force:
            raise RollbackRefused(
                f"the database holds {contents.describe()}, and {drops}: nothing was dropped;"
                " back it up (pg_dump) and add --force to drop it"
            )
        summary = f"{drops} with all they hold: {contents.describe()}"
        if not yes and not sys.stdin.isatty():
            raise RollbackRefused(f"{summary}; stdin is not a terminal: nothing was dropped; pass --yes to confirm")
        click.echo(summary)
        if not yes and not click.confirm("Drop them?"):
            raise RollbackRefused("not confirmed: nothing was dropped")
        n = rollback_migrations(settings.database_url, allow_data=force)
        click.echo(f"rolled back {counted(n, 'migration')}")


@main.command()
@click.option("--processes", "-p", default=2, show_default=True, type=click.IntRange(1, 64))
@click.option("--threads", "-t", default=8, show_default=True, type=click.IntRange(1, 256))
@click.option("--watch", is_flag=True, help="Reload workers when code changes (development).")
def worker(processes: int, threads: int, watch: bool) -> None:
    """Run Dramatiq workers on the ``actors`` package until interrupted."""
    from kbwiki.workers import run_workers

    with services(waiting="worker"):  # a worker outwaits servers that refuse it at start
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
@click.option(
    "--set-root",
    is_flag=True,
    help="Make PATH the KB's root folder, for a KB whose folder moved: its documents keep their paths, now under PATH.",
)
def ingest(path: Path, kb_name: str, tenant: int, wait: bool, timeout: float, estimate: bool, set_root: bool) -> None:
    """Store the .md/.rst/.txt/.html documents under PATH and queue them for the wiki.

    A document is named by its path relative to the KB's root folder: the folder its first ingest
    read. PATH may be that folder or anything under it; PATH elsewhere is refused (see --set-root).
    """
    from kbwiki.corpus import iter_folder_docs
    from kbwiki.estimate import estimate_docs
    from kbwiki.ingest import ingest_docs, lane_rows, wait_for_lanes
    from kbwiki.source_root import new_root, path_under_root
    from kbwiki.status import no_worker_warning, status_command

    if estimate and (wait or set_root):
        raise BadInput(f"--estimate stores nothing: {'--wait' if wait else '--set-root'} has nothing to act on")
    with services() as settings:
        deps = command_deps()
        kb = deps.kbs.get_by_name(tenant, kb_name)  # None: a new KB (nothing cached, no root yet)
        stored = kb.source_root if kb else None
        root = new_root(path) if set_root or stored is None else stored
        docs = _documents(iter_folder_docs(path, path_under_root(path, root, kb_name), settings.max_file_mb), path)
        if estimate:
            click.echo(estimate_docs(deps, kb, docs).describe())
            return
        new = kb is None
        kb = find_kb(deps, tenant, kb_name, create=True)
        if new:  # a mistyped name would otherwise make a second KB in silence
            click.echo(f"new knowledge base {kb_name!r} (tenant {tenant})")
        if deps.kbs.claim_source_root(kb.id, root, replace=set_root) != root:  # a concurrent first ingest won
            raise StoreConflict(f"another ingest gave knowledge base {kb_name!r} its root folder meanwhile; run again")
        if root != stored:
            was = f" (was {stored})" if stored else ""
            click.echo(f"knowledge base {kb_name!r} names its documents by their path under {root}{was}")
        report = ingest_docs(deps, kb, docs, progress=True)
        click.echo(report.describe())
        # also when this call queued nothing but the KB still has work waiting: --wait would wait
        # for it in silence
        if (report.queued or lane_rows(deps, kb.id)) and (warning := no_worker_warning(deps)):
            click.echo(warning)
        if wait and not wait_for_lanes(deps, kb, report.queued, timeout):
            raise lanes_timeout(deps, kb, kb_name, timeout)
        if wait and (failed := deps.docs.count_by_status(kb.id).get(DocStatus.failed, 0)):
            # the wiki is complete, but without these documents: say so, and exit 1
            raise DocumentsFailed(
                f"{counted(failed, 'document')} of {kb_name!r} failed and wrote no page"
                f" (reasons: {status_command(kb)}; kbwiki dead-letters list)"
            )


def _documents(docs, path: Path):
    """``docs`` (``iter_folder_docs``) whole, once it has given a document: read up to the first one
    first, so a folder without one stores nothing and makes no KB. Raises ``click.ClickException``
    naming the rejected and skipped files when there is none."""
    from kbwiki.corpus import Rejected
    from kbwiki.ingest import problem_lines, rejected_line

    left_out = []
    for first in docs:
        if not isinstance(first, Rejected):
            return itertools.chain(left_out, [first], docs)
        left_out.append(first)
    lines = problem_lines([rejected_line(r) for r in left_out])
    # files of the right kind that could not be used are named with their reason below
    if len(left_out) == 1:
        found = f"nothing was stored: the one document file under {path} was {left_out[0].status}:"
    elif left_out:
        counts = Counter(r.status for r in left_out)
        how = " or ".join(sorted(counts)) if len(counts) > 1 else next(iter(counts))
        found = f"nothing was stored: all {len(left_out)} document files under {path} were {how}:"
    else:
        found = f"nothing was stored: no .md/.rst/.txt/.html document under {path}"
    raise click.ClickException("\n".join([found, *lines]))


@main.command()
@click.option(
    "--kb",
    "kb_name",
    default=None,
    callback=lambda ctx, param, value: None if value is None else kb_name_param(ctx, param, value),
    help="Knowledge base name (without it: the KBs, as `kbwiki kbs` lists them).",
)
@tenant_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(kb_name: str | None, tenant: int, as_json: bool) -> None:
    """Pages by type, links, orphans, dead links, rows per lane and dead letters of a KB, and
    up to 10 skipped or failed documents with the reason. Without --kb: the first page of
    `kbwiki kbs` (every tenant's KBs unless --tenant is given)."""
    from kbwiki.status import kb_status, status_lines

    base = checked_settings()  # before services(): its settings carry the local servers' URLs
    refuse_when_down(base, err=as_json)
    if kb_name is None:
        given = click.get_current_context().get_parameter_source("tenant") is not click.core.ParameterSource.DEFAULT
        with services():
            deps = command_deps()
            print_kbs(deps, tenant=tenant if given else None, limit=DEFAULT_PAGE, start=None, as_json=as_json)
            # letters of every KB, and of messages naming none (a producer's to a KB that is gone)
            letters = deps.dead_letters.count(tenant_id=tenant if given else None)
        if not as_json:
            if letters:
                click.echo(f"open dead letters: {letters:,} (kbwiki dead-letters list)")
            for line in watched(base):
                click.echo(line)
        return
    with services():
        deps = command_deps()
        report = kb_status(deps, find_kb(deps, tenant, kb_name))
    lines = watched(base)
    if as_json:
        click.echo(json.dumps({**report, "servers": lines}, indent=2))
        return
    for line in [*status_lines(report), *lines]:
        click.echo(line)


def _folder(value: str) -> Path:
    """A folder argument as a Path; "" (the current folder by accident, e.g. an unset variable) is refused."""
    if not value:
        raise click.BadParameter("an empty folder name: name the folder, e.g. ./vault")
    return Path(value)


@main.command()
@kb_option
@tenant_option
@click.option(
    "--replace", is_flag=True, help="Export into a folder holding another KB's export, replacing that export's files."
)
@click.option(
    "--force",
    is_flag=True,
    help="Overwrite (or remove) files of the earlier export that were edited since it wrote them.",
)
@click.argument("out_dir", type=click.Path(file_okay=False), callback=lambda _ctx, _param, value: _folder(value))
def export(kb_name: str, tenant: int, replace: bool, force: bool, out_dir: Path) -> None:
    """Write the KB's wiki to OUT_DIR as an Obsidian-compatible vault.

    OUT_DIR is new, empty or an earlier export; a re-export replaces only the files that export
    wrote (files you added are kept). When you edited one of them since, nothing is written
    unless --force.
    """
    from kbwiki.export import export_vault

    with services():
        deps = command_deps()
        kb = find_kb(deps, tenant, kb_name)
        n = export_vault(
            deps.pages, kb.id, out_dir, kb_name=kb.name, replace=replace, mentions=deps.mentions, force=force
        )
    click.echo(f"exported {n} pages to {out_dir}")


@main.command()
@click.option("--kb", "kb_name", default="python-stdlib", show_default=True, callback=kb_name_param)
@click.option("--out", "out_dir", default="wiki-out", show_default=True, type=click.Path(path_type=Path))
@click.option("--processes", "-p", default=2, show_default=True, type=click.IntRange(1, 64))
@click.option("--threads", "-t", default=4, show_default=True, type=click.IntRange(1, 256))
@click.option("--force", is_flag=True, help="Overwrite files of the earlier export in --out that you edited.")
def demo(kb_name: str, out_dir: Path, processes: int, threads: int, force: bool) -> None:
    """Build a wiki of the Python standard library's documentation, export it and print its numbers."""
    from kbwiki.demo import run_demo

    given = checked_settings()
    with services() as settings:
        code = run_demo(command_deps(), kb_name, out_dir, processes, threads, force=force)
    if not (given.database_url and given.redis_url):
        # the demo's servers outlive it (the home's supervisor): say so, and how they stop
        click.echo(f"kbwiki: the local servers keep running: {idle_line(settings.servers_idle_s)}", err=True)
    sys.exit(code)


# Each module registers its commands on ``main`` (``kbwiki.command``) when imported.
from kbwiki import (  # noqa: E402,F401
    config_cmd,
    dead_letters_cmd,
    delete_cmd,
    lint_cmd,
    list_cmd,
    mcp_cmd,
    resume_cmd,
    revisions_cmd,
    serve_cmd,
    servers_cmd,
)

if __name__ == "__main__":
    main()
