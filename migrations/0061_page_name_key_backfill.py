"""Fill ``wiki_pages.name_key`` of the live entity and concept pages written before 0060.

The key is ``wiki.dedup.name_key(title)``, which needs the lexicon, so it is computed here in
Python and written back in one statement per 5,000 pages. Rolling back leaves the keys (0060's
rollback drops the column).
"""

from yoyo import step

__depends__ = {"0060_page_name_key"}

_CHUNK = 5000
_SELECT = (
    "SELECT id, title FROM wiki_pages WHERE deleted_at IS NULL AND name_key IS NULL"
    " AND page_type IN ('entity', 'concept') ORDER BY id"
)
_UPDATE = (
    "UPDATE wiki_pages p SET name_key = k.key FROM unnest(%s::bigint[], %s::text[]) AS k(id, key) WHERE p.id = k.id"
)


def apply(conn) -> None:
    from wiki.dedup import name_key

    cur = conn.cursor()
    rows = cur.execute(_SELECT).fetchall()
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        cur.execute(_UPDATE, ([r[0] for r in chunk], [name_key(r[1]) for r in chunk]))


steps = [step(apply)]
