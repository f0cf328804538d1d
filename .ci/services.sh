#!/usr/bin/env bash
# Make sure the servers the tests use answer: PostgreSQL (user postgres, trust auth, pg_trgm
# installable) at 127.0.0.1:$PGPORT and Redis at 127.0.0.1:$REDIS_PORT (defaults 5432 and 6379,
# what tests/conftest.py expects). Servers that already answer are left alone. Otherwise a
# throw-away server is started from the first binaries found: the system's; as root, packages
# installed with apt-get; else the pinned embedded wheels of the project's venv ($KBWIKI_PYTHON,
# default .venv/bin/python). Waits with a deadline; a server that does not answer is reported with
# its real error (authentication, port in use, its log). Exports nothing.
set -euo pipefail

PGPORT="${PGPORT:-5432}"
REDIS_PORT="${REDIS_PORT:-6379}"
DEADLINE_S="${SERVICES_DEADLINE_S:-60}"
PYTHON_BIN="${KBWIKI_PYTHON:-.venv/bin/python}"
HOST=127.0.0.1

say() { echo "services: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

wheel_path() {  # the embedded wheels' PostgreSQL bin folder (pg) or valkey-server (redis), if installed
    [[ -x "$PYTHON_BIN" ]] || return 0
    "$PYTHON_BIN" - "$1" 2>/dev/null <<'EOF' || true
import sys
from kbwiki.services import postgres, valkey
builds = (postgres if sys.argv[1] == "pg" else valkey).builds()
print(next((b.path for b in builds if b.origin.endswith("wheel")), ""))
EOF
}

pg_bindir() {  # initdb/pg_ctl: PATH, then Debian's highest version, then the embedded wheel (not as root)
    local found
    found="$(command -v initdb 2>/dev/null || true)"
    if [[ -n "$found" ]]; then dirname "$(readlink -f "$found")"; return 0; fi
    found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    if [[ -n "$found" && -x "$found/pg_ctl" ]]; then echo "$found"; return 0; fi
    ((EUID == 0)) || wheel_path pg
}

redis_bin() {
    command -v redis-server 2>/dev/null || command -v valkey-server 2>/dev/null || { ((EUID == 0)) || wheel_path redis; }
}

# Probes keep their last error, so a server that never answers is reported with why.
LAST_ERROR=""
probe() {  # probe pg|redis: the server answers; else LAST_ERROR says why (one line)
    local out
    out="$("$PYTHON_BIN" - "$1" "$HOST" "$PGPORT" "$REDIS_PORT" 2>&1 <<'EOF'
import sys
what, host, pg_port, redis_port = sys.argv[1:]
try:
    if what == "pg":
        import psycopg
        with psycopg.connect(f"postgresql://postgres@{host}:{pg_port}/postgres", connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    else:
        import redis
        redis.Redis(host=host, port=int(redis_port), socket_timeout=3).ping()
    print("ok")
except Exception as exc:
    print(" ".join(f"{type(exc).__name__}: {exc}".split()))
EOF
)"
    [[ "$out" == ok ]] && return 0
    LAST_ERROR="$(printf '%s\n' "$out" | tail -n 1)"
    return 1
}
pg_answers() { probe pg; }
redis_answers() { probe redis; }

port_user() {  # who listens on a TCP port, when ss can tell
    command -v ss >/dev/null || return 0
    ss -Hltnp "sport = :$1" 2>/dev/null | sed -n 's/.*users:((\("[^"]*"\).*/\1/p' | head -n 1
}

wait_for() {  # wait_for CHECK WHAT LOGFILE PORT
    local check=$1 what=$2 log=$3 port=$4 end=$((SECONDS + DEADLINE_S)) holder
    until "$check"; do
        if ((SECONDS >= end)); then
            [[ -s "$log" ]] && { say "last lines of $log:"; tail -n 20 "$log" >&2; }
            holder="$(port_user "$port")"
            [[ -n "$holder" ]] && say "port $port is in use by $holder"
            die "$what did not answer at $HOST:$port within ${DEADLINE_S}s: ${LAST_ERROR:-no error reported}"
        fi
        sleep 0.2
    done
}

apt_install() {  # as root: PostgreSQL (+ contrib for pg_trgm) and Redis, without Debian's default cluster
    export DEBIAN_FRONTEND=noninteractive
    # Debian's postinst creates a "main" cluster on 5432 with password auth for TCP; we start our own
    # trust-auth server instead. The setting must be in place before the server package installs;
    # it is left alone where clusters exist already (someone chose how they are made).
    local conf=/etc/postgresql-common/createcluster.conf
    if [[ -z "$(pg_lsclusters -h 2>/dev/null || true)" ]]; then
        mkdir -p "$(dirname "$conf")"
        if [[ -f "$conf" ]] && grep -q '^[[:space:]]*create_main_cluster' "$conf"; then
            sed -i 's/^[[:space:]]*create_main_cluster.*/create_main_cluster = false/' "$conf"
        else
            echo "create_main_cluster = false" >>"$conf"
        fi
    fi
    say "installing postgresql, postgresql-contrib and redis-server with apt-get"
    apt-get update -q >&2 || say "apt-get update failed; installing from the package lists there are"
    apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confdef \
        -o Dpkg::Options::=--force-confold postgresql postgresql-contrib redis-server >&2
}

# As root, PostgreSQL must run as an unprivileged account.
pg_user() { id -u postgres >/dev/null 2>&1 && echo postgres || echo nobody; }
as_pg() { if ((EUID == 0)); then runuser -u "$(pg_user)" -- "$@"; else "$@"; fi; }

start_postgres() {
    local cluster bindir dir
    # A Debian cluster configured for this port: start it the Debian way; it must allow user
    # postgres from 127.0.0.1 without a password (what the tests use).
    cluster="$(pg_lsclusters -h 2>/dev/null | awk -v p="$PGPORT" '$3 == p {print $1, $2; exit}' || true)"
    if [[ -n "$cluster" ]]; then
        say "starting Debian cluster $cluster on port $PGPORT"
        # shellcheck disable=SC2086
        pg_ctlcluster --skip-systemctl-redirect $cluster start >&2 || true
        wait_for pg_answers "PostgreSQL (Debian cluster $cluster; it must trust user postgres from $HOST in its pg_hba.conf)" \
            "/var/log/postgresql/postgresql-${cluster// /-}.log" "$PGPORT"
        return
    fi
    bindir="$(pg_bindir)"
    [[ -n "$bindir" ]] || die "no PostgreSQL binaries: run make install (it installs the embedded ones) or install PostgreSQL"
    dir="$(mktemp -d "${TMPDIR:-/tmp}/kbwiki-ci-pg.XXXXXX")"
    chmod 755 "$dir"
    ((EUID == 0)) && chown "$(pg_user)" "$dir"
    say "initdb a throw-away cluster in $dir (port $PGPORT, binaries $bindir)"
    as_pg "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
        >"$dir/initdb.log" 2>&1 || { tail -n 20 "$dir/initdb.log" >&2; die "initdb failed (log $dir/initdb.log)"; }
    if ! as_pg "$bindir/pg_ctl" start -D "$dir/data" -l "$dir/postgres.log" -w -t "$DEADLINE_S" \
        -o "-p $PGPORT -c listen_addresses=$HOST -c unix_socket_directories=$dir" >&2; then
        tail -n 20 "$dir/postgres.log" >&2
        die "PostgreSQL did not start on $HOST:$PGPORT: $(grep -E 'FATAL|PANIC' "$dir/postgres.log" | tail -n 1) (log $dir/postgres.log)"
    fi
    wait_for pg_answers "PostgreSQL (in $dir)" "$dir/postgres.log" "$PGPORT"
    say "PostgreSQL runs from $dir/data; stop it with: pg_ctl stop -D $dir/data (as $( ((EUID == 0)) && pg_user || id -un))"
}

start_redis() {
    local log binary
    binary="$(redis_bin)"
    [[ -n "$binary" ]] || die "no redis-server: run make install (it installs the embedded valkey-server) or install Redis"
    log="$(mktemp "${TMPDIR:-/tmp}/kbwiki-ci-redis.XXXXXX.log")"
    say "starting $binary on port $REDIS_PORT (log $log)"
    "$binary" --daemonize yes --bind "$HOST" --port "$REDIS_PORT" --save "" --appendonly no \
        --dir "${TMPDIR:-/tmp}" --logfile "$log" >&2 || true
    wait_for redis_answers "Redis ($binary)" "$log" "$REDIS_PORT"
}

pg_sql() {  # pg_sql SQL [DB]: one statement as user postgres
    "$PYTHON_BIN" -c '
import sys, psycopg
with psycopg.connect(sys.argv[1], autocommit=True) as conn:
    conn.execute(sys.argv[2])' "postgresql://postgres@$HOST:$PGPORT/${2:-postgres}" "$1"
}

ensure_pg_trgm() {  # CREATE EXTENSION in a scratch database, dropped after
    local db="kbwiki_ci_trgm_$$" rc=0
    pg_sql "CREATE DATABASE $db" >/dev/null
    pg_sql "CREATE EXTENSION pg_trgm" "$db" >/dev/null 2>&1 || rc=1
    pg_sql "DROP DATABASE IF EXISTS $db" >/dev/null
    return $rc
}

[[ -x "$PYTHON_BIN" ]] || die "$PYTHON_BIN is missing: run make install first"
pg_ok=false redis_ok=false
pg_answers && pg_ok=true
redis_answers && redis_ok=true

if ! $pg_ok || ! $redis_ok; then
    if ((EUID == 0)) && command -v apt-get >/dev/null && { [[ -z "$(pg_bindir)" ]] || [[ -z "$(redis_bin)" ]]; }; then
        apt_install
    fi
    # apt's postinst may have started Redis already.
    $redis_ok || ! redis_answers || redis_ok=true
    $pg_ok || start_postgres
    $redis_ok || start_redis
fi

if ! ensure_pg_trgm; then
    command -v apt-get >/dev/null && ((EUID == 0)) || die "pg_trgm cannot be created at $HOST:$PGPORT (install PostgreSQL's contrib)"
    say "pg_trgm is missing; installing postgresql-contrib"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql-contrib >&2 || true
    ensure_pg_trgm || die "pg_trgm cannot be created at $HOST:$PGPORT even after installing postgresql-contrib"
fi
# The browser tests (tests/browser) drive Debian's headless chromium through its chromedriver; a
# CJK font makes their screenshots of CJK pages readable. They skip when chromium is absent, so a
# failed install here is reported and not fatal. KBWIKI_BROWSER_TESTS=0 leaves them skipped.
if [[ "${KBWIKI_BROWSER_TESTS:-1}" != 0 ]] && ! { command -v chromium >/dev/null && command -v chromedriver >/dev/null; }; then
    if ((EUID == 0)) && command -v apt-get >/dev/null; then
        say "installing chromium, chromium-driver and a CJK font for the browser tests"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            chromium chromium-driver fonts-wqy-zenhei >&2 || say "chromium could not be installed: the browser tests will skip"
    else
        say "no chromium/chromedriver (install chromium and chromium-driver): the browser tests will skip"
    fi
fi
say "PostgreSQL at $HOST:$PGPORT (pg_trgm ok) and Redis at $HOST:$REDIS_PORT answer"
