"""The embedded Redis keeps its data across a stop and start (queued messages survive `kbwiki down`)."""

from __future__ import annotations

import redis

from kbwiki import services


def test_queued_messages_survive_a_restart_of_the_embedded_redis(tmp_path):
    build = services.choose_build(tmp_path, "redis")
    first = services._redis_start(tmp_path, build, services.server_port(tmp_path, "redis"))
    try:
        client = redis.Redis(port=first["port"])
        client.rpush("dramatiq:default", b"message-1")
        client.close()
    finally:
        services._terminate(first["pid"])  # SIGTERM: what the supervisor does on `kbwiki down`
    second = services._redis_start(tmp_path, build, services.server_port(tmp_path, "redis"))
    try:
        client = redis.Redis(port=second["port"])
        assert client.lrange("dramatiq:default", 0, -1) == [b"message-1"]
        client.close()
    finally:
        services._terminate(second["pid"])
