"""``kbwiki mcp``: the wiki's MCP server (``kbwiki.mcp_server``) on stdin and stdout, for a
desktop agent that starts it as a subprocess; one tenant, until stdin closes.

stdout is the protocol's alone: from the command's start, whatever writes to file descriptor 1
(a library's print, a child process) lands on stderr, and descriptor 1 goes back to the protocol
only when the SDK's stdio transport takes it over (it diverts it to stderr again while it serves).
Logs go where every command's go (``commands.log`` in the home, else stderr).
"""

from __future__ import annotations

import os
import sys

import click

from kbwiki.command import TENANT_ID, main, services
from repos.db import get_pool
from wiki.extras import MCP_MODULES, require


@main.command("mcp")
@click.option(
    "--tenant",
    type=TENANT_ID,
    default=None,
    help="Tenant served (default KBWIKI_WEB_TENANT, else 1); one tenant per server.",
)
def mcp_command(tenant: int | None) -> None:
    """Serve the wiki to an agent over MCP on stdin/stdout (stdio), until stdin closes.

    Tools: list_kbs, search, read_page, list_pages, backlinks, sources. Add it to a desktop
    agent's MCP servers as the command `kbwiki mcp` (with DATABASE_URL and REDIS_URL in its
    environment when the wiki is not in the home's local servers). Messages go to stderr only.
    """
    require("web", *MCP_MODULES)
    from kbwiki.mcp_server import build_server

    wire = os.dup(1)  # the protocol's stdout, kept aside while nothing may write to it
    os.dup2(2, 1)
    try:
        with services() as settings:
            tenant_id = settings.web_tenant if tenant is None else tenant
            server = build_server(get_pool(settings), tenant_id)
            click.echo(f"kbwiki: serving tenant {tenant_id} over MCP on stdio", err=True)
            os.dup2(wire, 1)  # the SDK's stdio transport claims it now
            try:
                server.run("stdio")
            except KeyboardInterrupt:  # Ctrl-C in a terminal: one line, as `kbwiki serve` says it
                click.echo("kbwiki: stopped serving MCP", err=True)
                sys.exit(130)
    finally:
        os.close(wire)
