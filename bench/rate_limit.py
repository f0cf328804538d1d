"""Benchmark: the model's shared rate limit (``repos.rate_limit``) against the scripted server.

Usage::

    .venv/bin/python bench/rate_limit.py [--latency 0.2] [--cap 8] [--threads 16] [--calls 160]
        [--processes 2] [--server-capacity 0]

``--processes`` processes each run ``--threads`` threads making ``--calls`` calls in all through
``ChatClient`` with the Redis limiter at ``--cap``; the server answers after ``--latency`` s, and
with ``--server-capacity N`` answers 429 (retry after 0.3 s) to a request beyond N in flight
(``--cap 0`` then leaves only the 429s to slow the callers down). Prints the wall time, the ideal
(calls x latency / min(cap, server capacity)), their ratio, the most requests in flight the server
saw, and the 429s. Needs Redis (``REDIS_URL``, default db 9 on localhost).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis  # noqa: E402

from repos.rate_limit import RedisRateLimiter  # noqa: E402
from tests.support.llm_server import ScriptedLLM, answer, error, stall  # noqa: E402
from wiki.extract.llm.client import ChatClient  # noqa: E402
from wiki.extract.llm.ratelimit import sharing  # noqa: E402
from wiki.llm_config import LLMConfig  # noqa: E402

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/9")


def _worker(url: str, prefix: str, cap: int, threads: int, calls: int, limited: bool) -> None:
    client = ChatClient(
        LLMConfig(base_url=url, model="bench", api_key="k", max_tokens=64, max_concurrency=cap, retry_max_wait_s=2),
        RedisRateLimiter(redis.Redis.from_url(REDIS_URL), prefix) if limited else None,
    )
    started = time.monotonic()
    left = [calls]
    lock = threading.Lock()

    def loop() -> None:
        with sharing("bench"):
            while True:
                with lock:
                    if left[0] <= 0:
                        return
                    left[0] -= 1
                client.complete([{"role": "user", "content": "x"}], "json_object", {}, deadline=time.monotonic() + 240)

    pool = [threading.Thread(target=loop) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    print(f"process {os.getpid()}: {calls} calls in {time.monotonic() - started:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--cap", type=int, default=8)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--calls", type=int, default=160)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--server-capacity", type=int, default=0)
    parser.add_argument("--no-limiter", action="store_true", help="calls without the limiter (a baseline)")
    args = parser.parse_args()
    refused: list[int] = []

    def respond(request: dict) -> dict:
        if args.server_capacity and server.in_flight > args.server_capacity:
            refused.append(1)
            return error(429, "rate limited", {"retry-after-ms": "300"})
        return stall(args.latency, answer("{}", usage=(10, 5)))

    prefix = f"bench-rate-{uuid.uuid4().hex[:8]}"
    ctx = multiprocessing.get_context("spawn")
    with ScriptedLLM(respond) as server:
        started = time.monotonic()
        procs = [
            ctx.Process(
                target=_worker,
                args=(server.url, prefix, args.cap, args.threads, args.calls // args.processes, not args.no_limiter),
            )
            for _ in range(args.processes)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        wall = time.monotonic() - started
    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(f"{prefix}*"):
        client.delete(key)
    width = min(c for c in (args.cap, args.server_capacity) if c) if (args.cap or args.server_capacity) else None
    answered = server.calls - len(refused)
    ideal = answered * args.latency / width if width else args.latency
    span = server.times[-1] - server.times[0] + args.latency
    print(
        f"calls {answered} wall {wall:.2f} s (first to last request {span:.2f} s) "
        f"ideal {ideal:.2f} s ratio {span / ideal:.2f} "
        f"max in flight {server.max_in_flight} 429s {len(refused)} exit codes {[p.exitcode for p in procs]}"
    )


if __name__ == "__main__":
    main()
