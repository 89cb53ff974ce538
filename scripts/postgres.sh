#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests and local work (see ../shared/notes/postgresql.md).
#   scripts/postgres.sh start DIR [PORT]  install PostgreSQL (Debian packages) when missing, create a cluster in DIR
#                                         if there is none, start it on 127.0.0.1:PORT (a free port when not given),
#                                         create database `switchyard`; the last line on stdout is its URL
#   scripts/postgres.sh stop DIR          stop it (fast: sessions are ended, the data is flushed)
#   scripts/postgres.sh kill DIR          stop it at once, as a crash would (recovery runs at the next start)
#   scripts/postgres.sh restart DIR       an immediate stop, then a start on the same port; prints the URL again
#   scripts/postgres.sh url DIR           the URL of the cluster in DIR
# Every command can be run twice in a row: starting a running cluster prints its URL, stopping a stopped one does
# nothing. As root (CI) the server runs as the `postgres` user, since PostgreSQL refuses to run as root.
#
# Layout of DIR: data/ (the cluster), log (the server's log), port (the port it was started on), and the server's
# socket (so none goes to /var/run/postgresql). Trust authentication, listening on 127.0.0.1 only: never expose it.
set -euo pipefail

say() { printf 'postgres.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

usage() { die "usage: $0 start DIR [PORT] | stop DIR | kill DIR | restart DIR | url DIR"; }

bin_dir() {
  local initdb
  initdb=$(ls -1d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$initdb" ] && dirname "$initdb"
}

install() {
  [ -n "$(bin_dir)" ] && return 0
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "PostgreSQL is not installed and installing it needs root (or sudo)"
    sudo=(sudo -n)
  fi
  say "installing PostgreSQL from Debian packages (~20 s)"
  local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300)
  # A fresh image has no package lists: update once when the first attempt cannot find the package.
  if ! "${apt[@]}" install -y -q --no-install-recommends postgresql >&2; then
    "${apt[@]}" update -q >&2
    "${apt[@]}" install -y -q --no-install-recommends postgresql >&2
  fi
  [ -n "$(bin_dir)" ] || die "installed the postgresql package, but found no /usr/lib/postgresql/*/bin/initdb"
}

# Runs a command as the cluster's owner: `postgres` when we are root, else ourselves.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    # runuser passes the arguments as they are (su would need them quoted into one shell command).
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

abs_dir() {
  mkdir -p "$1"
  (cd "$1" && pwd -P)
}

# Whether something listens on 127.0.0.1:$1.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

running() { [ -f "$dir/data/postmaster.pid" ] && as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; }

url() { echo "postgres://postgres@127.0.0.1:$(cat "$dir/port")/switchyard"; }

wait_ready() {
  local port
  port=$(cat "$dir/port")
  for _ in $(seq 1 300); do
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres -d switchyard && return 0
    sleep 0.1
  done
  die "the server on port $port did not answer within 30 s (see $dir/log)"
}

create_database() {
  local port
  port=$(cat "$dir/port")
  if [ "$("$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -XtAc \
    "SELECT 1 FROM pg_database WHERE datname = 'switchyard'")" != 1 ]; then
    # Another `start` may create it at the same moment: it exists either way.
    "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres switchyard 2>/dev/null \
      || "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d switchyard -XtAc 'SELECT 1' >/dev/null \
      || die "cannot create database switchyard (see $dir/log)"
  fi
}

init_cluster() {
  [ -f "$dir/data/PG_VERSION" ] && return 0
  # A socket path longer than 107 bytes cannot be bound: say so now rather than through the server's log.
  [ "${#dir}" -le 90 ] || die "$dir is too long a path for the server's socket (at most 90 characters)"
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || die "no user postgres (the postgresql package creates it)"
    chown postgres: "$dir"
    # The server, as postgres, must reach DIR through its parents (a `mktemp -d` is 700).
    runuser -u postgres -- test -x "$dir" \
      || die "the postgres user cannot reach $dir: make its parent folders readable (chmod 755)"
  fi
  chmod 700 "$dir"
  rm -rf "$dir/data"
  as_owner "$bin/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 --no-instructions >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; die "initdb failed in $dir/data"; }
}

# Starts the server on $1; fails (leaving the log) when it cannot.
start_on() {
  local port="$1"
  echo "$port" >"$dir/port"
  [ "$(id -u)" = 0 ] && chown postgres: "$dir/port"
  # -w waits until the server accepts connections or has exited; -t bounds it.
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir" start >/dev/null 2>&1
}

start() {
  local want="${1:-}"
  install
  bin=$(bin_dir)
  init_cluster
  if running; then
    [ -z "$want" ] || [ "$want" = "$(cat "$dir/port")" ] || say "already running on port $(cat "$dir/port"), not $want"
  elif [ -n "$want" ]; then
    start_on "$want" || { tail -n 5 "$dir/log" >&2; die "cannot start the server on port $want (see $dir/log)"; }
  else
    # The port it had, else a random one; another process may take a port between the check and the bind: retry.
    local port started=""
    port=$(cat "$dir/port" 2>/dev/null || true)
    for _ in $(seq 1 10); do
      if [ -z "$port" ] || port_busy "$port"; then
        port=$((20000 + RANDOM % 30000))
        port_busy "$port" && { port=""; continue; }
      fi
      if start_on "$port"; then started=1; break; fi
      say "could not start on port $port; trying another"
      port=""
    done
    [ -n "$started" ] || { tail -n 5 "$dir/log" >&2; die "cannot start the server (see $dir/log)"; }
  fi
  wait_ready
  create_database
  url
}

stop() {
  local mode="$1"
  bin=$(bin_dir)
  [ -n "$bin" ] || return 0
  running || return 0
  as_owner "$bin/pg_ctl" -D "$dir/data" -m "$mode" -w -t 60 stop >/dev/null
}

restart() {
  bin=$(bin_dir)
  [ -n "$bin" ] && [ -f "$dir/port" ] || die "no cluster in $dir: start it first"
  stop immediate
  start_on "$(cat "$dir/port")" || { tail -n 5 "$dir/log" >&2; die "cannot restart the server (see $dir/log)"; }
  wait_ready
  url
}

[ $# -ge 2 ] || usage
command="$1"
case "$command" in
  start) dir=$(abs_dir "$2") ;;
  *)
    [ -d "$2" ] || { [ "$command" = stop ] || [ "$command" = kill ]; } || die "no cluster in $2"
    [ -d "$2" ] || exit 0
    dir=$(cd "$2" && pwd -P)
    ;;
esac
case "$command" in
  start)
    [ $# -le 3 ] || usage
    start "${3:-}"
    ;;
  stop) stop fast ;;
  kill) stop immediate ;;
  restart) restart ;;
  url)
    [ -f "$dir/port" ] || die "no cluster in $dir"
    url
    ;;
  *) usage ;;
esac
