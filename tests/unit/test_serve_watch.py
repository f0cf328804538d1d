"""`kbwiki serve` stops when PostgreSQL goes away instead of serving 500s for ever."""

from __future__ import annotations

import socket
import threading
from types import SimpleNamespace

from kbwiki import serve_cmd


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_watch_stops_the_server_after_its_misses(monkeypatch):
    monkeypatch.setattr(serve_cmd, "WATCH_S", 0.01)
    server, gone = SimpleNamespace(should_exit=False), threading.Event()
    serve_cmd._watch(f"postgresql://postgres@127.0.0.1:{_closed_port()}/x", server, gone)
    assert server.should_exit and gone.is_set()


def test_the_watch_leaves_a_server_alone_while_the_database_answers(monkeypatch, settings):
    monkeypatch.setattr(serve_cmd, "WATCH_S", 0.01)
    checks = []

    def answers(url: str) -> bool:
        checks.append(url)
        if len(checks) == 5:
            server.should_exit = True  # the server stops by itself (Ctrl-C): the watch ends with it
        return True

    monkeypatch.setattr(serve_cmd, "database_answers", answers)
    server, gone = SimpleNamespace(should_exit=False), threading.Event()
    serve_cmd._watch(settings.database_url, server, gone)
    assert len(checks) == 5 and not gone.is_set()
