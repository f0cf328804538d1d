"""A log file on a full disk: log calls go on (the line is dropped) instead of raising."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import structlog

from middleware.logging import configure_logging

FULL = Path("/dev/full")  # every write fails with ENOSPC, as on a full disk


@pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")
def test_logging_to_a_full_disk_does_not_raise():
    root = logging.getLogger()
    handlers = list(root.handlers)
    try:
        configure_logging("INFO", FULL)
        structlog.get_logger("test").warning("supervisor.server_down", server="postgres")
        logging.getLogger("test.stdlib").warning("a standard-library record")
    finally:
        root.handlers[:] = handlers
        configure_logging("INFO")
