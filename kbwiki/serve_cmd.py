"""``kbwiki serve``: the web face (``kbwiki.web``) on uvicorn, for one tenant."""

from __future__ import annotations

import click

from kbwiki.command import main, services


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535), help="Port to listen on.")
@click.option(
    "--tenant", type=int, default=None, help="Tenant served (default KBWIKI_WEB_TENANT, else 1); one tenant per server."
)
def serve(host: str, port: int, tenant: int | None) -> None:
    """Serve the wiki, search, graphs, the operations page and /metrics over HTTP until interrupted.

    The operations page's requeue and purge buttons need KBWIKI_WEB_OPS_TOKEN (read-only without it).
    """
    import uvicorn

    from kbwiki.web.app import create_app
    from repos.db import get_pool

    with services() as settings:
        app = create_app(get_pool(settings), settings.web_tenant if tenant is None else tenant, settings.web_ops_token)
        click.echo(
            f"kbwiki: serving tenant {settings.web_tenant if tenant is None else tenant} on http://{host}:{port}/",
            err=True,
        )
        # While the database is away (``kbwiki down``, a restart) pages answer 503 and the pool
        # reconnects when it is back (``kbwiki.web.app``): serving goes on.
        uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", proxy_headers=True)).run()
