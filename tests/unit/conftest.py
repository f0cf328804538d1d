"""Unit tests need no server: a test here that asks for the session database fails at once and says
where it belongs (``make test-unit`` runs this folder with no PostgreSQL and no Redis)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def database_url():
    pytest.fail("a unit test needs no server: a test that uses PostgreSQL belongs in tests/integration")
