"""What every ``kbwiki`` command shares: the command group, its options, the servers it runs
against, and how a refusal ends it (one line and an exit code, :data:`EXIT_CODES`).

Command modules (``kbwiki.cli`` and the ``*_cmd`` modules) import from here; ``kbwiki.cli``
imports them to register their commands, so no module imports the one that imports it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import click
import psycopg
import psycopg_pool
import redis
from pydantic import ValidationError
from pydantic_settings import SettingsError

from actors import setup_broker
from middleware.logging import configure_logging
from repos.db import apply_migrations, pending_migrations
from repos.knowledge import COUNT_LIVE_CAP
from stages.deps import Deps, get_deps
from stages.llm_gate import RESUME_HINT
from wiki.errors import (
    BadInput,
    BadSetting,
    DatabaseUnreachable,
    Interrupted,
    KbwikiError,
    RedisUnreachable,
    SchemaOutdated,
    ServersUnreachable,
    ServiceError,
    UnknownKnowledgeBase,
    WaitTimedOut,
)
from wiki.models import valid_kb_name
from wiki.plural import counted
from wiki.settings import SECRET_SETTINGS, Settings, get_settings

#: The exit code of a command that ends on each kind of refusal (the most specific class listed in
#: the error's MRO wins). The line printed is ``Error: <the error's message>``. 2 is click's own
#: code for a usage error; a command the user stopped (Ctrl-C) exits 130 like any command a shell's
#: Ctrl-C ends, and its line has no "Error: " (nothing went wrong); every other refusal exits 1.
EXIT_CODES: dict[type[KbwikiError], int] = {
    BadInput: 2,
    BadSetting: 1,
    UnknownKnowledgeBase: 1,
    ServersUnreachable: 1,
    WaitTimedOut: 1,
    Interrupted: 130,
    KbwikiError: 1,
}


def exit_code(exc: KbwikiError) -> int:
    """The exit code :data:`EXIT_CODES` gives ``exc``'s kind."""
    return next(EXIT_CODES[kind] for kind in type(exc).__mro__ if kind in EXIT_CODES)


class Stopped(click.ClickException):
    """A command the user stopped: its message says what goes on, on stderr, without "Error: "."""

    def show(self, file=None) -> None:
        click.echo(self.format_message(), err=True)


def click_error(exc: KbwikiError) -> click.ClickException:
    """``exc`` as the ``click.ClickException`` that prints ``Error: <message>`` (``<message>`` alone
    for an ``Interrupted``) and exits with its code."""
    error = (Stopped if isinstance(exc, Interrupted) else click.ClickException)(str(exc))
    error.exit_code = exit_code(exc)
    return error


#: The signals that stop a command and that :func:`signals_held` holds: Ctrl-C, ``kill``, a closed terminal.
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold :data:`HELD_SIGNALS` for the block, then act on those that came (their earlier handler
    runs, or their default action: SIGINT raises ``KeyboardInterrupt``, SIGTERM ends the process).

    For a step that commits and then says what it committed: a stop lands before or after both,
    so what was printed is what was done. SIGKILL cannot be held (a rerun of an idempotent step
    says what it had done). Outside the main thread signals cannot be handled: the block runs as is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    earlier = {sig: signal.signal(sig, lambda signum, _frame: came.append(signum)) for sig in HELD_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in earlier.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        for sig in dict.fromkeys(came):
            signal.raise_signal(sig)


class KbwikiGroup(click.Group):
    """A click group that ends any command (and subcommand) raising a ``KbwikiError`` with
    :func:`click_error`: one line on stderr, no traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KbwikiError as exc:
            raise click_error(exc) from None


@click.group(cls=KbwikiGroup)
def main() -> None:
    """kbwiki: turn a knowledge base of documents into an interlinked, cited wiki."""


def checked_settings() -> Settings:
    """The settings, or ``BadSetting`` with one line per bad environment variable (not a pydantic traceback)."""
    try:
        return get_settings()
    except SettingsError as exc:  # a JSON-valued variable that is not JSON ("error parsing value for field ...")
        field = re.search(r'field "(\w+)"', str(exc))
        var = f"KBWIKI_{field.group(1).upper()}" if field else "a JSON-valued KBWIKI_ variable"
        raise BadSetting(
            f"bad setting {var}={os.environ.get(var, '')!r}: not JSON (a JSON object is expected,"
            " e.g. '{\"temperature\": 0}')"
        ) from None
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else "?"
            var = "DATABASE_URL / REDIS_URL" if field in ("database_url", "redis_url") else f"KBWIKI_{field.upper()}"
            shown = "(hidden)" if field in SECRET_SETTINGS else repr(err.get("input"))
            lines.append(f"bad setting {var}={shown}: {err['msg']}")
        raise BadSetting("\n".join(lines)) from None


def _reachable(settings: Settings) -> None:
    """Raise ``ServersUnreachable`` with one clear line when a configured server does not answer within 5 s."""
    from repos.servers import check_database, check_redis

    try:
        check_database(settings.database_url, timeout_s=5)
    except DatabaseUnreachable as exc:
        raise DatabaseUnreachable(f"cannot connect to PostgreSQL (DATABASE_URL): {exc}") from exc.__cause__
    try:
        check_redis(settings.redis_url, timeout_s=5)
    except RedisUnreachable as exc:
        raise RedisUnreachable(f"cannot connect to Redis (REDIS_URL): {exc}") from exc.__cause__


def _server_gone() -> tuple[type[BaseException], ...]:
    """The errors of a server that stopped or became unreachable while a command ran: ours, and
    the drivers' own where code below the repositories still lets them through (Redis clients)."""
    return ServersUnreachable, psycopg.OperationalError, psycopg_pool.PoolTimeout, redis.ConnectionError


#: Where a command's own log lines go, under the home (``KBWIKI_HOME``): never among its output.
COMMAND_LOG = "commands.log"


def command_logs(settings: Settings) -> None:
    """Send this process's logs (JSON lines) to ``commands.log`` in the home
    (``kbwiki.services.state.home_folder``, also with both URLs set) instead of stderr, so they never
    land among the lines a command prints; stderr is kept when that file cannot be opened. The
    ``worker`` command's Dramatiq processes still log to stderr (they build their own broker)."""
    from kbwiki.services.state import home_folder

    with contextlib.suppress(OSError, ServiceError):
        configure_logging(settings.log_level, home_folder(settings) / COMMAND_LOG)


def _silence_pool_logs() -> None:
    """Drop psycopg's own log records (pool warnings such as "error connecting in 'kbwiki'") in a
    command's process. Unhandled, Python prints them as plain lines on stderr, in the middle of the
    command's output, and the pool's threads go on logging after the command has failed (between
    its end and its error line); every failure they warn of reaches the command as an exception,
    which it reports in one line. Idempotent."""
    logger = logging.getLogger("psycopg")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())
    logger.propagate = False


T = TypeVar("T")

#: How a command that waits for its servers at start (``kbwiki worker``) paces its tries: 1 s,
#: doubling up to 30 s between two (a PostgreSQL whose connection slots are all taken frees one
#: within seconds to minutes; a server that is down comes back when someone starts it).
START_WAIT_MIN_S = 1.0
START_WAIT_MAX_S = 30.0


def _refused(exc: BaseException) -> bool:
    """Whether ``exc`` is a server refusing or not answering (worth another try): ours, or the
    driver's from yoyo's own connection (``FATAL: too many connections``, SQLSTATE 53300)."""
    return isinstance(exc, ServersUnreachable | psycopg.OperationalError)


def _until_connected(command: str, connect: Callable[[], T]) -> T:
    """Call ``connect`` until it stops raising a refusal (:func:`_refused`) and return what it
    returns, waiting ``START_WAIT_MIN_S`` doubling up to ``START_WAIT_MAX_S`` between tries, with
    one line on stderr per try saying why (``kbwiki worker: cannot connect to PostgreSQL
    (DATABASE_URL): ... FATAL: too many connections for role "kb"; trying again in 4 s (try 3)``).
    Other errors pass at once; Ctrl-C stops the wait."""
    import tenacity

    def say(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        said = " ".join(str(exc).split()) or type(exc).__name__
        wait = state.next_action.sleep if state.next_action else 0
        click.echo(f"kbwiki {command}: {said}; trying again in {wait:.0f} s (try {state.attempt_number})", err=True)

    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(_refused),
        wait=tenacity.wait_exponential(multiplier=START_WAIT_MIN_S, min=START_WAIT_MIN_S, max=START_WAIT_MAX_S),
        before_sleep=say,
        reraise=True,
    )(connect)


@contextlib.contextmanager
def services(*, migrating: bool = False, waiting: str | None = None) -> Iterator[Settings]:
    """Settings with servers reachable: the configured ones, or embedded ones started for this command.

    Raises ``BadSetting`` for bad settings, ``ServiceError`` for local servers that cannot be
    started or a home folder that cannot be made, and ``ServersUnreachable`` for a configured
    server that does not answer, local servers whose supervisor keeps failing to restart them, or
    a server that goes away while the command runs (`kbwiki down`, a crash); the command group
    prints each as one line. On configured
    servers it raises ``SchemaOutdated`` when the database lacks migrations, unless ``migrating``
    (``kbwiki migrate`` itself).

    ``waiting`` (a command name, ``"worker"``): a configured or local server that refuses
    connections (down, or ``too many connections``) is tried again with a backoff, one line on
    stderr per try (:func:`_until_connected`), instead of ending the command: a worker started
    before its servers can take it is there when they can.
    """
    from kbwiki.services.builds import describe_home
    from kbwiki.services.client import local_services

    base = checked_settings()
    embedded = not (base.database_url and base.redis_url)
    with contextlib.ExitStack() as stack:

        def attach() -> Settings:
            return stack.enter_context(local_services(base))  # nothing entered when it raises

        try:
            settings = _until_connected(waiting, attach) if waiting else attach()
        except ServersUnreachable:  # a ConnectionError, so an OSError too: not the home's fault
            raise
        except OSError as exc:  # e.g. KBWIKI_HOME names a file
            raise ServiceError(f"cannot use KBWIKI_HOME={base.home!r} for the local servers: {exc}") from None
        if embedded:  # on stderr: a command's own output (--json) stays clean
            given = [f"{name} from {var}" for name, var, url in _GIVEN if getattr(base, url)]
            click.echo(f"kbwiki: home {describe_home(Path(settings.home))}{''.join('; ' + g for g in given)}", err=True)
        get_settings.cache_clear()  # later reads (the process-wide Deps) see the servers' URLs
        _silence_pool_logs()

        def connect() -> None:
            _reachable(settings)
            if embedded:
                apply_migrations(settings.database_url)
            elif not migrating and (pending := pending_migrations(settings.database_url)):
                # a configured database is migrated by `kbwiki migrate` (a Procfile release step),
                # never behind a command's back; without it every query would fail with a missing table
                raise SchemaOutdated(
                    f"the database lacks {counted(len(pending), 'migration')} of this version ({pending[0]} first):"
                    " run `kbwiki migrate`"
                )

        if waiting:
            _until_connected(waiting, connect)
        else:
            connect()
        setup_broker(settings)  # the producer API sends triggers through it; it logs to stderr until:
        command_logs(settings)
        try:
            yield settings
        except _server_gone() as exc:
            cause = exc.__cause__ if isinstance(exc, ServersUnreachable) and exc.__cause__ else exc
            raise ServersUnreachable(
                f"the servers went away ({type(cause).__name__}: {str(cause).strip().splitlines()[0]})"
                f"{'; were the local servers stopped (`kbwiki down`)? `kbwiki up` starts them' if embedded else ''}."
                " Work queued so far is kept: run the command again, and check `kbwiki status`"
            ) from None


#: The servers a URL can name instead of the home's: (name, variable, settings field).
_GIVEN = (("PostgreSQL", "DATABASE_URL", "database_url"), ("Redis", "REDIS_URL", "redis_url"))


def command_deps() -> Deps:
    """The process-wide ``stages.deps.Deps``, on the servers :func:`services` made reachable (and
    whose broker it built); call inside :func:`services`."""
    return get_deps()


def lanes_timeout(deps: Deps, kb, kb_name: str, timeout: float) -> WaitTimedOut:
    """The error of a ``--wait`` that ran out, with the likeliest reason: the KB's model work paused
    on a configuration error, no live worker, or (else) work still under way."""
    head = f"lanes of {kb_name!r} were not empty after {timeout:.0f} s"
    paused = deps.llm_errors.get(kb.id)
    if paused is not None:
        hint = RESUME_HINT.get(paused.kind, RESUME_HINT["config"]).replace("NAME", kb_name)
        # a budget pause is kbwiki's own decision (stored as 402): no HTTP status to quote
        cause = paused.message if paused.kind == "budget" else f"HTTP {paused.status}: {paused.message}"
        return WaitTimedOut(
            f"the wiki of {kb_name!r} is not complete: the KB's model work is paused for {paused.kind}"
            f" ({cause}); {hint}"
        )
    if not deps.workers.alive_count(deps.settings.worker_ttl_s):
        return WaitTimedOut(f"{head}; no worker is alive: start one (`kbwiki worker`)")
    from kbwiki.status import status_command

    return WaitTimedOut(f"{head}; the work goes on in the workers: see `{status_command(kb)}`")


def find_kb(deps, tenant: int, name: str, create: bool = False):
    """The live KB ``name`` of ``tenant`` (created when ``create``); otherwise ``UnknownKnowledgeBase``
    saying which names were likely meant (:func:`unknown_kb_hint`)."""
    kb = deps.kbs.get_or_create(tenant, name) if create else deps.kbs.get_by_name(tenant, name)
    if kb is None:
        hint = unknown_kb_hint(deps, tenant, name)
        raise UnknownKnowledgeBase(f"no knowledge base named {name!r} for tenant {tenant}; {hint}")
    return kb


def unknown_kb_hint(deps, tenant: int, name: str) -> str:
    """What to say after "no knowledge base named X": ``did you mean 'Y'?`` with the tenant's names
    close to ``name`` (``wiki.suggest.close_names`` over the 1,000 next to it in case-insensitive
    order, ``KnowledgeBaseRepository.names_near``), else how many KBs the tenant has and the
    command that lists them. Two bounded statements whatever the number of KBs."""
    from wiki.suggest import close_names, did_you_mean

    close = close_names(name, deps.kbs.names_near(tenant, name))
    if close:
        return did_you_mean(close)
    n = deps.kbs.count_live(tenant)
    if n == 0:
        return f"tenant {tenant} has no knowledge base (every tenant's: kbwiki kbs)"
    many = f"{COUNT_LIVE_CAP:,} or more" if n >= COUNT_LIVE_CAP else f"{n:,}"
    return f"tenant {tenant} has {many} knowledge base{'s' if n != 1 else ''} (list them: kbwiki kbs --tenant {tenant})"


def kb_name_param(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A KB name as stored (``wiki.models.valid_kb_name``): stripped, 1-255 characters, no newline
    or other control character. A click callback: a refused name is a usage error (exit 2)."""
    try:
        return valid_kb_name(value or "")
    except ValidationError as exc:
        raise click.BadParameter(str(exc.errors()[0]["msg"]).removeprefix("Value error, ")) from None


#: The largest PostgreSQL BIGINT: tenant ids and dead-letter ids are stored as one.
BIGINT_MAX = 2**63 - 1
#: A tenant id: 0 (messages that named no tenant) or more.
TENANT_ID = click.IntRange(0, BIGINT_MAX)


class Seconds(click.FloatRange):
    """A positive, finite number of seconds (``--timeout``): 0, a negative number, ``inf`` and
    ``nan`` are usage errors (exit 2). ``nan`` passes ``click.FloatRange`` (every comparison with it
    is false), hence the finiteness check."""

    name = "seconds"

    def __init__(self) -> None:
        super().__init__(min=0, min_open=True)

    def convert(self, value, param, ctx) -> float:
        seconds = super().convert(value, param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{value!r} is not a finite number of seconds.", param, ctx)
        return seconds


def timeout_option(default: float):
    """``--timeout SECONDS`` of a command's ``--wait`` (:class:`Seconds`)."""
    return click.option(
        "--timeout", default=default, show_default=True, type=Seconds(), help="Seconds --wait waits at most."
    )


tenant_option = click.option("--tenant", default=1, show_default=True, type=TENANT_ID, help="Tenant id.")
kb_option = click.option("--kb", "kb_name", required=True, callback=kb_name_param, help="Knowledge base name.")
