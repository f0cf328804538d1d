"""Redis coordination: the active-batch lock, trigger debounce markers and delete tombstones.

Redis is never the source of truth: losing any of these keys loses no work (the sweeper
re-triggers lanes with rows; a lock expires after its TTL).
"""

from __future__ import annotations

import threading
import uuid

import redis

_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  if KEYS[2] then redis.call('srem', KEYS[2], KEYS[1]) end
  return redis.call('del', KEYS[1])
else return 0 end
"""
# The lock and its entry in the index of held locks in one step: a worker killed right after taking
# the lock, before its fence recorded the token, is still found by the reaper (holder_of).
_ACQUIRE = """
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if KEYS[2] then redis.call('sadd', KEYS[2], KEYS[1]) end
  return 1
else return 0 end
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

    ``holder`` (the worker id of a heartbeating worker) is written into the token
    (``<holder>/<random>``, :func:`holder_of`) and the key into the set ``index_key``
    (:func:`active_index_key`) in the same script as the SET, so the reaper frees the lock of a
    worker killed before its fence recorded the token (:func:`held_locks`) instead of leaving the
    KB to the TTL.
    """

    def __init__(
        self, client: redis.Redis, key: str, ttl_s: int, holder: str | None = None, index_key: str | None = None
    ) -> None:
        self.client = client
        self.key = key
        self.ttl_ms = ttl_s * 1000
        self.token = f"{holder}/{uuid.uuid4().hex}" if holder else uuid.uuid4().hex
        self._keys = [key, index_key] if index_key else [key]
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self.lost = False

    def acquire(self) -> bool:
        """True when the lock is ours; False when another batch holds it."""
        if not self.client.eval(_ACQUIRE, len(self._keys), *self._keys, self.token, self.ttl_ms):
            return False
        self._renewer = threading.Thread(target=self._renew, name="kbwiki-lock-renew", daemon=True)
        self._renewer.start()
        return True

    def release(self) -> None:
        """Stop renewing and delete the key if it still holds our token."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=5)
        self.client.eval(_RELEASE, len(self._keys), *self._keys, self.token)

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


def active_index_key(prefix: str) -> str:
    """The set of active-batch lock keys taken with a holder (:class:`ActiveBatchLock`)."""
    return f"{prefix}:active-locks"


def holder_of(token: str) -> str | None:
    """The worker id an active-batch lock token names (``<holder>/<random>``), or None."""
    holder, slash, _ = token.rpartition("/")
    return holder if slash and holder else None


def held_locks(client: redis.Redis, index_key: str) -> dict[str, str]:
    """``{lock key: token}`` of the locks in ``index_key`` that are still held; members whose lock
    is gone (released by a script that could not reach the set, expired) are removed. Two round
    trips; the set holds one key per KB with a batch running."""
    keys = sorted(k.decode() if isinstance(k, bytes) else k for k in client.smembers(index_key))
    if not keys:
        return {}
    tokens = client.mget(keys)
    if gone := [k for k, t in zip(keys, tokens, strict=True) if t is None]:
        client.srem(index_key, *gone)
    return {k: t.decode() if isinstance(t, bytes) else t for k, t in zip(keys, tokens, strict=True) if t is not None}


def trigger_key(prefix: str, actor_name: str, kb_id: str) -> str:
    return f"{prefix}:trigger:{actor_name}:{kb_id}"


def tombstone_key(prefix: str, kb_id: str, knowledge_id: str) -> str:
    return f"{prefix}:deleted:{kb_id}:{knowledge_id}"


def release_if_held(client: redis.Redis, key: str, token: str, index_key: str | None = None) -> bool:
    """Delete ``key`` only if it still holds ``token`` (a dead worker's lock), and its member of
    ``index_key`` when given; True when deleted."""
    keys = [key, index_key] if index_key else [key]
    return bool(token) and bool(client.eval(_RELEASE, len(keys), *keys, token))


def mark_once(client: redis.Redis, key: str, ttl_ms: int | None = None, value: str = "1") -> bool:
    """Set the marker ``key`` to ``value`` unless it is set (SET NX; it expires after ``ttl_ms`` ms,
    never when None); True when this call set it: the caller is the one to act (send a trigger,
    re-check, requeue)."""
    return bool(client.set(key, value, nx=True, px=ttl_ms))


def marker(client: redis.Redis, key: str) -> str | None:
    """The value of the marker ``key``, None when it is not set."""
    value = client.get(key)
    return value.decode() if isinstance(value, bytes) else value


def unmark(client: redis.Redis, *keys: str) -> None:
    """Delete the markers ``keys`` (a missing one is no error)."""
    if keys:
        client.delete(*keys)


def set_tombstones(client: redis.Redis, prefix: str, kb_id: str, knowledge_ids: list[str]) -> list[str]:
    """Mark the documents deleted for ``TOMBSTONE_TTL_S`` (a map or reduce that meets one writes
    nothing for it) in one round trip; returns the keys set, for :func:`unmark` if the delete's
    transaction then fails."""
    keys = [tombstone_key(prefix, kb_id, kid) for kid in knowledge_ids]
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.set(key, "1", ex=TOMBSTONE_TTL_S)
    pipe.execute()
    return keys


def tombstoned(client: redis.Redis, prefix: str, kb_id: str, knowledge_ids: list[str]) -> set[str]:
    """The ids among ``knowledge_ids`` with a delete tombstone (one round trip)."""
    pipe = client.pipeline(transaction=False)
    for kid in knowledge_ids:
        pipe.exists(tombstone_key(prefix, kb_id, kid))
    return {kid for kid, hit in zip(knowledge_ids, pipe.execute(), strict=True) if hit}
