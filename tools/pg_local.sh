#!/usr/bin/env bash
# A throwaway PostgreSQL server for lionrun's tests, started and stopped by the project itself.
#
#   tools/pg_local.sh up DIR     install Debian's postgresql when missing, initdb into DIR/data,
#                                start it on a socket in DIR and a free loopback port, create the
#                                database `lionrun`, and write its connection string to DIR/dsn
#   tools/pg_local.sh down DIR   stop it (fast shutdown, then immediate) and remove DIR
#   tools/pg_local.sh stop DIR   stop it (fast shutdown), keeping DIR: the fault tests' outage
#   tools/pg_local.sh start DIR  start a stopped DIR again on its port (its data as it was)
#
# Runs as root in CI (the server itself runs as the unprivileged `postgres` user, as initdb
# demands) or as an ordinary user who owns DIR. Idempotent: `up` on a running DIR is a no-op.
set -euo pipefail

usage() { echo "usage: $0 up|down|stop|start DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
action=$1
dir=$2

find_bindir() {
    local candidate
    for candidate in /usr/lib/postgresql/*/bin; do
        if [ -x "${candidate}/pg_ctl" ]; then
            echo "${candidate}"
            return 0
        fi
    done
    return 1
}

install_server() {
    if find_bindir >/dev/null; then
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "$0: PostgreSQL is not installed and this is not root; install Debian's postgresql" >&2
        exit 1
    fi
    echo "$0: installing Debian's postgresql" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq </dev/null >/dev/null
    apt-get install -y -qq --no-install-recommends postgresql </dev/null >/dev/null
    # Debian's package starts a cluster of its own; ours is separate and the system one is not needed.
    if command -v pg_ctlcluster >/dev/null; then
        for conf in /etc/postgresql/*/main; do
            [ -d "${conf}" ] || continue
            version=$(basename "$(dirname "${conf}")")
            pg_ctlcluster "${version}" main stop >/dev/null 2>&1 || true
        done
    fi
    find_bindir >/dev/null
}

as_server_user() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

free_port() {
    python3 - <<'PY'
import socket
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
PY
}

up() {
    install_server
    local bindir
    bindir=$(find_bindir)
    mkdir -p "${dir}"
    dir=$(cd "${dir}" && pwd)
    if [ -f "${dir}/dsn" ] && as_server_user "${bindir}/pg_ctl" -D "${dir}/data" status >/dev/null 2>&1; then
        cat "${dir}/dsn"
        return 0
    fi
    if [ "$(id -u)" -eq 0 ]; then
        chown postgres: "${dir}"
        # The server user must be able to reach DIR: let it through every folder above (search only).
        local above
        above=$(dirname "${dir}")
        while [ "${above}" != "/" ]; do
            chmod o+x "${above}"
            above=$(dirname "${above}")
        done
    fi
    chmod 0700 "${dir}"
    # Durable, as li relies on (docs/many-hosts.md): the fault tests SIGKILL this server, and an end
    # it confirmed must survive that. initdb's own files are synced too.
    as_server_user "${bindir}/initdb" -D "${dir}/data" -U postgres -A trust -E UTF8 >/dev/null
    local port
    port=$(free_port)
    cat >>"${dir}/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = ${port}
unix_socket_directories = '${dir}'
fsync = on
synchronous_commit = on
full_page_writes = on
max_connections = 300
CONF
    as_server_user "${bindir}/pg_ctl" -D "${dir}/data" -l "${dir}/server.log" -w -t 60 start >/dev/null
    as_server_user "${bindir}/createdb" -h "${dir}" -p "${port}" -U postgres lionrun
    local dsn="postgresql://postgres@127.0.0.1:${port}/lionrun"
    echo "${dsn}" >"${dir}/dsn"
    chmod 0644 "${dir}/dsn"
    echo "${dsn}"
}

down() {
    [ -d "${dir}" ] || return 0
    local bindir
    if bindir=$(find_bindir) && [ -d "${dir}/data" ]; then
        as_server_user "${bindir}/pg_ctl" -D "${dir}/data" -m fast -w -t 20 stop >/dev/null 2>&1 \
            || as_server_user "${bindir}/pg_ctl" -D "${dir}/data" -m immediate -w -t 20 stop >/dev/null 2>&1 \
            || true
    fi
    rm -rf "${dir}"
}

stop() {
    local bindir
    bindir=$(find_bindir)
    as_server_user "${bindir}/pg_ctl" -D "${dir}/data" -m fast -w -t 20 stop >/dev/null
}

start() {
    local bindir
    bindir=$(find_bindir)
    as_server_user "${bindir}/pg_ctl" -D "${dir}/data" -l "${dir}/server.log" -w -t 60 start >/dev/null
}

case "${action}" in
    up) up ;;
    down) down ;;
    stop) stop ;;
    start) start ;;
    *) usage ;;
esac
