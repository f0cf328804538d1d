#!/usr/bin/env bash
# Make sure the servers the tests use answer: PostgreSQL (user postgres, trust auth, pg_trgm
# installable) at 127.0.0.1:$PGPORT and Redis at 127.0.0.1:$REDIS_PORT (defaults 5432 and 6379,
# what tests/conftest.py expects). Servers that already answer are left alone; missing binaries are
# installed with apt-get; servers are started and waited for with a deadline. Exports nothing.
set -euo pipefail

PGPORT="${PGPORT:-5432}"
REDIS_PORT="${REDIS_PORT:-6379}"
DEADLINE_S="${SERVICES_DEADLINE_S:-60}"
HOST=127.0.0.1

say() { echo "services: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

pg_bindir() {  # the directory holding initdb/pg_ctl: PATH first, then Debian's highest version
    local found
    found="$(command -v initdb 2>/dev/null || true)"
    if [[ -n "$found" ]]; then dirname "$(readlink -f "$found")"; return 0; fi
    found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    [[ -n "$found" && -x "$found/pg_ctl" ]] && echo "$found"
}

have_binaries() {
    command -v psql >/dev/null && command -v redis-cli >/dev/null && command -v redis-server >/dev/null \
        && [[ -n "$(pg_bindir)" ]]
}

pg_sql() { psql -X -q -h "$HOST" -p "$PGPORT" -U postgres -d "${2:-postgres}" -v ON_ERROR_STOP=1 -Atc "$1"; }
pg_answers() { command -v psql >/dev/null && [[ "$(pg_sql 'SELECT 1' 2>/dev/null)" == 1 ]]; }
redis_answers() {
    command -v redis-cli >/dev/null && [[ "$(redis-cli -h "$HOST" -p "$REDIS_PORT" ping 2>/dev/null)" == PONG ]]
}

wait_for() {  # wait_for CHECK WHAT LOGFILE
    local check=$1 what=$2 log=$3 end=$((SECONDS + DEADLINE_S))
    until "$check"; do
        if ((SECONDS >= end)); then
            [[ -f "$log" ]] && { say "last lines of $log:"; tail -n 20 "$log" >&2; }
            die "$what did not answer at $HOST within ${DEADLINE_S}s"
        fi
        sleep 0.2
    done
}

install_binaries() {
    command -v apt-get >/dev/null || die "PostgreSQL/Redis binaries are missing and there is no apt-get to install them"
    say "installing postgresql, postgresql-contrib and redis-server with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q postgresql postgresql-contrib redis-server >&2
}

# As root, PostgreSQL must run as an unprivileged account.
pg_user() { id -u postgres >/dev/null 2>&1 && echo postgres || echo nobody; }
as_pg() { if ((EUID == 0)); then runuser -u "$(pg_user)" -- "$@"; else "$@"; fi; }

start_postgres() {
    local cluster
    # A Debian cluster configured for this port: start it the Debian way.
    cluster="$(pg_lsclusters -h 2>/dev/null | awk -v p="$PGPORT" '$3 == p {print $1, $2; exit}' || true)"
    if [[ -n "$cluster" ]]; then
        say "starting Debian cluster $cluster on port $PGPORT"
        # shellcheck disable=SC2086
        pg_ctlcluster --skip-systemctl-redirect $cluster start >&2 || true
        wait_for pg_answers "PostgreSQL (cluster $cluster)" "/var/log/postgresql/postgresql-${cluster// /-}.log"
        return
    fi
    local bindir dir
    bindir="$(pg_bindir)"
    dir="$(mktemp -d "${TMPDIR:-/tmp}/kbwiki-ci-pg.XXXXXX")"
    chmod 755 "$dir"
    ((EUID == 0)) && chown "$(pg_user)" "$dir"
    say "initdb a throw-away cluster in $dir (port $PGPORT, binaries $bindir)"
    as_pg "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
        >"$dir/initdb.log" 2>&1 || { tail -n 20 "$dir/initdb.log" >&2; die "initdb failed"; }
    as_pg "$bindir/pg_ctl" start -D "$dir/data" -l "$dir/postgres.log" -w -t "$DEADLINE_S" \
        -o "-p $PGPORT -c listen_addresses=$HOST -c unix_socket_directories=$dir" >&2 || true
    wait_for pg_answers "PostgreSQL (in $dir)" "$dir/postgres.log"
    say "PostgreSQL runs from $dir/data; stop it with: pg_ctl stop -D $dir/data (as $(pg_user))"
}

start_redis() {
    local log
    log="$(mktemp "${TMPDIR:-/tmp}/kbwiki-ci-redis.XXXXXX.log")"
    say "starting redis-server on port $REDIS_PORT (log $log)"
    redis-server --daemonize yes --bind "$HOST" --port "$REDIS_PORT" --save "" --appendonly no \
        --dir "${TMPDIR:-/tmp}" --logfile "$log" >&2 || true
    wait_for redis_answers "Redis" "$log"
}

ensure_pg_trgm() {  # CREATE EXTENSION in a scratch database, dropped after
    local db="kbwiki_ci_trgm_$$"
    pg_sql "CREATE DATABASE $db" >/dev/null
    if ! pg_sql "CREATE EXTENSION pg_trgm" "$db" >/dev/null; then
        pg_sql "DROP DATABASE IF EXISTS $db" >/dev/null
        return 1
    fi
    pg_sql "DROP DATABASE IF EXISTS $db" >/dev/null
}

pg_ok=false redis_ok=false
pg_answers && pg_ok=true
redis_answers && redis_ok=true

if ! $pg_ok || ! $redis_ok; then
    have_binaries || install_binaries
    have_binaries || die "PostgreSQL/Redis binaries are still missing after apt-get install"
    $pg_ok || start_postgres
    $redis_ok || start_redis
fi

if ! ensure_pg_trgm; then
    command -v apt-get >/dev/null || die "pg_trgm cannot be created at $HOST:$PGPORT (install PostgreSQL's contrib)"
    say "pg_trgm is missing; installing postgresql-contrib"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql-contrib >&2 || true
    ensure_pg_trgm || die "pg_trgm cannot be created at $HOST:$PGPORT even after installing postgresql-contrib"
fi
say "PostgreSQL at $HOST:$PGPORT (pg_trgm ok) and Redis at $HOST:$REDIS_PORT answer"
