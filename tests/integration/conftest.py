"""Fixtures shared by the integration tests."""

from __future__ import annotations

import pytest

from tests.support.llm_server import fresh_llm


@pytest.fixture()
def server():
    """A scripted OpenAI-compatible server with an empty script (``tests.support.llm_server``)."""
    with fresh_llm() as s:
        yield s
