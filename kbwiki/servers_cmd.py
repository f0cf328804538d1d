"""``kbwiki up`` and ``kbwiki down``: start and stop the home's local servers (the embedded default).

The servers belong to the home's supervisor (``kbwiki.supervisor``), not to a command: any command
that needs them starts it, and it stops them after ``KBWIKI_SERVERS_IDLE_S`` seconds with no
command attached and no connection, or on ``kbwiki down``.
"""

from __future__ import annotations

import click

from kbwiki.command import checked_settings, main, services
from wiki.errors import ServersUnreachable
from wiki.settings import Settings


def idle_line(idle_s: float) -> str:
    """How the local servers stop, for ``KBWIKI_SERVERS_IDLE_S`` = ``idle_s`` seconds."""
    if idle_s <= 0:
        return "they run until `kbwiki down` (KBWIKI_SERVERS_IDLE_S=0)"
    after = f"{idle_s:.0f} s" if idle_s < 120 else f"{idle_s / 60:.0f} min"
    return f"they stop after {after} with no client (KBWIKI_SERVERS_IDLE_S), or on `kbwiki down`"


def watched(settings: Settings) -> list[str]:
    """What the home's supervisor did about its servers (``kbwiki.services.client.watch_lines``: a
    restart and why, or a restart that keeps failing and the next try); [] with both URLs set."""
    from kbwiki.services.client import watch_lines
    from kbwiki.services.state import home_folder

    if settings.database_url and settings.redis_url:
        return []
    return watch_lines(home_folder(settings))


def refuse_when_down(settings: Settings, err: bool = False) -> list[str]:
    """:func:`watched`'s lines; raises ``ServersUnreachable`` (after printing them, on stderr when
    ``err``: a ``--json`` output stays JSON) when the supervisor is failing to restart a server:
    attaching would wait for nothing."""
    from kbwiki.services.client import servers_down
    from kbwiki.services.state import home_folder

    lines = watched(settings)
    if lines and servers_down(home_folder(settings)):
        for line in lines:
            click.echo(line, err=err)
        raise ServersUnreachable(
            "the local servers are down (above); their supervisor keeps trying, see supervisor.log in the home"
        )
    return lines


@main.command()
def up() -> None:
    """Start the local PostgreSQL and Redis of the home (when DATABASE_URL / REDIS_URL are unset) and return."""
    settings = checked_settings()
    if settings.database_url and settings.redis_url:
        click.echo("DATABASE_URL and REDIS_URL are set: kbwiki runs no local servers")
        return
    with services() as ready:
        if not settings.database_url:
            click.echo(f"PostgreSQL: {ready.database_url}")
        if not settings.redis_url:
            click.echo(f"Redis: {ready.redis_url}")
    click.echo(f"local servers are up; {idle_line(settings.servers_idle_s)}")
    for line in watched(settings):
        click.echo(line)


@main.command()
def down() -> None:
    """Stop the local PostgreSQL and Redis of the home. Workers and `serve` still running wait and
    reconnect when the servers start again (`kbwiki up`, or any command)."""
    from kbwiki.services.client import server_clients, stop_home
    from kbwiki.services.state import home_folder

    settings = checked_settings()
    home = home_folder(settings)
    clients = server_clients(home)
    if not stop_home(home):
        click.echo(f"no local servers run under {home}")
        return
    click.echo(f"stopped the local servers of {home}")
    if clients:
        noun = "connection was" if clients == 1 else "connections were"
        click.echo(
            f"{clients} client {noun} open: running workers and `kbwiki serve` wait and reconnect when the"
            " servers start again (`kbwiki up`)"
        )
