"""The MCP server under test, reached with the SDK's own client: over streamable HTTP (``/mcp`` of
a served app) or over stdio (a real ``kbwiki mcp`` subprocess). Used by tests/integration/test_mcp.py,
bench/web.py and bench/agent_transcript.py."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from typing import TextIO

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

#: Seconds a request may take before the client gives up (a loaded CI machine is slow; tests check answers).
READ_TIMEOUT_S = 60.0
#: The environment ``kbwiki mcp`` needs from the test session (the SDK passes the child only
#: HOME, PATH and the like, plus what it is given).
STDIO_ENV = ("DATABASE_URL", "REDIS_URL", "KBWIKI_HOME", "KBWIKI_KEY_PREFIX", "KBWIKI_REDIS_NAMESPACE")


@contextlib.asynccontextmanager
async def http_client(url: str, token: str | None = None) -> AsyncIterator[Client]:
    """A connected client of the server at ``url`` (``http://host:port/mcp``), sending ``token``
    as its bearer token when given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=READ_TIMEOUT_S) as http:
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=READ_TIMEOUT_S) as client:
            yield client


@contextlib.asynccontextmanager
async def stdio_client(database_url: str, tenant: int, errlog: TextIO, **env: str) -> AsyncIterator[Client]:
    """A connected client of a ``kbwiki mcp --tenant TENANT`` subprocess on ``database_url``
    (this interpreter's kbwiki), its stderr written to ``errlog``; ``env`` adds to its environment."""
    given = {name: os.environ[name] for name in STDIO_ENV if name in os.environ}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kbwiki.cli", "mcp", "--tenant", str(tenant)],
        env={**given, "DATABASE_URL": database_url, **env},
    )
    from mcp.client.stdio import stdio_client as sdk_stdio_client

    async with Client(sdk_stdio_client(params, errlog=errlog), read_timeout_seconds=READ_TIMEOUT_S) as client:
        yield client


def structured(result: CallToolResult) -> dict:
    """A successful tool result's structured content (what its text content holds as JSON too).
    Raises AssertionError with the error text for an error result."""
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    assert json.loads(text(result)) == result.structured_content  # the same answer for text-only clients
    return result.structured_content


def text(result: CallToolResult) -> str:
    """The text of a tool result's first content block."""
    return result.content[0].text if result.content else ""
