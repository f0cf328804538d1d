"""Local servers for the embedded default: PostgreSQL (with pg_trgm) and a Redis-compatible server.

With ``DATABASE_URL`` / ``REDIS_URL`` unset, a command attaches to the servers of its home
(``KBWIKI_HOME``, else ``$XDG_DATA_HOME/kbwiki``), which the home's supervisor
(:mod:`kbwiki.supervisor`) runs, starting it when none runs; they outlive the command, keep their
ports across restarts, and stop on ``kbwiki down`` or when idle for ``Settings.servers_idle_s``.

``server`` says what a kind of server is (``Server``) and ``builds`` lists the two
(``SERVERS``: ``postgres``, ``valkey``) and picks the build a home runs; ``run_as``: the account
PostgreSQL runs as (``system_account`` as root without user namespaces); ``state``: the home's
files, locks and notices; ``client``: a command's side; ``logs``: a log as one line. Importing
this package imports none of them.
"""
