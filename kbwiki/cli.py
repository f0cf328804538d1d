"""The ``kbwiki`` command: migrate, worker, ingest, status, export, dead-letters, demo.

Every command reads settings from the environment. With DATABASE_URL and REDIS_URL unset it
starts (or reuses) local servers under the home (``KBWIKI_HOME``, else ``~/.local/share/kbwiki``;
see ``kbwiki.services.home_folder``), says which on stderr, and applies migrations; with them set it
uses those servers and leaves migrations to ``kbwiki migrate`` (the Procfile's release line).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from actors import setup_broker
from actors.deps import Deps, get_deps
from wiki.settings import Settings, get_settings


def checked_settings() -> Settings:
    """The settings, or a one-line error per bad environment variable (not a pydantic traceback)."""
    from pydantic import ValidationError

    try:
        return get_settings()
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else "?"
            var = "DATABASE_URL / REDIS_URL" if field in ("database_url", "redis_url") else f"KBWIKI_{field.upper()}"
            lines.append(f"bad setting {var}={err.get('input')!r}: {err['msg']}")
        raise click.ClickException("\n".join(lines)) from None


def _reachable(settings: Settings) -> None:
    """Fail with one clear line when a configured server does not answer within 5 s."""
    import psycopg
    import redis

    try:
        psycopg.connect(settings.database_url, connect_timeout=5).close()
    except psycopg.Error as exc:
        raise click.ClickException(f"cannot connect to PostgreSQL (DATABASE_URL): {str(exc).strip()}") from None
    try:
        redis.Redis.from_url(settings.redis_url, socket_connect_timeout=5).ping()
    except (redis.RedisError, ValueError) as exc:
        raise click.ClickException(f"cannot connect to Redis (REDIS_URL): {exc}") from None


def _server_gone() -> tuple[type[BaseException], ...]:
    """The errors of a server that stopped or became unreachable while a command ran."""
    import psycopg
    import psycopg_pool
    import redis

    return psycopg.OperationalError, psycopg_pool.PoolTimeout, redis.ConnectionError


#: Where a command's own log lines go, under the home (``KBWIKI_HOME``): never among its output.
COMMAND_LOG = "commands.log"


def command_logs(settings: Settings) -> None:
    """Send this process's logs (JSON lines) to ``commands.log`` in the home
    (``kbwiki.services.home_folder``, also with both URLs set) instead of stderr, so they never
    land among the lines a command prints; stderr is kept when that file cannot be opened. The
    ``worker`` command's Dramatiq processes still log to stderr (they build their own broker)."""
    from kbwiki.services import ServiceError, home_folder
    from middleware.logging import configure_logging

    with contextlib.suppress(OSError, ServiceError):
        configure_logging(settings.log_level, home_folder(settings) / COMMAND_LOG)


def _silence_pool_logs() -> None:
    """Drop psycopg's own log records (pool warnings such as "error connecting in 'kbwiki'") in a
    command's process. Unhandled, Python prints them as plain lines on stderr, in the middle of the
    command's output, and the pool's threads go on logging after the command has failed (between
    its end and its error line); every failure they warn of reaches the command as an exception,
    which it reports in one line. Idempotent."""
    import logging

    logger = logging.getLogger("psycopg")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())
    logger.propagate = False


@contextlib.contextmanager
def services() -> Iterator[Settings]:
    """Settings with servers reachable: the configured ones, or embedded ones started for this command.

    Raises ``click.ClickException`` (one line, exit 1) for bad settings, a home folder that
    cannot be made, a configured server that does not answer, or a server that goes away while
    the command runs (the worker owning the local servers was stopped).
    """
    from kbwiki.services import ServiceError, describe_home, local_services
    from repos.db import apply_migrations

    base = checked_settings()
    embedded = not (base.database_url and base.redis_url)
    with contextlib.ExitStack() as stack:
        try:
            settings = stack.enter_context(local_services(base))
        except ServiceError as exc:
            raise click.ClickException(str(exc)) from None
        except OSError as exc:  # e.g. KBWIKI_HOME names a file
            raise click.ClickException(f"cannot use KBWIKI_HOME={base.home!r} for the local servers: {exc}") from None
        if embedded:  # on stderr: a command's own output (--json) stays clean
            click.echo(f"kbwiki: home {describe_home(Path(settings.home))}", err=True)
        get_settings.cache_clear()  # later reads (the process-wide Deps) see the servers' URLs
        _silence_pool_logs()
        _reachable(settings)
        setup_broker(settings)  # the producer API sends triggers through it; it logs to stderr until:
        command_logs(settings)
        if embedded:
            apply_migrations(settings.database_url)
        try:
            yield settings
        except _server_gone() as exc:
            raise click.ClickException(
                f"the servers went away ({type(exc).__name__}: {str(exc).strip().splitlines()[0]}); was the worker"
                " that owns the local servers stopped? Work queued so far is kept: start `kbwiki worker` and check"
                " `kbwiki status`") from None


def _deps() -> Deps:
    """The process-wide Deps, on the servers ``services()`` made reachable."""
    return get_deps()


def lanes_timeout(kb_name: str, timeout: float) -> click.ClickException:
    """The error of a ``--wait`` that ran out: work is only done while a worker runs."""
    return click.ClickException(f"lanes of {kb_name!r} were not empty after {timeout:.0f} s;"
                                " is a worker running (`kbwiki worker`)?")


def _kb(deps, tenant: int, name: str, create: bool = False):
    kb = deps.kbs.get_or_create(tenant, name) if create else deps.kbs.get_by_name(tenant, name)
    if kb is None:
        raise click.ClickException(f"no knowledge base named {name!r} for tenant {tenant}")
    return kb


def _kb_name(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A KB name as stored (``wiki.models.valid_kb_name``): stripped, 1-255 characters, no newline
    or other control character."""
    from pydantic import ValidationError

    from wiki.models import valid_kb_name

    try:
        return valid_kb_name(value or "")
    except ValidationError as exc:
        raise click.BadParameter(str(exc.errors()[0]["msg"]).removeprefix("Value error, ")) from None


tenant_option = click.option("--tenant", default=1, show_default=True, type=int, help="Tenant id.")
kb_option = click.option("--kb", "kb_name", required=True, callback=_kb_name, help="Knowledge base name.")


@click.group()
def main() -> None:
    """kbwiki: turn a knowledge base of documents into an interlinked, cited wiki."""


@main.command()
@click.option("--rollback", is_flag=True, help="Roll back every migration instead (destroys data).")
def migrate(rollback: bool) -> None:
    """Apply pending database migrations (a no-op when up to date)."""
    from repos.db import apply_migrations, rollback_migrations

    with services() as settings:
        if rollback:
            click.echo(f"rolled back {rollback_migrations(settings.database_url)} migrations")
        else:
            click.echo(f"applied {apply_migrations(settings.database_url)} migrations")


@main.command()
@click.option("--processes", "-p", default=2, show_default=True, type=int)
@click.option("--threads", "-t", default=8, show_default=True, type=int)
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
@click.option("--wait", is_flag=True,
              help="Show progress until the wiki is complete (pages, cross-links and index page written).")
@click.option("--timeout", default=3600, show_default=True, type=float, help="Seconds --wait waits at most.")
def ingest(path: Path, kb_name: str, tenant: int, wait: bool, timeout: float) -> None:
    """Store the .md/.rst/.txt/.html documents under PATH and queue them for the wiki."""
    from kbwiki.corpus import Rejected, iter_folder_docs
    from kbwiki.ingest import ingest_docs, wait_for_lanes
    from kbwiki.status import no_worker_warning

    docs = iter_folder_docs(path)
    rejected = []
    for first in docs:  # read up to the first document: a folder without one creates no KB
        if not isinstance(first, Rejected):
            break
        rejected.append(first)
    else:
        lines = [f"rejected {r.path}: {r.reason}" for r in rejected[:50]]
        raise click.ClickException("\n".join([f"no .md/.rst/.txt/.html document under {path}; nothing was stored",
                                               *lines]))
    with services():
        deps = _deps()
        kb = _kb(deps, tenant, kb_name, create=True)
        report = ingest_docs(deps, kb, itertools.chain(rejected, [first], docs))
        click.echo(report.describe())
        if report.queued and (warning := no_worker_warning(deps)):
            click.echo(warning)
        if wait and not wait_for_lanes(deps, kb, report.queued, timeout):
            raise lanes_timeout(kb_name, timeout)


@main.command()
@kb_option
@tenant_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(kb_name: str, tenant: int, as_json: bool) -> None:
    """Pages by type, links, orphans, dead links, rows per lane and dead letters of a KB, and
    up to 10 skipped or failed documents with the reason."""
    from kbwiki.status import kb_status, status_lines

    with services():
        deps = _deps()
        report = kb_status(deps, _kb(deps, tenant, kb_name))
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    for line in status_lines(report):
        click.echo(line)


@main.command()
@kb_option
@tenant_option
@click.option("--replace", is_flag=True,
              help="Export into a folder holding another KB's export, replacing that export's files.")
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
def export(kb_name: str, tenant: int, replace: bool, out_dir: Path) -> None:
    """Write the KB's wiki to OUT_DIR as an Obsidian-compatible vault.

    OUT_DIR is new, empty or an earlier export; a re-export replaces only the files that export
    wrote (files you added are kept).
    """
    from kbwiki.export import ExportRefused, export_vault

    with services():
        deps = _deps()
        kb = _kb(deps, tenant, kb_name)
        try:
            n = export_vault(deps.pages, kb.id, out_dir, kb_name=kb.name, replace=replace)
        except ExportRefused as exc:
            raise click.ClickException(str(exc)) from None
    click.echo(f"exported {n} pages to {out_dir}")


@main.command()
@click.option("--kb", "kb_name", default="python-stdlib", show_default=True, callback=_kb_name)
@click.option("--out", "out_dir", default="wiki-out", show_default=True, type=click.Path(path_type=Path))
@click.option("--processes", "-p", default=2, show_default=True, type=int)
@click.option("--threads", "-t", default=4, show_default=True, type=int)
def demo(kb_name: str, out_dir: Path, processes: int, threads: int) -> None:
    """Build a wiki of the Python standard library's documentation, export it and print its numbers."""
    from kbwiki.demo import run_demo

    with services():
        sys.exit(run_demo(_deps(), kb_name, out_dir, processes, threads))


from kbwiki import dead_letters_cmd  # noqa: E402,F401  (registers the command)
from kbwiki import delete_cmd  # noqa: E402,F401
from kbwiki import lint_cmd  # noqa: E402,F401  (registers the command)

if __name__ == "__main__":
    main()
