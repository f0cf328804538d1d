"""What a face of ``kbwiki serve`` (the web view, the read API, MCP) does while its database is away
(``kbwiki down``, a restart, a network cut): the pool reconnects once it is back, so a request is
told to retry (503 with ``Retry-After``) rather than shown a server error, and serve's log says so
once per outage, not once per request.
"""

from __future__ import annotations

import sys
import time

from psycopg import OperationalError
from psycopg_pool import PoolTimeout

from wiki.errors import ServersUnreachable

#: The errors of a database (or server) that is away.
SERVER_AWAY = (OperationalError, PoolTimeout, ServersUnreachable)
#: Seconds a client is told to wait before it tries again.
RETRY_AFTER_S = 5
#: Seconds without a request finding the database away after which the next one logs again.
OUTAGE_QUIET_S = 30.0
#: What a reader is told meanwhile.
RETRY_TEXT = "the wiki's database is not answering right now; try again in a few seconds"


class OutageLog:
    """Says on stderr (serve's own log, beside "serving on") that the database is away, once per
    outage: again only after ``OUTAGE_QUIET_S`` seconds without a request finding it away.
    ``answers``: what the face answers meanwhile, e.g. "pages answer 503"."""

    def __init__(self, answers: str) -> None:
        self.answers = answers
        self.last = float("-inf")  # when a request last found the database away (monotonic s)

    def seen(self, exc: BaseException) -> None:
        """A request found the database away with ``exc``."""
        now = time.monotonic()
        if now - self.last > OUTAGE_QUIET_S:
            said = (str(exc).strip().splitlines() or [""])[0]
            print(
                f"kbwiki: the database is not answering ({type(exc).__name__}: {said});"
                f" {self.answers} until it is back",
                file=sys.stderr,
                flush=True,
            )
        self.last = now
