"""kbwiki's Dramatiq actors: ``dramatiq actors`` (or ``kbwiki worker``) loads this package.

Importing it builds the RedisBroker from settings and declares every actor on it:
``wiki_submit``/``wiki_ingest`` (enter work), ``wiki_map``, ``wiki_reduce``, ``wiki_crosslink``,
``wiki_backlink``, ``wiki_rebuild_index``, ``wiki_retract``/``wiki_delete_kb`` (remove work);
workers also run the recovery sweeper (which also moves dead letters spooled in Redis while
PostgreSQL was down into the table) and a heartbeat that takes back what dead workers held.
"""

from actors.broker import build_broker
from wiki.settings import get_settings

broker = build_broker(get_settings())

from actors import backlink, crosslink, delete, index, ingest, lint, map, reduce  # noqa: E402,F401  (declares the actors)
from actors.deps import get_deps  # noqa: E402
from actors.liveness import Liveness  # noqa: E402
from actors.recovery import sweep  # noqa: E402
from actors.requeue import unspool  # noqa: E402
from middleware.heartbeat import HeartbeatMiddleware  # noqa: E402
from middleware.periodic import PeriodicMiddleware  # noqa: E402


def _recover() -> None:
    deps = get_deps()
    sweep(deps)
    unspool(deps)


broker.add_middleware(PeriodicMiddleware(_recover, get_settings().sweep_interval_s, "sweeper"))
_liveness = Liveness(get_deps)
broker.add_middleware(
    HeartbeatMiddleware(_liveness.start, _liveness.beat, _liveness.stop, get_settings().heartbeat_interval_s)
)
