"""``kbwiki serve``: the web face (``kbwiki.web``) on uvicorn, for one tenant."""

from __future__ import annotations

import errno
import ipaddress
import socket
import sys

import click

from kbwiki.command import TENANT_ID, main, services
from repos.db import get_pool
from wiki.errors import BadSetting, CannotListen
from wiki.extras import WEB_MODULES, require

#: Seconds a page waits for a pooled connection before answering 503.
POOL_TIMEOUT_S = 5.0


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
    Requests must name a host of KBWIKI_WEB_ALLOWED_HOSTS (default: the loopback names on loopback).
    X-Forwarded-For/-Proto are believed from KBWIKI_WEB_TRUSTED_PROXIES only (default: from no one).
    The read API under /api/v1 needs a bearer token when KBWIKI_API_TOKEN is set (open without).
    """
    require("web", *WEB_MODULES)
    import uvicorn

    from kbwiki.web.app import create_app

    # bound before anything starts: a busy port is one line, and "serving on" is said only once it is true
    with listening_socket(host, port) as sock, services() as settings:
        # A reader waits at most this long for a connection: while the database is away a page
        # answers 503 in seconds rather than after the workers' 30 s pool timeout.
        pool = get_pool(
            settings.model_copy(update={"db_pool_timeout_s": min(settings.db_pool_timeout_s, POOL_TIMEOUT_S)})
        )
        proxies = trusted_proxies(settings.web_trusted_proxies)
        for line in exposure_warnings(host, settings.web_ops_token, settings.web_allowed_hosts):
            click.echo(f"kbwiki: warning: {line}", err=True)
        app = create_app(
            pool,
            settings.web_tenant if tenant is None else tenant,
            settings.web_ops_token,
            allowed_hosts=allowed_hosts(settings.web_allowed_hosts, host),
            api_token=settings.api_token,
            revisions_keep=settings.page_revisions_keep,
        )
        # uvicorn's default believes X-Forwarded-For from 127.0.0.1: any local client could then
        # claim a new address per sign-in try (and put any text in the log's "from ADDRESS")
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            proxy_headers=bool(proxies),
            forwarded_allow_ips=proxies or None,
        )
        server = uvicorn.Server(config)
        url_host = f"[{host}]" if ":" in host else host
        click.echo(
            f"kbwiki: serving tenant {settings.web_tenant if tenant is None else tenant} on http://{url_host}:{port}/",
            err=True,
        )
        # While the database is away (``kbwiki down``, a restart) pages answer 503 and the pool
        # reconnects when it is back (``kbwiki.web.app``): serving goes on.
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:  # uvicorn shuts down on Ctrl-C, then raises it again
            click.echo("kbwiki: stopped serving", err=True)
            sys.exit(130)


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


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable from this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: it may resolve beyond loopback
        return False


def trusted_proxies(setting: str) -> list[str]:
    """The proxies of ``KBWIKI_WEB_TRUSTED_PROXIES`` (comma-separated addresses or networks such as
    ``10.0.0.0/8``) whose X-Forwarded-For and X-Forwarded-Proto uvicorn believes; empty: none.
    Raises ``BadSetting`` naming an entry that is not an address or network (uvicorn would
    silently never match it)."""
    proxies = [p.strip() for p in setting.split(",") if p.strip()]
    for proxy in proxies:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            raise BadSetting(
                f"KBWIKI_WEB_TRUSTED_PROXIES: {proxy!r} is not an IP address or network"
                " (the proxies whose X-Forwarded-For is believed, comma-separated)"
            ) from None
    return proxies


def allowed_hosts(setting: str, host: str) -> list[str]:
    """The Host patterns served when bound to ``host``: ``KBWIKI_WEB_ALLOWED_HOSTS``
    (comma-separated) when set, else the loopback names and ``host`` itself on loopback
    (``127.0.0.2`` is loopback too) and ``["*"]`` beyond it."""
    from kbwiki.web.app import LOOPBACK_HOSTS

    hosts = [h.strip() for h in setting.split(",") if h.strip()]
    if hosts:
        return hosts
    if not is_loopback(host):
        return ["*"]
    bound = f"[{host}]" if ":" in host else host.lower()
    return list(dict.fromkeys([*LOOPBACK_HOSTS, bound]))


def exposure_warnings(host: str, ops_token: str | None, allowed_hosts_setting: str) -> list[str]:
    """What ``kbwiki serve`` warns of at start when bound to ``host``, one line each: reachable
    beyond loopback without an ops token (``/ops`` read-only, error headlines only) or with any
    Host name accepted."""
    if is_loopback(host):
        return []
    lines = []
    if not ops_token:
        lines.append(
            f"serving on {host}, beyond loopback, without KBWIKI_WEB_OPS_TOKEN: anyone who reaches it"
            " reads the wiki; /ops is read-only and shows error headlines only"
        )
    if not allowed_hosts_setting.strip():
        lines.append(
            f"serving on {host} with KBWIKI_WEB_ALLOWED_HOSTS unset: any Host name is answered;"
            " set it to the names this server is reached by"
        )
    return lines
