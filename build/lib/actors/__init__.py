"""kbwiki's Dramatiq actors; ``dramatiq actors:setup_broker`` (or ``kbwiki worker``) runs them.

Importing this package declares every actor and builds no broker (``actors.declare``);
``setup_broker()`` (``actors.broker``) builds the broker from settings and declares them on it.
``wiki_submit``/``wiki_ingest`` (enter work), ``wiki_map``, ``wiki_reduce``, ``wiki_crosslink``,
``wiki_backlink``, ``wiki_rebuild_index``, ``wiki_write_leads``, ``wiki_retract``/``wiki_delete_kb`` (remove work),
``wiki_lint``; workers also run the recovery sweeper (which also moves dead letters spooled in
Redis while PostgreSQL was down into the table) and a heartbeat that takes back what dead workers held.
"""

from actors import backlink, crosslink, delete, index, ingest, leads, lint, map, reduce  # noqa: F401  (declare the actors)
from actors.broker import setup_broker

__all__ = ["setup_broker"]
