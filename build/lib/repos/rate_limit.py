"""One rate limit per model shared by every worker process, in Redis
(``wiki.extract.llm.ratelimit.RateLimiter``).

Per model (endpoint + model name) a Lua script (``repos/lua/rate_limit.lua``) keeps, atomically:

- **leases**: one per request in flight, with an expiry renewed every ``LEASE_S``/3 by a thread
  of the holding process, so a killed worker's slots come back within ``LEASE_S``;
- **a concurrency window**: ``max_concurrency``, or less after a 429 (AIMD: a 429 halves the
  window, to half the requests then in flight when unlimited, once per wave: a 429 to a request
  granted before the last cut is not counted again;
  every ``RECOVER_S`` without one adds a tenth of the configured cap back);
- **token buckets** of ``rpm`` requests and ``tpm`` tokens a minute (``BURST_S`` seconds of each
  at most saved up), both scaled down by the same 429 factor (halved per cut, +0.1 per
  ``RECOVER_S``); a request reserves its estimated tokens and the release corrects them;
- **fair shares**: a KB holds at most ceil(window / active KBs) slots (active: waited or held a
  slot in the last ``ACTIVE_S``), and the next free slot goes to the waiting KB served longest ago.

Callers block: a refused caller sleeps on its own wake list (``BLPOP``, pushed by the release
that frees its turn) for at most ``POLL_S`` and asks again, until its deadline, then raises
``LLMUnavailable``. Redis is never the source of truth: a flushed Redis only resets the limiter
(callers in flight go on, their releases find nothing), and when Redis is unreachable calls go
ahead unlimited (the endpoint's own 429s still slow them), with a warning a minute at most.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from importlib import resources

import redis
import structlog

from wiki.errors import LLMUnavailable
from wiki.extract.llm.ratelimit import Lease, ModelLimits

log = structlog.get_logger(__name__)

#: A lease's life without renewal: a killed holder's slot is free again after this long.
LEASE_S = 15.0
#: A KB that waited or held a slot this recently counts for the fair share.
ACTIVE_S = 5.0
#: A waiter that has not asked again for this long has gone (callers ask every POLL_S at most).
WAITER_S = 1.0
#: Longest sleep between two asks of a refused caller (a missed wake costs at most this).
POLL_S = 0.25
#: Quiet time after a 429 (or a step) before the window and rates grow one step.
RECOVER_S = 5.0
#: Seconds of rpm/tpm a bucket saves up: bursts stay small, the minute's budget is spread.
BURST_S = 2.0
#: Waits are summed and logged once per this long (``llm.rate_waits``), not per call.
WAIT_LOG_S = 10.0

_SCRIPT = resources.files("repos").joinpath("lua/rate_limit.lua").read_text()


class _Lease:
    def __init__(
        self, limiter: RedisRateLimiter, key: str, share: str, token: str, limits: ModelLimits, tokens: int, at: int
    ) -> None:
        self.limiter, self.key, self.share, self.token = limiter, key, share, token
        self.limits, self.tokens, self.granted_ms = limits, tokens, at
        self.member = f"{share}\n{token}"

    def release(self, used_tokens: int | None, throttled: bool = False) -> None:
        self.limiter._release(self, used_tokens, throttled)


class _Free:
    def release(self, used_tokens: int | None, throttled: bool = False) -> None:
        return None


class RedisRateLimiter:
    """``RateLimiter`` over Redis keys ``<prefix>:llm-limit:<model key>:*``; thread-safe, one per
    process (its renewal thread starts on the first lease)."""

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self.script = client.register_script(_SCRIPT)
        self._held: dict[str, dict[str, _Lease]] = {}
        self._lock = threading.Lock()
        self._renewer: threading.Thread | None = None
        self._stop = threading.Event()
        self._waits: Counter[str] = Counter()
        self._waited_s = 0.0
        self._longest_s = 0.0
        self._wait_logged = time.monotonic()
        self._unavailable_logged = 0.0

    def _keys(self, key: str) -> list[str]:
        base = f"{self.prefix}:llm-limit:{key}"
        return [f"{base}:{part}" for part in ("state", "leases", "waiters", "seen", "served", "active")]

    def _wake_prefix(self, key: str) -> str:
        return f"{self.prefix}:llm-limit:{key}:wake:"

    def acquire(self, key: str, share: str, limits: ModelLimits, tokens: int, deadline: float) -> Lease:
        """See ``RateLimiter.acquire``. Raises ``LLMUnavailable`` once ``deadline`` passes while waiting."""
        token = uuid.uuid4().hex
        keys = self._keys(key)
        wake = self._wake_prefix(key) + token
        started = time.monotonic()
        waited_for = ""
        granted = False
        try:
            while True:
                try:
                    granted, wait_ms, reason_b, _, _, server_ms = self.script(
                        keys=keys,
                        args=[
                            "acquire",
                            self._wake_prefix(key),
                            share,
                            token,
                            limits.max_concurrency,
                            limits.rpm,
                            limits.tpm,
                            tokens,
                            int(LEASE_S * 1000),
                            int(ACTIVE_S * 1000),
                            int(RECOVER_S * 1000),
                            int(WAITER_S * 1000),
                            BURST_S,
                        ],
                    )
                except redis.RedisError as exc:
                    self._unavailable(exc)
                    granted = True  # nothing to leave
                    return _Free()
                reason = reason_b.decode() if isinstance(reason_b, bytes) else str(reason_b)
                now = time.monotonic()
                if granted:
                    self._note_wait(key, waited_for, now - started)
                    lease = _Lease(self, key, share, token, limits, tokens, int(server_ms))
                    self._hold(lease)
                    return lease
                waited_for = reason
                left = deadline - now
                if left <= 0:
                    log.warning(
                        "llm.rate_wait_timeout",
                        model_key=key,
                        knowledge_base_id=share or None,
                        waited_s=round(now - started, 2),
                        reason=reason,
                    )
                    raise LLMUnavailable(
                        f"waited {now - started:.0f} s for the model's shared rate limit ({reason}); the"
                        " document's time budget is spent"
                    )
                pause = min(POLL_S, left, wait_ms / 1000 if wait_ms else POLL_S)
                try:
                    if reason == "rate":  # the bucket refills on time, no release will wake us
                        time.sleep(max(pause, 0))
                    else:
                        self.client.blpop([wake], timeout=max(pause, 0.01))
                except redis.RedisError as exc:
                    self._unavailable(exc)
                    granted = True
                    return _Free()
                self._note_wait(key, reason, 0.0, count=False)
        finally:
            if not granted:  # gave up (deadline, or interrupted by a time limit): leave the queue
                self._leave(key, share, token, limits)

    def _leave(self, key: str, share: str, token: str, limits: ModelLimits) -> None:
        try:
            self.script(
                keys=self._keys(key),
                args=[
                    "leave",
                    self._wake_prefix(key),
                    share,
                    token,
                    limits.max_concurrency,
                    int(ACTIVE_S * 1000),
                    int(RECOVER_S * 1000),
                    int(WAITER_S * 1000),
                ],
            )
        except redis.RedisError:
            pass  # it drops out by itself after WAITER_S

    def _release(self, lease: _Lease, used_tokens: int | None, throttled: bool) -> None:
        with self._lock:
            self._held.get(lease.key, {}).pop(lease.member, None)
        try:
            cut, window, rate_factor = self.script(
                keys=self._keys(lease.key),
                args=[
                    "release",
                    self._wake_prefix(lease.key),
                    lease.share,
                    lease.token,
                    lease.limits.max_concurrency,
                    lease.limits.tpm,
                    lease.tokens,
                    -1 if used_tokens is None else used_tokens,
                    1 if throttled else 0,
                    int(ACTIVE_S * 1000),
                    int(RECOVER_S * 1000),
                    int(WAITER_S * 1000),
                    lease.granted_ms,
                    BURST_S,
                ],
            )
        except redis.RedisError as exc:
            self._unavailable(exc)
            return
        if cut:
            log.warning(
                "llm.rate_slowdown",
                model_key=lease.key,
                knowledge_base_id=lease.share or None,
                concurrency=int(cut),
                rate_factor=float(rate_factor),
                recovers_every_s=RECOVER_S,
            )

    def _hold(self, lease: _Lease) -> None:
        with self._lock:
            self._held.setdefault(lease.key, {})[lease.member] = lease
            if self._renewer is None:
                self._renewer = threading.Thread(target=self._renew, name="kbwiki-llm-lease-renew", daemon=True)
                self._renewer.start()

    def _renew(self) -> None:
        while not self._stop.wait(LEASE_S / 3):
            with self._lock:
                held = {key: list(leases) for key, leases in self._held.items() if leases}
            for key, members in held.items():
                try:
                    self.script(
                        keys=self._keys(key), args=["renew", self._wake_prefix(key), int(LEASE_S * 1000), *members]
                    )
                except redis.RedisError:
                    continue  # transient; the lease outlives two more renewals

    def notice(self, share: str, text: str, ttl_s: float) -> None:
        """``RateLimiter.notice``: one key per KB (``notice_key``), replaced by the next notice."""
        if not share:
            return
        value = json.dumps({"text": text, "at": time.time()})
        try:
            self.client.set(notice_key(self.prefix, share), value, px=max(int(ttl_s * 1000), 1))
        except redis.RedisError as exc:
            self._unavailable(exc)

    def close(self) -> None:
        """Stop the renewal thread (held leases then expire after ``LEASE_S``)."""
        self._stop.set()

    def _note_wait(self, key: str, reason: str, waited_s: float, count: bool = True) -> None:
        with self._lock:
            if count and reason:
                self._waits[reason] += 1
                self._waited_s += waited_s
                self._longest_s = max(self._longest_s, waited_s)
            now = time.monotonic()
            if not self._waits or now - self._wait_logged < WAIT_LOG_S:
                return
            waits, waited, longest = dict(self._waits), self._waited_s, self._longest_s
            self._waits.clear()
            self._waited_s = self._longest_s = 0.0
            self._wait_logged = now
        log.info(
            "llm.rate_waits",
            model_key=key,
            waits=waits,
            waited_s=round(waited, 2),
            longest_s=round(longest, 2),
            over_s=WAIT_LOG_S,
        )

    def _unavailable(self, exc: BaseException) -> None:
        now = time.monotonic()
        if now - self._unavailable_logged >= 60:
            self._unavailable_logged = now
            log.warning("llm.rate_limit_unavailable", error=repr(exc), calls="go ahead unlimited")


def notice_key(prefix: str, kb_id: str) -> str:
    """The Redis key of KB ``kb_id``'s model notice (``RedisRateLimiter.notice``)."""
    return f"{prefix}:llm-notice:{kb_id}"


def read_notice(client: redis.Redis, prefix: str, kb_id: str) -> dict | None:
    """The KB's current model notice as ``{"text", "at"}`` (``at``: Unix time it was said), or None
    (none, expired, or Redis unreachable: status must not fail for it)."""
    try:
        raw = client.get(notice_key(prefix, kb_id))
        return json.loads(raw) if raw else None
    except (redis.RedisError, ValueError):
        return None
