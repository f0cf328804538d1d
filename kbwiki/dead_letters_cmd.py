"""``kbwiki dead-letters list|show|requeue|purge``: triage work that failed for good.

Every subcommand first moves the dead letters waiting in the Redis spool (written while
PostgreSQL was down) into the table, so they are listed and requeued like the others. It reads
and deletes only the dead letters of ``--tenant`` (default 1; tenant 0
holds messages that named no tenant), whether by id, by filter or with ``--all``.
Filters shared by ``list``, ``requeue --all`` and ``purge``: ``--kb NAME`` (a KB of the tenant),
``--task-type`` (an actor name, or ``wiki:ingest`` for documents out of retry budget) and
``--since`` (an ISO date/time, naive meaning UTC like the logs, or an age such as ``30m``,
``2h``, ``3d``, ``1w``).

A dead letter whose document later reached done or was deleted is resolved
(``repos.dead_letters``): ``list`` and ``requeue --all`` leave it out; ``list --resolved`` shows it
too, its line ending in ``resolved=<why>``. ``purge`` filters match open and resolved ones alike.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import click

from kbwiki.command import BIGINT_MAX, command_deps, find_kb, kb_name_param, main, services, tenant_option
from stages.requeue import requeue_dead_letter, unspool
from wiki.errors import BadInput, DeadLetterNotFound, RequeueRefused, error_headline
from wiki.plural import counted

#: Rows per page while ``requeue --all`` walks the matching dead letters (the repository's cap).
REQUEUE_PAGE = 200

#: A dead letter's id (``task_dead_letters.id``, a BIGINT identity from 1): 0 or less is a usage error.
DEAD_LETTER_ID = click.IntRange(1, BIGINT_MAX)

_AGE = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class SinceType(click.ParamType):
    """``--since``: an ISO-8601 date or date-time (naive = UTC) or an age like ``2h`` / ``3d``; an aware datetime."""

    name = "since"

    def convert(self, value, param, ctx) -> datetime:
        if isinstance(value, datetime):
            return value
        age = _AGE.match(value)
        if age:
            return datetime.now(UTC) - timedelta(**{_UNITS[age.group(2)]: int(age.group(1))})
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            self.fail(
                f"{value!r} is neither an ISO date/time (2024-05-01T12:00) nor an age (30m, 2h, 3d, 1w)", param, ctx
            )
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Filters:
    """The tenant and dead-letter filters of one command line, as ``TaskDeadLetterRepository.list`` takes them."""

    tenant_id: int
    scope: str | None = None
    scope_id: str | None = None
    task_type: str | None = None
    since: datetime | None = None

    def as_kwargs(self) -> dict:
        return {
            "tenant_id": self.tenant_id,
            "scope": self.scope,
            "scope_id": self.scope_id,
            "task_type": self.task_type,
            "since": self.since,
        }


def _filters(deps, tenant: int, kb_name: str | None, task_type: str | None, since: datetime | None) -> Filters:
    kb_id = find_kb(deps, tenant, kb_name).id if kb_name else None
    return Filters(
        tenant_id=tenant, scope="knowledge_base" if kb_id else None, scope_id=kb_id, task_type=task_type, since=since
    )


def not_found(dead_letter_id: int, tenant: int) -> str:
    """What every subcommand says of an id that names no dead letter of ``tenant`` (exit code 1)."""
    return f"no dead letter {dead_letter_id} of tenant {tenant}"


def _row_line(row, source_uri: str | None = None) -> str:
    scope = f"{row.scope}/{row.scope_id}" if row.scope_id else row.scope
    return (
        f"{row.id}\t{row.failed_at.isoformat(timespec='seconds')}\t{row.task_type}\t{scope}\t"
        f"{row.related_id or '-'}\t{source_uri or '-'}\tfails={row.fail_count}\t{error_headline(row.last_error)}"
        + (f"\tresolved={row.resolution}" if row.resolved_at else "")
    )


def _source_uris(deps, tenant: int, rows) -> dict[int, str]:
    """{dead letter id: source URI of the document its message names}: the tenant's document whose
    knowledge id is the letter's related id (one statement for the page), else the ``source_uri``
    a ``wiki_submit`` message carries (its document may never have been stored). Letters naming no
    document, or a document without a source URI, are left out."""
    stored = deps.docs.source_uris(tenant, [row.related_id for row in rows if row.related_id])
    found = {}
    for row in rows:
        kwargs = row.payload.get("kwargs")
        sent = kwargs.get("source_uri") if isinstance(kwargs, dict) else None
        uri = stored.get(row.related_id) or (sent if isinstance(sent, str) else None)
        if uri:
            found[row.id] = uri
    return found


kb_filter = click.option(
    "--kb",
    "kb_name",
    default=None,
    help="Only dead letters of this knowledge base.",
    callback=lambda ctx, param, value: None if value is None else kb_name_param(ctx, param, value),
)
type_filter = click.option("--task-type", default=None, help="Only this task type (actor name or wiki:ingest).")
since_filter = click.option(
    "--since",
    type=SinceType(),
    default=None,
    help="Only dead letters since an ISO date/time (UTC) or an age: 30m, 2h, 3d, 1w.",
)


@main.group("dead-letters")
def dead_letters() -> None:
    """List, show, requeue or purge dead letters (work that failed for good)."""


def _dead_letter_deps(tenant: int):
    """The deps, once the tenant's dead letters waiting in the Redis spool are in the table
    (``stages.requeue.unspool``)."""
    deps = command_deps()
    unspool(redis=deps.redis, settings=deps.settings, dead_letters=deps.dead_letters, tenant_id=tenant)
    return deps


@dead_letters.command("list")
@kb_filter
@tenant_option
@type_filter
@since_filter
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 200), help="Rows per page.")
@click.option("--cursor", default=None, help="The next-page cursor printed by the previous page.")
@click.option(
    "--resolved",
    "resolved_too",
    is_flag=True,
    help="Also list resolved dead letters (their document reached done or was deleted).",
)
def list_cmd(kb_name, tenant, task_type, since, limit, cursor, resolved_too) -> None:
    """One line per open dead letter (with --resolved: resolved ones too), newest first: id, failed
    at, task type, scope, related id, the source URI of the document it names, fails, error, and
    ``resolved=<why>`` for a resolved one."""
    with services():
        deps = _dead_letter_deps(tenant)
        filters = _filters(deps, tenant, kb_name, task_type, since)
        try:
            rows = deps.dead_letters.list(**filters.as_kwargs(), cursor=cursor, limit=limit, resolved_too=resolved_too)
        except BadInput as exc:
            raise click.BadParameter(str(exc), param_hint="--cursor") from None
        sources = _source_uris(deps, tenant, rows)
    for row in rows:
        click.echo(_row_line(row, sources.get(row.id)))
    if len(rows) == limit:
        click.echo(f"next page: --cursor {rows[-1].id}")
    else:
        click.echo(f"{counted(len(rows), 'dead letter')}, end of list")


@dead_letters.command("show")
@click.argument("dead_letter_id", type=DEAD_LETTER_ID)
@tenant_option
def show_cmd(dead_letter_id: int, tenant: int) -> None:
    """Every field of one dead letter: the payload as JSON and the whole error."""
    with services():
        row = _dead_letter_deps(tenant).dead_letters.get(dead_letter_id, tenant_id=tenant)
    if row is None:
        raise DeadLetterNotFound(not_found(dead_letter_id, tenant))
    for field in ("id", "failed_at", "task_type", "tenant_id", "scope", "scope_id", "related_id", "fail_count"):
        value = getattr(row, field)
        click.echo(f"{field}: {value.isoformat() if isinstance(value, datetime) else value}")
    if row.resolved_at:
        click.echo(f"resolved_at: {row.resolved_at.isoformat()}")
        click.echo(f"resolution: {row.resolution}")
    click.echo("payload:")
    click.echo(json.dumps(row.payload, indent=2, sort_keys=True, ensure_ascii=False))
    click.echo("last_error:")
    click.echo(row.last_error)


@dead_letters.command("requeue")
@click.argument("ids", nargs=-1, type=DEAD_LETTER_ID)
@click.option("--all", "all_matching", is_flag=True, help="Requeue every dead letter matching the filters.")
@kb_filter
@tenant_option
@type_filter
@since_filter
def requeue_cmd(ids, all_matching, kb_name, tenant, task_type, since) -> None:
    """Requeue dead letters by ID (or --all matching the filters) and remove them.

    A ``wiki:ingest`` letter goes back to its KB's ingest lane with a fresh retry budget; any other
    is re-sent as the stored Dramatiq message with its retries reset. A letter that cannot be
    requeued is kept and reported; the exit code is then 1.
    """
    if bool(ids) == all_matching:
        raise click.UsageError("give dead-letter IDs or --all (with optional filters), not both and not neither")
    if ids and (kb_name or task_type or since):
        raise click.UsageError("--kb, --task-type and --since only apply with --all")
    done = failed = 0
    with services():
        deps = _dead_letter_deps(tenant)
        # an id given twice is requeued once (its second turn would find it gone)
        targets = list(dict.fromkeys(ids)) or _matching_ids(deps, _filters(deps, tenant, kb_name, task_type, since))
        for dead_letter_id in targets:
            try:
                outcome = requeue_dead_letter(dead_letter_id, deps, tenant_id=tenant)
            except (DeadLetterNotFound, RequeueRefused) as exc:
                failed += 1
                why = not_found(dead_letter_id, tenant) if isinstance(exc, DeadLetterNotFound) else exc
                click.echo(f"{dead_letter_id}\tnot requeued: {why}", err=True)
                continue
            done += 1
            click.echo(f"{dead_letter_id}\t{outcome}")
    click.echo(f"requeued {done}, failed {failed}")
    if failed:
        click.get_current_context().exit(1)


def _matching_ids(deps, filters: Filters) -> list[int]:
    """Ids of every matching dead letter, newest first, read page by page (ids only are kept)."""
    found: list[int] = []
    cursor = None
    while True:
        page = deps.dead_letters.list(**filters.as_kwargs(), cursor=cursor, limit=REQUEUE_PAGE)
        found += [row.id for row in page]
        if len(page) < REQUEUE_PAGE:
            return found
        cursor = page[-1].id


@dead_letters.command("purge")
@click.argument("ids", nargs=-1, type=DEAD_LETTER_ID)
@click.option(
    "--all", "everything", is_flag=True, help="Delete every dead letter matching the filters (all with none)."
)
@kb_filter
@tenant_option
@type_filter
@since_filter
def purge_cmd(ids, everything, kb_name, tenant, task_type, since) -> None:
    """Delete the tenant's dead letters: by ID, or by filters, or every one with --all.

    An ID that names no dead letter of the tenant is reported (one line each) and the exit code is
    then 1, as with ``requeue``; the other IDs are purged.
    """
    filtered = everything or kb_name or task_type or since
    if not (ids or filtered):
        raise click.UsageError(
            "purge needs dead-letter IDs, a filter (--kb, --task-type, --since) or --all; nothing was deleted"
        )
    if ids and filtered:
        raise click.UsageError("give dead-letter IDs or filters (--kb, --task-type, --since, --all), not both")
    missing = 0
    with services():
        deps = _dead_letter_deps(tenant)
        if ids:
            n = 0
            for dead_letter_id in dict.fromkeys(ids):  # an id given twice is purged once
                if deps.dead_letters.delete(dead_letter_id, tenant_id=tenant):
                    n += 1
                else:
                    missing += 1
                    click.echo(f"{dead_letter_id}\tnot purged: {not_found(dead_letter_id, tenant)}", err=True)
        else:
            filters = _filters(deps, tenant, kb_name, task_type, since)
            n = deps.dead_letters.purge(everything=everything, **filters.as_kwargs())
    click.echo(f"purged {counted(n, 'dead letter')}" + (f", {missing} not found" if missing else ""))
    if missing:
        click.get_current_context().exit(1)
