"""kbwiki.mcp_server's pure parts: the read window of read_page, the Origin and bearer checks of
/mcp, and which refusals become which tool errors."""

from __future__ import annotations

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from psycopg_pool import PoolTimeout

from kbwiki.mcp_server import _bearer_ok, content_window, origin_allowed, tool_errors
from wiki.errors import BadInput, UnknownKnowledgeBase, UnknownPage


def test_content_window_cuts_after_a_line_in_its_second_half():
    text = "a" * 60 + "\n" + "b" * 30 + "\n" + "c" * 50
    part, next_offset = content_window(text, 0, size=100)
    assert part == "a" * 60 + "\n" + "b" * 30 + "\n" and next_offset == 92
    rest, end = content_window(text, next_offset, size=100)
    assert part + rest == text and end is None
    # no line break in the second half: cut at the size
    assert content_window("x" * 250, 0, size=100) == ("x" * 100, 100)
    assert content_window("short", 5) == ("", None)
    with pytest.raises(BadInput, match="past the page's end"):
        content_window("short", 6)


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://localhost:6274", True),
        ("https://127.0.0.1", True),
        ("http://[::1]:8000", True),
        ("https://evil.example", False),
        ("http://localhost.evil.example", False),
        ("null", False),
        ("http://[bad", False),
    ],
)
def test_origin_checked_against_the_loopback_names(origin, allowed):
    assert origin_allowed(origin, ["127.0.0.1", "localhost", "[::1]"]) is allowed


def test_origin_checked_against_patterns():
    hosts = ["wiki.example.org", "*.example.net"]
    assert origin_allowed("https://wiki.example.org", hosts)
    assert origin_allowed("https://a.b.example.net:8443", hosts)
    assert not origin_allowed("https://example.net.evil.org", hosts)
    assert not origin_allowed("https://other.example.org", hosts)
    assert origin_allowed("https://anything.example", ["*"])


def test_bearer_token():
    token = "t" * 20
    assert _bearer_ok(f"Bearer {token}", token) and _bearer_ok(f"bearer {token}", token)
    assert not _bearer_ok(None, token) and not _bearer_ok(token, token)
    assert not _bearer_ok(f"Basic {token}", token) and not _bearer_ok("Bearer " + "t" * 19, token)


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        (UnknownKnowledgeBase("no knowledge base 'x'"), "not found: no knowledge base 'x' (list_kbs gives the KB ids)"),
        (UnknownPage("no page 'p'"), "not found: no page 'p'"),
        (BadInput("'zz' is not a cursor of this listing"), "bad input: 'zz' is not a cursor of this listing"),
        (PoolTimeout("couldn't get a connection"), "the wiki's database is not answering right now"),
    ],
)
def test_refusals_become_tool_errors(raised, said):
    def tool():
        raise raised

    with pytest.raises(ToolError) as error:
        tool_errors(tool)()
    assert str(error.value).startswith(said) and error.value.__cause__ is None


def test_other_errors_pass_to_the_sdk():
    def tool():
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError):  # the SDK tells the client only that the tool failed
        tool_errors(tool)()
