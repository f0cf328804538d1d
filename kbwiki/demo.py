"""``kbwiki demo``: a wiki of the Python standard library's documentation, end to end."""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import click

from kbwiki.corpus import iter_stdlib_docs
from kbwiki.export import edited_files, edited_message, export_vault, read_marker
from kbwiki.ingest import ingest_docs, wait_for_lanes
from kbwiki.services.state import home_folder
from kbwiki.status import NOT_WRITTEN_STATUSES, kb_status
from kbwiki.vault import check_vault
from kbwiki.workers import start_workers, stop_workers
from stages.deps import Deps
from wiki.errors import ExportEdited, Interrupted

DEMO_TIMEOUT_S = 900


def run_demo(deps: Deps, kb_name: str, out_dir: Path, processes: int, threads: int, force: bool = False) -> int:
    """Start workers, ingest the stdlib docs, wait, export, print the numbers; returns an exit code.

    Raises ``ExportEdited`` when files of the earlier export in ``out_dir`` were edited, unless ``force``.
    """
    # before minutes of work, not at the export: a file of the earlier export you edited stops it
    earlier = read_marker(out_dir) if out_dir.is_dir() else None
    if earlier is not None and not force and (edited := edited_files(out_dir, earlier)).count:
        # `make demo` takes no options: name the command that does
        raise ExportEdited(f"{edited_message(out_dir, edited)} (`.venv/bin/kbwiki demo --force`)")
    started = time.monotonic()
    kb = deps.kbs.get_or_create(1, kb_name)
    # settings.home is None when DATABASE_URL and REDIS_URL name servers of your own
    log_path = home_folder(deps.settings) / "demo-worker.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    workers = start_workers(processes, threads, log_path)
    try:
        report = ingest_docs(deps, kb, iter_stdlib_docs(), progress=True)
        click.echo(f"submitted: {report.describe()}")
        drained = wait_for_lanes(deps, kb, report.queued, DEMO_TIMEOUT_S)
    except Interrupted:  # the workers that would go on are the demo's own, stopped below
        raise Interrupted(
            "the demo stopped (Ctrl-C), and its workers with it; the queued work is kept:"
            " `kbwiki demo` again (or `kbwiki worker`) finishes it"
        ) from None
    finally:
        stop_workers(workers)
    if not drained:
        click.echo(f"lanes did not drain within {DEMO_TIMEOUT_S} s; worker log: {log_path}", err=True)
        return 1
    # the demo's folder holds the demo: an earlier export of a KB of the same name (one deleted
    # with delete-kb and built again) is replaced; any other folder's export is refused as usual
    earlier = read_marker(out_dir) if out_dir.is_dir() else None
    replace = earlier is not None and earlier.kb_name == kb.name
    pages = export_vault(
        deps.pages, kb.id, out_dir, kb_name=kb.name, mentions=deps.mentions, replace=replace, force=force
    )
    vault = check_vault(out_dir)
    status = kb_status(deps, kb)
    elapsed = time.monotonic() - started
    by_type = status["pages"]
    click.echo("pages by type: " + ", ".join(f"{k}={v}" for k, v in sorted(by_type.items())))
    click.echo(
        f"links: {status['links']['links']}  orphans: {status['links']['orphans']}  "
        f"dead links: {status['links']['dead_links']}"
    )
    click.echo(f"vault: {out_dir}/ files={pages} links={vault.links} dead links={vault.dead}")
    click.echo(f"dead letters: {status['dead_letters']}  time: {elapsed:.1f} s")
    not_written = not_written_summary(status, kb_name)
    if not_written:
        click.echo(not_written)
    return 0 if vault.dead == 0 and status["links"]["dead_links"] == 0 else 1


def not_written_summary(status: dict, kb_name: str) -> str:
    """One line naming the skipped and failed document counts of a ``kb_status`` report and where
    to read the reasons, or "" when every document was written."""
    counts = {k: status["documents"].get(k, 0) for k in NOT_WRITTEN_STATUSES}
    if not any(counts.values()):
        return ""
    shown = ", ".join(f"{k}={v}" for k, v in counts.items() if v)
    return f"documents not written: {shown} (reasons: kbwiki status --kb {shlex.quote(kb_name)})"
