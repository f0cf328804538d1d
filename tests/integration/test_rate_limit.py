"""The model's shared rate limit (``repos.rate_limit``) with real Redis, the scripted HTTP server
and the real ``openai`` SDK: the server measures what reached it (requests in flight, arrival
times, which KB sent each), so every cap is asserted where it matters."""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
import time

import pytest
import redis
from structlog.testing import capture_logs

import repos.rate_limit as rate_limit
from repos.rate_limit import RedisRateLimiter
from tests.conftest import REDIS_URL
from tests.support.llm_server import ScriptedLLM, answer, error, stall
from wiki.errors import LLMError, LLMUnavailable
from wiki.extract.llm.client import ChatClient
from wiki.extract.llm.ratelimit import ModelLimits, model_key, sharing
from wiki.llm_config import LLMConfig


def _client(server: ScriptedLLM, limiter: RedisRateLimiter, **limits) -> ChatClient:
    config = LLMConfig(base_url=server.url, model="scripted", api_key="k", max_tokens=64, retry_max_wait_s=1, **limits)
    return ChatClient(config, limiter)


def _call(client: ChatClient, kb: str = "", deadline_s: float = 60) -> None:
    with sharing(kb):
        client.complete(
            [{"role": "user", "content": f"kb={kb}"}], "json_object", {}, deadline=time.monotonic() + deadline_s
        )


def _run(threads: int, target, *args) -> list[BaseException]:
    errors: list[BaseException] = []

    def body() -> None:
        try:
            target(*args)
        except BaseException as exc:  # collected for the assertion
            errors.append(exc)

    workers = [threading.Thread(target=body) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    return errors


def _slow(seconds: float):
    return lambda request: stall(seconds, answer("{}", usage=(10, 5)))


def test_many_threads_never_exceed_the_concurrency_cap_and_reach_it(redis_client, redis_prefix):
    with ScriptedLLM(_slow(0.05)) as server:
        client = _client(server, RedisRateLimiter(redis_client, redis_prefix), max_concurrency=3)
        errors = _run(12, lambda: [_call(client) for _ in range(4)])
    assert not errors
    assert server.calls == 48
    assert server.max_in_flight == 3


def _process_calls(url: str, prefix: str, calls: int, threads: int) -> None:
    client = ChatClient(
        LLMConfig(base_url=url, model="scripted", api_key="k", max_tokens=64, max_concurrency=2),
        RedisRateLimiter(redis.Redis.from_url(REDIS_URL), prefix),
    )
    errors = _run(threads, lambda: [_call(client) for _ in range(calls)])
    if errors:
        raise errors[0]


def test_two_processes_share_one_cap(redis_client, redis_prefix):
    ctx = multiprocessing.get_context("spawn")
    with ScriptedLLM(_slow(0.05)) as server:
        procs = [ctx.Process(target=_process_calls, args=(server.url, redis_prefix, 5, 4)) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert server.calls == 40
    assert server.max_in_flight == 2


def test_requests_per_minute_hold_at_the_server(redis_client, redis_prefix):
    """600 a minute (10 a second, a bucket of BURST_S = 2 s, so 20 at once): in any stretch of
    t seconds at most 20 + 10 t requests arrive."""
    with ScriptedLLM(lambda request: answer("{}", usage=(10, 5))) as server:
        client = _client(server, RedisRateLimiter(redis_client, redis_prefix), rpm=600)
        errors = _run(8, lambda: [_call(client) for _ in range(5)])
    assert not errors
    times = sorted(server.times)
    assert len(times) == 40
    burst = 600 * rate_limit.BURST_S / 60
    for i in range(len(times)):
        for j in range(i + 1, len(times)):
            assert j - i + 1 <= burst + 10 * (times[j] - times[i]) + 1, (i, j, times[j] - times[i])
    assert times[-1] - times[0] >= (40 - burst - 1) / 10


@pytest.mark.timing
def test_tokens_per_minute_reserve_an_estimate_and_give_back_the_rest(redis_client, redis_prefix):
    """6,000 tokens a minute (100 a second, 200 saved up at most). A call reserves its prompt
    chars / 4 + max_tokens (74) and really uses 15: 30 calls pass in about (30 x 15 - 200) / 100
    = 2.5 s with the correction, where reservations alone would need (30 x 74 - 200) / 100 = 20 s."""
    with ScriptedLLM(lambda request: answer("{}", usage=(10, 5))) as server:
        client = _client(server, RedisRateLimiter(redis_client, redis_prefix), tpm=6000)
        started = time.monotonic()
        for _ in range(30):
            _call(client)
        elapsed = time.monotonic() - started
    assert server.calls == 30
    assert 1.5 <= elapsed <= 10


def test_a_caller_whose_deadline_passes_while_waiting_gets_llm_unavailable(redis_client, redis_prefix):
    limiter = RedisRateLimiter(redis_client, redis_prefix)
    with ScriptedLLM(lambda request: answer("{}")) as server:
        client = _client(server, limiter, max_concurrency=1)
        lease = limiter.acquire(client.limit_key, "other", client.limits, 10, time.monotonic() + 5)
        started = time.monotonic()
        with capture_logs() as logs, pytest.raises(LLMUnavailable, match="shared rate limit"):
            _call(client, "kb", deadline_s=0.6)
        waited = time.monotonic() - started
        assert redis_client.zcard(f"{redis_prefix}:llm-limit:{client.limit_key}:waiters") == 0  # it left the queue
        lease.release(10)
        _call(client, "kb")  # the slot given back serves the next caller
    assert 0.5 <= waited <= 3
    assert server.calls == 1
    assert any(entry["event"] == "llm.rate_wait_timeout" for entry in logs)


def _hold_a_lease(prefix: str, key: str, ready) -> None:
    rate_limit.LEASE_S = 1.5
    limiter = RedisRateLimiter(redis.Redis.from_url(REDIS_URL), prefix)
    limiter.acquire(key, "killed", ModelLimits(max_concurrency=1), 10, time.monotonic() + 5)
    ready.set()
    time.sleep(60)


def test_a_killed_holders_lease_expires(redis_client, redis_prefix):
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    key = model_key("http://example.invalid/v1", "m")
    holder = ctx.Process(target=_hold_a_lease, args=(redis_prefix, key, ready))
    holder.start()
    try:
        assert ready.wait(60)
        limiter = RedisRateLimiter(redis_client, redis_prefix)
        with pytest.raises(LLMUnavailable):  # held and renewed while the holder lives
            limiter.acquire(key, "kb", ModelLimits(max_concurrency=1), 10, time.monotonic() + 1.6)
        holder.kill()
        holder.join(10)
        started = time.monotonic()
        lease = limiter.acquire(key, "kb", ModelLimits(max_concurrency=1), 10, time.monotonic() + 10)
        waited = time.monotonic() - started
        lease.release(10)
    finally:
        holder.kill()
    assert waited <= 3  # the lease lives 1.5 s past its last renewal


def test_deleting_the_limiters_keys_mid_run_only_resets_it(redis_client, redis_prefix):
    """What a FLUSHDB does to the limiter (done to its own keys only: the test Redis is shared)."""
    flushed = threading.Event()

    def respond(request):
        if len(server.requests) == 10 and not flushed.is_set():
            for key in redis_client.scan_iter(f"{redis_prefix}:llm-limit:*"):
                redis_client.delete(key)
            flushed.set()
        return stall(0.03, answer("{}", usage=(10, 5)))

    with ScriptedLLM(respond) as server:
        client = _client(server, RedisRateLimiter(redis_client, redis_prefix), max_concurrency=2, rpm=6000)
        errors = _run(6, lambda: [_call(client) for _ in range(6)])
    assert flushed.is_set()
    assert not errors
    assert server.calls == 36
    assert server.max_in_flight <= 4  # at most the flushed holders beside a fresh cap


@pytest.mark.timing
def test_a_429_storm_halves_the_window_and_every_call_gets_through(redis_client, redis_prefix, monkeypatch):
    """The server takes 3 requests at once and answers 429 (retry in 0.2 s) to any more; 12
    threads under a cap of 12 make 60 calls of 0.1 s. The window halves on the first 429s and
    grows back a step per quiet second; every call succeeds within its 5 tries, and the calls
    pass at over 0.4 of the rate the server allows (3 / 0.1 s). Measured on 2 loaded cores: 16-21
    calls/s with 14-15 refusals; without the limiter 57 refusals and 6 of the 60 calls failed
    after 5 tries, at 23 calls/s."""
    monkeypatch.setattr(rate_limit, "RECOVER_S", 1.0)
    refused = []

    def respond(request):
        if server.in_flight > 3:
            refused.append(1)
            return error(429, "rate limited", {"retry-after-ms": "200"})
        return stall(0.1, answer("{}", usage=(10, 5)))

    with ScriptedLLM(respond) as server:
        client = _client(server, RedisRateLimiter(redis_client, redis_prefix), max_concurrency=12)
        started = time.monotonic()
        with capture_logs() as logs:
            errors = _run(12, lambda: [_call(client) for _ in range(5)])
        elapsed = time.monotonic() - started
    assert not errors
    assert server.calls - len(refused) == 60
    assert any(entry["event"] == "llm.rate_slowdown" for entry in logs)
    assert len(refused) <= 30
    assert 60 / elapsed >= 0.4 * 3 / 0.1, 60 / elapsed


def test_a_small_kb_gets_its_share_while_a_large_one_floods(redis_client, redis_prefix):
    """Cap 2: KB "big" with 8 threads, KB "small" with one thread making 5 calls. While small
    works, it holds one of the two slots: big starts at most about as many calls as small does
    (without shares, small would get one grant in nine)."""
    with ScriptedLLM(_slow(0.1)) as server:
        client = _client(server, RedisRateLimiter(redis_client, redis_prefix), max_concurrency=2)
        big_done = threading.Event()

        def big() -> None:
            while not big_done.is_set():
                _call(client, "big")

        flood = [threading.Thread(target=big) for _ in range(8)]
        for t in flood:
            t.start()
        try:
            while server.calls < 10:
                time.sleep(0.02)
            for _ in range(5):
                _call(client, "small")
        finally:
            big_done.set()
            for t in flood:
                t.join(30)
    arrivals = [(t, r["messages"][0]["content"]) for t, r in zip(server.times, server.requests, strict=True)]
    small = [t for t, who in arrivals if who == "kb=small"]
    big_meanwhile = [t for t, who in arrivals if who == "kb=big" and small[0] <= t <= small[-1]]
    assert len(small) == 5
    assert len(big_meanwhile) <= 2 * len(small) + 2, (len(big_meanwhile), len(small))
    assert server.max_in_flight <= 2


class _Recording:
    """A limiter that grants at once and records every acquire and release, in order."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def acquire(self, key: str, share: str, limits: ModelLimits, tokens: int, deadline: float):
        self.events.append(("acquire", share, tokens))
        recording = self

        class _Lease:
            def release(self, used_tokens: int | None, throttled: bool = False) -> None:
                recording.events.append(("release", used_tokens, throttled))

        return _Lease()

    def notice(self, share: str, text: str, ttl_s: float) -> None:
        self.events.append(("notice", share, text))


def test_every_try_takes_and_gives_back_a_lease_with_its_usage():
    """Two 429s then an answer: three leases, each released after its own request; the 429s say
    so, the answer gives its real usage (10 + 5), the reservation was chars / 4 + max_tokens."""
    limiter = _Recording()
    with ScriptedLLM() as server:
        server.push(
            error(429, "slow down", {"retry-after-ms": "10"}),
            error(429, "slow down", {"retry-after-ms": "10"}),
            answer("{}", usage=(10, 5)),
        )
        client = ChatClient(LLMConfig(base_url=server.url, model="scripted", api_key="k", max_tokens=64), limiter)
        _call(client, "kb1")
    reserved = len("kb=kb1") // 4 + 64
    assert limiter.events == [
        ("acquire", "kb1", reserved),
        ("release", len("kb=kb1") // 4, True),
        ("notice", "kb1", "waiting 0 s for rate limit (HTTP 429)"),  # what the KB's status says meanwhile
        ("acquire", "kb1", reserved),
        ("release", len("kb=kb1") // 4, True),
        ("notice", "kb1", "waiting 0 s for rate limit (HTTP 429)"),
        ("acquire", "kb1", reserved),
        ("release", 15, False),
    ]
    assert server.calls == 3


def test_out_of_credit_said_with_a_429_slows_nobody_down():
    """OpenAI answers 429 with code insufficient_quota when the account has no credit: waiting
    cures nothing, so the release does not report a slowdown."""
    limiter = _Recording()
    no_credit = error(429, "You exceeded your current quota")
    no_credit["json"]["error"]["code"] = "insufficient_quota"
    with ScriptedLLM() as server:
        server.push(no_credit, answer("{}", usage=(10, 5)))
        client = ChatClient(LLMConfig(base_url=server.url, model="scripted", api_key="k", max_tokens=64), limiter)
        with contextlib.suppress(LLMError):  # how a KB out of credit goes on is not this test's business
            _call(client, "kb1")
    assert limiter.events[1][0] == "release" and limiter.events[1][2] is False
