"""``kbwiki serve``: the web face (``kbwiki.web``) on uvicorn, for one tenant."""

from __future__ import annotations

import errno
import socket
import threading
import time

import click

from kbwiki.command import TENANT_ID, main, services
from repos.servers import database_answers
from wiki.errors import CannotListen, DatabaseUnreachable

#: Seconds between two checks that PostgreSQL still answers, and the misses in a row that stop the
#: server: the embedded servers go away with the command that started them (a stopped worker).
WATCH_S = 5.0
WATCH_MISSES = 3


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535), help="Port to listen on.")
@click.option(
    "--tenant",
    type=TENANT_ID,
    default=None,
    help="Tenant served (default KBWIKI_WEB_TENANT, else 1); one tenant per server.",
)
def serve(host: str, port: int, tenant: int | None) -> None:
    """Serve the wiki, search, graphs, the operations page and /metrics over HTTP until interrupted.

    The operations page's requeue and purge buttons need KBWIKI_WEB_OPS_TOKEN (read-only without it).
    """
    import uvicorn

    from kbwiki.web.app import create_app
    from repos.db import get_pool

    # bound before anything starts: a busy port is one line, and "serving on" is said only once it is true
    with listening_socket(host, port) as sock, services() as settings:
        app = create_app(get_pool(settings), settings.web_tenant if tenant is None else tenant, settings.web_ops_token)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", proxy_headers=True))
        gone = threading.Event()
        threading.Thread(target=_watch, args=(settings.database_url, server, gone), daemon=True).start()
        url_host = f"[{host}]" if ":" in host else host
        click.echo(
            f"kbwiki: serving tenant {settings.web_tenant if tenant is None else tenant} on http://{url_host}:{port}/",
            err=True,
        )
        server.run(sockets=[sock])
        if gone.is_set():  # services() turns this into "the servers went away ..."
            raise DatabaseUnreachable(f"PostgreSQL did not answer {WATCH_MISSES} checks {WATCH_S:.0f} s apart")


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host`` (an IPv6 address when it holds a colon, as uvicorn reads it)
    and ``port``, listening, for uvicorn to serve on. Raises ``CannotListen`` with one line naming
    the address: the port in use, a host that is not this machine's, a privileged port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise CannotListen(
                f"port {port} on {host} is in use (another server listens there): stop it or choose another --port"
            ) from None
        raise CannotListen(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from None


def _watch(url: str, server, gone: threading.Event) -> None:
    """Stop ``server`` (uvicorn) once PostgreSQL misses ``WATCH_MISSES`` checks in a row: serving
    500s for pages of servers that are gone helps no one."""
    misses = 0
    while not server.should_exit:
        misses = 0 if database_answers(url) else misses + 1
        if misses >= WATCH_MISSES:
            gone.set()
            server.should_exit = True
            return
        time.sleep(WATCH_S)
