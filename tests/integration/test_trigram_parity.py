"""wiki.dedup's trigram similarity equals pg_trgm's, so a batch filters its own pages exactly as
PostgreSQL filters the KB's: a pair merges in one batch iff it merges across batches."""

from __future__ import annotations

import pytest

from wiki.dedup import TRGM_THRESHOLD, trigram_similarity

PAIRS = [
    ("filetype", "file type"),  # 0.58: the pair that merged in one batch but not across two
    ("FileType", "FileTypes"),
    ("asyncio.CancelledError", "CancelledError"),
    ("Python Software Foundation", "Python Software Foundations"),
    ("Read-Copy Update", "read copy update"),
    ("os.path", "os.pathsep"),
    ("IPv4", "IPv6"),
    ("Café Müller", "cafe muller"),
    ("x", "x"),
    ("a_b", "a b"),
    ("!!!", "???"),
    ("TCP/IP stack", "tcp ip"),
]


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_trigram_similarity_matches_pg_trgm(pool, a, b):
    with pool.connection() as conn:
        expected = conn.execute("SELECT similarity(lower(%s), lower(%s)) AS s", (a, b)).fetchone()["s"]
    assert trigram_similarity(a, b) == pytest.approx(expected, abs=1e-6)


def test_the_pool_uses_the_dedup_threshold(pool):
    with pool.connection() as conn:
        value = conn.execute("SELECT current_setting('pg_trgm.similarity_threshold') AS v").fetchone()["v"]
    assert float(value) == TRGM_THRESHOLD
