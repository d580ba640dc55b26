#!/usr/bin/env bash
# A private PostgreSQL server for the tests and benchmarks, on 127.0.0.1 only:
#   scripts/postgres.sh start DIR [PORT]   initdb (first time) + start; prints the admin URL
#   scripts/postgres.sh stop DIR
# Debian's `postgresql` package provides the binaries (scripts/setup.sh installs it). initdb
# refuses to run as root, so as root the server runs as the `postgres` user; its socket lives
# in DIR, not /var/run, and the password is random, in DIR/password (mode 600).
set -euo pipefail
cmd=$1; dir=$(realpath -m "$2"); port=${3:-55432}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin" ] || { echo "postgres.sh: no PostgreSQL server installed (apt-get install postgresql)" >&2; exit 2; }
as_owner=()
if [ "$(id -u)" = 0 ]; then as_owner=(runuser -u postgres --); fi

case "$cmd" in
  start)
    mkdir -p "$dir"
    if [ ! -s "$dir/password" ]; then
      (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$dir/password")
    fi
    [ "$(id -u)" = 0 ] && chown -R postgres "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      "${as_owner[@]}" "$bin/initdb" -D "$dir/data" -U reviewbot -A scram-sha-256 \
        --pwfile="$dir/password" -E UTF8 --locale=C.UTF-8 > "$dir/initdb.log"
    fi
    if ! "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" status > /dev/null 2>&1; then
      "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=300" \
        start > /dev/null
    fi
    echo "postgresql://reviewbot:$(cat "$dir/password")@127.0.0.1:$port/postgres"
    ;;
  stop)
    [ -f "$dir/data/postmaster.pid" ] && "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop > /dev/null
    ;;
  *) echo "usage: scripts/postgres.sh start|stop DIR [PORT]" >&2; exit 2 ;;
esac
