"""The embedded Redis keeps its data across a stop and start (queued messages survive `kbwiki down`)."""

from __future__ import annotations

import redis

from kbwiki.services import valkey
from kbwiki.services.builds import choose_build
from kbwiki.services.state import server_port


def test_queued_messages_survive_a_restart_of_the_embedded_redis(tmp_path):
    build = choose_build(tmp_path, "redis")
    first = valkey.start(tmp_path, build, server_port(tmp_path, "redis"))
    try:
        client = redis.Redis(port=first["port"])
        client.rpush("dramatiq:default", b"message-1")
        client.close()
    finally:
        valkey.terminate(first["pid"])  # SIGTERM: what the supervisor does on `kbwiki down`
    second = valkey.start(tmp_path, build, server_port(tmp_path, "redis"))
    try:
        client = redis.Redis(port=second["port"])
        assert client.lrange("dramatiq:default", 0, -1) == [b"message-1"]
        client.close()
    finally:
        valkey.terminate(second["pid"])
