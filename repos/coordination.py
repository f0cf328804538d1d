"""Redis coordination: the active-batch lock, trigger debounce markers and delete tombstones.

Redis is never the source of truth: losing any of these keys loses no work (the sweeper
re-triggers lanes with rows; a lock expires after its TTL).
"""

from __future__ import annotations

import threading
import uuid

import redis

from wiki.errors import LockLost  # noqa: F401  (what losing this lock raises; kept importable from here)

_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end
"""
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end
"""

TOMBSTONE_TTL_S = 3600


class ActiveBatchLock:
    """``<prefix>:active:<kb>``: at most one reduce batch per KB at a time.

    ``acquire()`` sets the key to a random token with a TTL (SET NX PX) and starts a thread that
    renews it every ttl/3 while held; ``release()`` deletes it only if it still holds our token
    (a compare-and-delete script), so a batch that outlived its TTL never frees another's lock.
    ``lost`` becomes True when a renewal finds the key gone or another's: the batch reads it before
    writing and stops. The lock is a hint, never the guard: reduce writes are fenced in PostgreSQL.
    """

    def __init__(self, client: redis.Redis, key: str, ttl_s: int) -> None:
        self.client = client
        self.key = key
        self.ttl_ms = ttl_s * 1000
        self.token = uuid.uuid4().hex
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self.lost = False

    def acquire(self) -> bool:
        """True when the lock is ours; False when another batch holds it."""
        if not self.client.set(self.key, self.token, nx=True, px=self.ttl_ms):
            return False
        self._renewer = threading.Thread(target=self._renew, name="kbwiki-lock-renew", daemon=True)
        self._renewer.start()
        return True

    def release(self) -> None:
        """Stop renewing and delete the key if it still holds our token."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=5)
        self.client.eval(_RELEASE, 1, self.key, self.token)

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl_ms / 3000):
            try:
                if not self.client.eval(_RENEW, 1, self.key, self.token, self.ttl_ms):
                    self.lost = True
                    return
            except redis.RedisError:
                continue  # transient; the TTL still covers two more attempts


def active_key(prefix: str, kb_id: str) -> str:
    return f"{prefix}:active:{kb_id}"


def trigger_key(prefix: str, actor_name: str, kb_id: str) -> str:
    return f"{prefix}:trigger:{actor_name}:{kb_id}"


def tombstone_key(prefix: str, kb_id: str, knowledge_id: str) -> str:
    return f"{prefix}:deleted:{kb_id}:{knowledge_id}"


def release_if_held(client: redis.Redis, key: str, token: str) -> bool:
    """Delete ``key`` only if it still holds ``token`` (a dead worker's lock); True when deleted."""
    return bool(token) and bool(client.eval(_RELEASE, 1, key, token))
