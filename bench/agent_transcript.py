"""An agent's session with the MCP server, scripted with the SDK's own client, written out as
docs/agent-transcript.md: list KBs, search, read a page, follow a backlink, fetch its sources.

Usage: .venv/bin/python bench/agent_transcript.py [--query linkify] [--out docs/agent-transcript.md]

The wiki is real and small: the shipped test corpus (tests/data/corpus, kbwiki's own module
documentation, 49 documents) run through every stage with the offline extractor
(``tests.support.pipeline.settle``, no broker) into KB ``kbwiki-modules`` of a scratch database
(``kbwiki_agent_transcript`` on env KBWIKI_BENCH_DATABASE_URL, default the local server; made
anew each run), Redis from REDIS_URL (default db 9 on localhost, under a key prefix of its own,
removed afterwards). The web app (``kbwiki.web.app.create_app``) is served by uvicorn on a free
loopback port and the client (``mcp.Client`` over ``streamable_http_client``) talks to its
``/mcp``. The transcript shows each call's arguments and its structured answer; long strings and
lists are trimmed for reading (said where), the server's own bounds are the tools'.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ADMIN_URL = os.environ.get("KBWIKI_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
DB_NAME = "kbwiki_agent_transcript"
KB_NAME = "kbwiki-modules"
#: What the transcript shows of an answer: characters of a string, items of a list.
SHOWN_CHARS = 700
SHOWN_ITEMS = 5


def trimmed(value):
    """``value`` (JSON) with strings over ``SHOWN_CHARS`` and lists over ``SHOWN_ITEMS`` cut, each
    cut saying how much was left out."""
    if isinstance(value, str) and len(value) > SHOWN_CHARS:
        return value[:SHOWN_CHARS] + f"… [{len(value) - SHOWN_CHARS:,} more characters in the answer]"
    if isinstance(value, list):
        shown = [trimmed(v) for v in value[:SHOWN_ITEMS]]
        return shown + (
            [f"… [{len(value) - SHOWN_ITEMS} more items in the answer]"] if len(value) > SHOWN_ITEMS else []
        )
    if isinstance(value, dict):
        return {k: trimmed(v) for k, v in value.items()}
    return value


def build_wiki() -> str:
    """Make the scratch database, ingest the shipped corpus into KB ``KB_NAME`` and settle every
    lane; returns the database's URL."""
    from repos.db import apply_migrations
    from repos.servers import create_database
    from stages.deps import get_deps
    from tests.support.corpus import shipped_docs
    from tests.support.pipeline import settle, submit_all
    from wiki.settings import get_settings

    create_database(ADMIN_URL, DB_NAME, replace=True)
    url = ADMIN_URL.rpartition("/")[0] + "/" + DB_NAME
    apply_migrations(url)
    os.environ["DATABASE_URL"] = url
    get_settings.cache_clear()  # the broker read them before the database was there
    deps = get_deps()
    kb = deps.kbs.get_or_create(1, KB_NAME)
    submit_all(deps, kb, shipped_docs())
    settle(deps, kb)
    return url


async def session(url: str, query: str) -> list[dict]:
    """The agent's calls against ``url`` (/mcp), each ``{"tool", "arguments", "answer", "why"}``."""
    from tests.support.mcp_client import http_client, structured

    steps: list[dict] = []

    async with http_client(url) as client:
        tools = (await client.list_tools()).tools

        async def call(tool: str, why: str, **arguments) -> dict:
            answer = structured(await client.call_tool(tool, arguments))
            steps.append({"tool": tool, "arguments": arguments, "answer": answer, "why": why})
            return answer

        kbs = await call("list_kbs", "Which knowledge bases are there? Their ids are what the other tools take.")
        kb = next(k["id"] for k in kbs["items"] if k["name"] == KB_NAME)
        hits = await call("search", f"Find pages about {query!r}.", kb=kb, query=query, limit=5)
        found = next((h for h in hits["items"] if h["page_type"] in ("entity", "concept")), hits["items"][0])
        await call("read_page", f"Read the best entity or concept hit, {found['slug']!r}.", kb=kb, slug=found["slug"])
        linking = await call("backlinks", "Which pages link to it?", kb=kb, slug=found["slug"], limit=5)
        # an entity or concept page quotes its documents (a summary page is its one document's)
        follow = next((p for p in linking["items"] if p["page_type"] in ("entity", "concept")), linking["items"][0])
        await call("read_page", f"Follow a backlink: read {follow['slug']!r}.", kb=kb, slug=follow["slug"])
        await call(
            "sources", "Cite it: the documents it was made from, with what it quotes.", kb=kb, slug=follow["slug"]
        )
    return [{"tools": [(t.name, " ".join((t.description or "").split())) for t in tools]}, *steps]


def markdown(steps: list[dict]) -> str:
    """The transcript as Markdown."""
    tools, *calls = steps
    lines = [
        "# An agent's session with kbwiki's MCP server",
        "",
        "Generated by `bench/agent_transcript.py` with the MCP Python SDK's own client (`mcp.Client` over",
        "streamable HTTP) against `/mcp` of `kbwiki serve`'s app, on a wiki built from the shipped test",
        f"corpus (kbwiki's own module documentation, KB `{KB_NAME}`) by the offline extractor. Each step is",
        "one `tools/call`: its arguments and the tool's structured answer (the same JSON is its text",
        f"content). For reading, strings here are cut at {SHOWN_CHARS} characters and lists at",
        f"{SHOWN_ITEMS} items, each cut saying so; the server's own bounds are the tools' (12,000 characters",
        "of a page a call, 100 items a listing, `next_cursor` and `next_offset` to read on).",
        "",
        "## The tools (`tools/list`)",
        "",
        *[f"- `{name}`: {description}" for name, description in tools["tools"]],
    ]
    for i, step in enumerate(calls, 1):
        lines += [
            "",
            f"## {i}. `{step['tool']}`",
            "",
            step["why"],
            "",
            "Arguments:",
            "",
            "```json",
            json.dumps(step["arguments"], ensure_ascii=False, indent=2),
            "```",
            "",
            "Answer:",
            "",
            "```json",
            json.dumps(trimmed(step["answer"]), ensure_ascii=False, indent=2),
            "```",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query", default="linkify")
    parser.add_argument("--out", default=str(ROOT / "docs/agent-transcript.md"))
    args = parser.parse_args()
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/9")
    prefix = f"kbwiki-transcript-{uuid.uuid4().hex[:8]}"
    os.environ["KBWIKI_KEY_PREFIX"] = prefix
    os.environ["KBWIKI_REDIS_NAMESPACE"] = f"{prefix}-dramatiq"
    os.environ["KBWIKI_DEBOUNCE_MS"] = "0"
    import anyio

    import actors

    broker = actors.setup_broker()
    try:
        url = build_wiki()
        from kbwiki.web.app import create_app
        from repos.db import make_pool
        from tests.support.web import serving

        pool = make_pool(url, 1, 4)
        with serving(create_app(pool, tenant_id=1)) as base:
            steps = anyio.run(session, f"{base}/mcp", args.query)
        pool.close()
    finally:
        broker.flush_all()  # the triggers the stages sent: no worker runs here
        for key in broker.client.scan_iter(f"{prefix}*"):
            broker.client.delete(key)
    Path(args.out).write_text(markdown(steps))
    print(f"wrote {args.out}: {len(steps) - 1} calls")


if __name__ == "__main__":
    os.environ.setdefault("KBWIKI_LOG_LEVEL", "WARNING")
    main()
