"""Importing the actors package builds no broker and connects to nothing: the broker is built by
``actors.setup_broker()`` alone, once the servers are known."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

CHECK = """
import importlib, pkgutil, socket, sys
import dramatiq.broker

connects = []
real_connect = socket.socket.connect
def connect(self, address):
    connects.append(address)
    return real_connect(self, address)
socket.socket.connect = connect

import actors
assert dramatiq.broker.global_broker is None, dramatiq.broker.global_broker
names = sorted(m.name for m in pkgutil.iter_modules(actors.__path__))
for name in names:
    importlib.import_module(f"actors.{name}")
assert dramatiq.broker.global_broker is None, dramatiq.broker.global_broker
assert not connects, connects
print(len(names), " ".join(sorted(actors.declare.DECLARED)))
"""


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_importing_every_actor_module_builds_no_broker_and_opens_no_connection():
    env = {
        **os.environ,
        "REDIS_URL": "redis://127.0.0.1:1",
        "DATABASE_URL": f"postgresql://postgres@127.0.0.1:{_closed_port()}/kbwiki",
    }
    out = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    modules, declared = out.stdout.split(maxsplit=1)
    assert int(modules) >= 10
    assert "wiki_submit" in declared.split() and "wiki_reduce" in declared.split()


def test_sending_before_setup_broker_says_what_to_call():
    code = (
        "from actors.ingest import wiki_submit\n"
        "try:\n    wiki_submit.send(tenant_id=1, knowledge_base_id='kb', title='t', content='c')\n"
        "except Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "REDIS_URL": "redis://127.0.0.1:1"},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert out.stdout.startswith("BrokerNotSet") and "setup_broker()" in out.stdout


def test_setup_broker_declares_every_actor_on_the_global_broker():
    code = (
        "import dramatiq, actors\n"
        "from wiki.settings import Settings\n"
        "broker = actors.setup_broker(Settings(redis_url='redis://127.0.0.1:1'))\n"
        "assert dramatiq.get_broker() is broker\n"
        "from actors.declare import DECLARED\n"
        "assert set(broker.get_declared_actors()) == set(DECLARED), broker.get_declared_actors()\n"
        "print(broker.get_actor('wiki_submit').options['max_retries'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=dict(os.environ), capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 100  # a data-carrying actor: retries for KBWIKI_DATA_RETRY_S (actors.retry_policy)
