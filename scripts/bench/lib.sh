# Shared by the benchmarks in scripts/bench. Source it.
#
#   bench_setup            PostgreSQL (durable), binaries, the C harness, a fresh database
#   bench_start_server ... start rewind-server on a free port (SERVER_PID, SERVER_PORT)
#   bench_stop_server      SIGTERM it and wait
#   bench_conditions       one line: cores, durability, versions
#   bench_rss PID          VmRSS of a process, in KiB
#   kv KEY FILE            the value of a `key value` line
#   ratio A B              A/B with two decimals
#
# PostgreSQL: when PGHOST is already set, that cluster is used as it is (e.g. a
# developer's own); otherwise the project's cluster from scripts/lib/env.sh,
# always durable: REWIND_PG_FAST is ignored, and a cluster that scripts/test
# left running without fsync is restarted with it (a benchmark of commits
# without fsync measures nothing worth having).
#
# Binaries: REWIND_BIN (default .build/release). Only when they are missing is
# `swift build -c release` run, under `flock /tmp/rewind-build.lock` (the
# lock every build in this tree takes: two Swift builds must never overlap).

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH_DIR/../.." && pwd)"
# One database per benchmark, so that two benchmarks never drop each other's.
BENCH_DB="${REWIND_BENCH_DB:-rewind_bench_$(basename "$0" | tr -c 'a-zA-Z0-9_\n' _)}"
BENCH_BUILD="$ROOT/.build-bench"        # git-ignored (.build-*/)
WORK=""                                  # temp folder of this run
SERVER_PID=""
SERVER_PORT=""
EXTRA_PIDS=""

blog() { echo "[bench] $*" >&2; }
bdie() { blog "error: $*"; exit 1; }

bench_cleanup() {
    local pid
    for pid in $SERVER_PID $EXTRA_PIDS; do
        kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    done
    SERVER_PID=""
    EXTRA_PIDS=""
    [ -n "$WORK" ] && [ -z "${BENCH_KEEP:-}" ] && rm -rf "$WORK"
    return 0
}

# The durability settings of the cluster PG* points at: "fsync synchronous_commit full_page_writes".
pg_durability() { psql -d postgres -qAtX -c "SELECT current_setting('fsync') || ' ' || current_setting('synchronous_commit') || ' ' || current_setting('full_page_writes')"; }

bench_install() {
    local missing=() pkg
    command -v gcc >/dev/null || missing+=(gcc libc6-dev)
    for pkg in pkg-config libuv1-dev; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" -eq 0 ] || bdie "missing packages: ${missing[*]} (install them, or run as root)"
    blog "installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || bdie "apt-get install ${missing[*]} failed"
}

bench_setup() {
    WORK="$(mktemp -d /tmp/rewind-bench.XXXXXX)"
    chmod 755 "$WORK"
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM

    if [ -n "${PGHOST:-}" ]; then
        blog "using the PostgreSQL cluster at PGHOST=$PGHOST PGPORT=${PGPORT:-5432}"
        command -v psql >/dev/null || bdie "psql not found"
    else
        # shellcheck source=../lib/env.sh
        source "$ROOT/scripts/lib/env.sh"
        unset REWIND_PG_FAST
        # It ends by requiring a Swift toolchain, which only a build needs: in a
        # subshell, so that its packages are installed either way.
        (rewind_install_deps) || blog "(no Swift toolchain: fine while the release binaries exist)"
        rewind_start_postgres
        if [ "$(pg_durability)" != "on on on" ]; then
            # Left running by scripts/test with REWIND_PG_FAST=1: restart it durable.
            blog "the project cluster runs with fsync/synchronous_commit/full_page_writes off; restarting it durable"
            rewind_stop_postgres >/dev/null
            rewind_start_postgres
        fi
    fi
    export PGUSER="${PGUSER:-$(id -un)}"
    [ "$(pg_durability)" = "on on on" ] || blog "WARNING: this cluster is not durable ($(pg_durability)): figures are not comparable"
    bench_install

    REWIND_BIN="${REWIND_BIN:-$ROOT/.build/release}"
    if [ ! -x "$REWIND_BIN/rewind-server" ] || [ ! -x "$REWIND_BIN/rewind" ]; then
        blog "no release binaries in $REWIND_BIN: building them (flock /tmp/rewind-build.lock swift build -c release)"
        command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
        (cd "$ROOT" && flock /tmp/rewind-build.lock swift build -c release) || bdie "swift build -c release failed"
        REWIND_BIN="$(cd "$ROOT" && flock /tmp/rewind-build.lock swift build -c release --show-bin-path)"
    fi

    # The harness is C over libuv, compiled here (to a temporary name first, in
    # case two benchmarks start at once).
    pkg-config --exists libuv || bdie "libuv not found (apt-get install libuv1-dev pkg-config)"
    mkdir -p "$BENCH_BUILD"
    local prog
    for prog in loadgen relay; do
        if [ ! -x "$BENCH_BUILD/$prog" ] || [ "$BENCH_DIR/$prog.c" -nt "$BENCH_BUILD/$prog" ] || [ "${BASH_SOURCE[0]}" -nt "$BENCH_BUILD/$prog" ]; then
            # shellcheck disable=SC2046
            gcc -O2 -Wall -pthread -o "$BENCH_BUILD/$prog.$$" "$BENCH_DIR/$prog.c" $(pkg-config --cflags --libs libuv) \
                && mv -f "$BENCH_BUILD/$prog.$$" "$BENCH_BUILD/$prog" || bdie "cannot compile $prog.c"
        fi
    done
    LOADGEN="$BENCH_BUILD/loadgen"
    RELAY="$BENCH_BUILD/relay"

    # A fresh database each run: the same starting point every time.
    psql -d postgres -qX -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $BENCH_DB WITH (FORCE)" -c "CREATE DATABASE $BENCH_DB" >/dev/null \
        || bdie "cannot create database $BENCH_DB"
    export PGDATABASE="$BENCH_DB"
    "$REWIND_BIN/rewind" admin migrate --database "" >/dev/null || bdie "migrate failed"
    TOKEN="$("$REWIND_BIN/rewind" admin user add bench --database "")" || bdie "cannot add user"
}

# Starts the server with the extra options given; sets SERVER_PID and SERVER_PORT.
bench_start_server() {
    local out="$WORK/server.out"
    SERVER_LOG="$WORK/server.log"
    : > "$out"
    "$REWIND_BIN/rewind-server" --listen 127.0.0.1:0 --database "" --log-level warning "$@" \
        > "$out" 2>> "$SERVER_LOG" &
    SERVER_PID=$!
    local i
    for i in $(seq 1 300); do
        SERVER_PORT="$(sed -n 's/^rewind-server listening on .*:\([0-9]*\)$/\1/p' "$out")"
        [ -n "$SERVER_PORT" ] && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$SERVER_LOG" >&2; bdie "rewind-server exited"; }
        sleep 0.1
    done
    bdie "rewind-server did not listen within 30 s"
}

bench_stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    kill -TERM "$SERVER_PID" 2>/dev/null
    local rc=0
    wait "$SERVER_PID" || rc=$?
    [ "$rc" = 0 ] || blog "WARNING: rewind-server exited with status $rc"
    SERVER_PID=""
}

# Anything the server logged at warning or above during the run.
bench_server_log_report() {
    if [ -s "${SERVER_LOG:-/dev/null}" ]; then
        blog "WARNING: the server logged $(wc -l < "$SERVER_LOG") line(s) at warning level or above; first ones:"
        head -n 5 "$SERVER_LOG" >&2
    fi
}

bench_conditions() {
    local s rev src src_time bin_time
    s="$(psql -qAtX -c "SELECT current_setting('fsync') || ' ' || current_setting('synchronous_commit') || ' ' ||
                             current_setting('wal_sync_method') || ' ' || current_setting('full_page_writes') || ' ' ||
                             split_part(current_setting('server_version'), ' ', 1)")"
    # shellcheck disable=SC2086
    set -- $s
    # Which code: HEAD, the newest commit touching the server's sources, and
    # when the binary was built (it may predate that commit, or hold
    # uncommitted changes: a benchmark never builds when binaries exist).
    rev="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    src="$(git -C "$ROOT" log -1 --format=%h -- Sources Package.swift 2>/dev/null || echo unknown)"
    src_time="$(git -C "$ROOT" log -1 --format=%ct -- Sources Package.swift 2>/dev/null || echo 0)"
    bin_time="$(stat -c %Y "$REWIND_BIN/rewind-server")"
    [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no -- Sources Package.swift 2>/dev/null)" ] && src="$src+uncommitted"
    echo "cores=$(nproc) cpu=\"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)\" kernel=$(uname -r)" \
         "fsync=$1 synchronous_commit=$2 wal_sync_method=$3 full_page_writes=$4 postgresql=$5 libuv=$(pkg-config --modversion libuv)" \
         "rewind=$rev sources=$src@$(date -u -d "@$src_time" +%H:%M:%SZ) rewind-server-built=$(date -u -d "@$bin_time" +%Y-%m-%dT%H:%M:%SZ)$([ "$bin_time" -lt "$src_time" ] && echo "(before-the-sources-commit)")"
}

bench_rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# kv KEY FILE: the value of the `KEY value` line in FILE.
kv() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }

# ratio A B: A/B with two decimals ("n/a" unless both are numbers above 0).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || a + 0 <= 0 || b + 0 <= 0) print "n/a"; else printf "%.2f", a / b }'; }
