# Shared set-up for scripts/run, scripts/test, scripts/pg and the benchmarks.
# Source it; it defines functions and changes nothing until they are called.
#
#   rewind_install_deps     apt-get what is missing (libuv, libpq, wslay, http-parser, PostgreSQL, pkg-config)
#   rewind_start_postgres   create (once) and start the project's own cluster; export PG*
#   rewind_stop_postgres    stop it
#
# Two clusters, never one for both: the server a person runs (scripts/run, the
# benchmarks, scripts/pg) uses .pg/, durable (fsync, synchronous_commit and
# full_page_writes on); the tests (REWIND_PG_FAST=1, set by scripts/test) use
# .pg-test/, with those off for speed, on a port and socket of their own. A demo
# can no longer run on a cluster the tests left without durability.
#   rewind_build [CONFIG]   swift build; sets REWIND_BIN to the binaries' folder

REWIND_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Which cluster: decided when a function runs (REWIND_PG_FAST may be set after sourcing).
# REWIND_PG_SHARD=N (tests only): one of the tests' extra clusters, .pg-test-sN/ (rewind_start_shard_clusters).
pg_name() {
    if [ -n "${REWIND_PG_SHARD:-}" ]; then echo ".pg-test-s$REWIND_PG_SHARD"
    elif [ "${REWIND_PG_FAST:-0}" = 1 ]; then echo .pg-test; else echo .pg; fi
}
pg_port() {
    if [ -n "${REWIND_PG_SHARD:-}" ]; then echo $(( ${REWIND_PG_TEST_PORT:-55433} + 10 + REWIND_PG_SHARD ))
    elif [ "${REWIND_PG_FAST:-0}" = 1 ]; then echo "${REWIND_PG_TEST_PORT:-55433}"; else echo "${REWIND_PG_PORT:-55432}"; fi
}

say() { echo "[rewind] $*" >&2; }
die() { say "error: $*"; exit 1; }

rewind_install_deps() {
    local missing=()
    # netcat-openbsd: the README's first session is typed into nc. tmux: the tests drive `rewind connect` in it.
    for pkg in pkg-config libuv1-dev libpq-dev libwslay-dev libhttp-parser-dev libcurl4-openssl-dev libssl-dev liblz4-dev libjemalloc-dev postgresql netcat-openbsd tmux; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        local sudo=""
        if [ "$(id -u)" -ne 0 ]; then
            command -v sudo >/dev/null || die "missing packages: ${missing[*]} (install them, or run as root)"
            sudo="sudo"
        fi
        say "installing ${missing[*]}"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    if ! command -v swift >/dev/null; then
        [ -x /opt/swift/usr/bin/swift ] && export PATH="/opt/swift/usr/bin:$PATH"
    fi
    command -v swift >/dev/null || die "no Swift toolchain on PATH (Swift 6 is needed: https://swift.org/install)"
}

# What only the tests need: node (rewind.js under `node --test`), and a real
# browser for the web editor's tests: Debian's chromium and chromium-driver,
# driven by selenium — Debian's python3-selenium, run by Debian's own
# /usr/bin/python3. Not pip: Debian's python3 refuses `pip install` outside a
# virtual environment (PEP 668), for root too, and another python3 first on
# PATH (pyenv's, say) would not see Debian's packages. REWIND_PYTHON names
# the interpreter the browser tests run with. python3-venv: schemathesis, which
# Debian does not package, goes into a virtual environment from PyPI
# (scripts/api-check). gdb: a test run that hangs prints every thread's stack
# before it is stopped (scripts/lib/watch.sh, the tests' ChildProcess).
rewind_install_test_deps() {
    local missing=()
    command -v node >/dev/null || missing+=(nodejs)
    for pkg in chromium chromium-driver python3 python3-selenium python3-jwt python3-venv gdb; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
    if [ ${#missing[@]} -gt 0 ]; then
        local sudo=""
        if [ "$(id -u)" -ne 0 ]; then
            command -v sudo >/dev/null || die "missing packages: ${missing[*]} (install them, or run as root)"
            sudo="sudo"
        fi
        say "installing ${missing[*]} (for the tests)"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    export REWIND_PYTHON=/usr/bin/python3
    "$REWIND_PYTHON" -c 'import selenium' 2>/dev/null || die "$REWIND_PYTHON cannot import selenium (Debian's python3-selenium)"
    "$REWIND_PYTHON" -c 'import jwt' 2>/dev/null || die "$REWIND_PYTHON cannot import jwt (Debian's python3-jwt: the example app backend the browser tests use)"
}

# The test tools Debian does not package, from PyPI, in .build-venv/ (git-ignored):
# schemathesis (scripts/api-check) and axe-selenium-python, whose copy of
# axe-core's script the browser tests inject to check accessibility (only the
# script is used: --no-deps, Debian's selenium drives the browser).
# REWIND_AXE_JS names that script.
rewind_test_venv() {
    local venv="$REWIND_ROOT/.build-venv"
    if [ ! -x "$venv/bin/schemathesis" ] || ! ls "$venv"/lib/python3*/site-packages/axe_selenium_python >/dev/null 2>&1; then
        dpkg -s python3-venv >/dev/null 2>&1 || rewind_install_test_deps
        say "installing schemathesis and axe-selenium-python into .build-venv (PyPI)"
        [ -x "$venv/bin/pip" ] || /usr/bin/python3 -m venv "$venv"
        "$venv/bin/pip" install -q "schemathesis==4.32.5"
        "$venv/bin/pip" install -q --no-deps "axe-selenium-python==2.1.6"
    fi
    REWIND_AXE_JS="$(ls "$venv"/lib/python3*/site-packages/axe_selenium_python/node_modules/axe-core/axe.min.js | head -n 1)"
    export REWIND_AXE_JS
}

# The PostgreSQL binaries (initdb, pg_ctl) of the newest installed version.
pg_bindir() {
    local d
    d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    [ -n "$d" ] || d="$(pg_config --bindir 2>/dev/null)"
    [ -x "$d/initdb" ] || die "PostgreSQL server binaries not found (apt-get install postgresql)"
    echo "$d"
}

# Runs a command as the cluster's owner: postgres when we are root (PostgreSQL
# refuses to run as root), ourselves otherwise.
as_pg() {
    # From / : postgres may not be allowed into the current folder.
    if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

# Picks the data folder: .pg/ in the checkout, unless the cluster's user
# cannot reach it (a clone under root's 0700 home), then a folder it can.
pg_datadir() {
    local wanted
    wanted="$REWIND_ROOT/$(pg_name)"
    if [ "$(id -u)" -ne 0 ]; then echo "$wanted"; return; fi
    mkdir -p "$wanted"
    chown postgres "$wanted"
    if runuser -u postgres -- test -w "$wanted" 2>/dev/null; then
        echo "$wanted"
    else
        local alt="/var/tmp/rewind$(pg_name | tr . -)-$(echo -n "$REWIND_ROOT" | md5sum | cut -c1-8)"
        say "the postgres user cannot reach $wanted (a parent folder is private); using $alt instead"
        mkdir -p "$alt"
        chown postgres "$alt"
        echo "$alt"
    fi
}

# Runs a command with no descriptor open but stdin, stdout and stderr.
# PostgreSQL is started through it, and it outlives whoever started it: a
# descriptor it inherited stays open as long as it runs. A lock's (`flock
# /tmp/rewind-cpu.lock scripts/test`) made every later run that takes the
# lock wait for ever; a pipe or socket of the program that ran this script
# (a test's `Process`) made that program wait for ever for its end.
without_lock_fds() {
    (
        local fd n
        for fd in /proc/$BASHPID/fd/*; do
            n="${fd##*/}"
            [ "$n" -gt 2 ] && [ "$n" -lt 255 ] && eval "exec $n>&-"
        done
        "$@"
    )
}

rewind_start_postgres() {
    local bin dir data sock log
    bin="$(pg_bindir)"
    dir="$(pg_datadir)"
    data="$dir/data"
    log="$dir/postgres.log"
    # Unix socket paths are limited to 107 bytes: keep the socket folder short.
    sock="/tmp/rewind-$(echo -n "$REWIND_ROOT" | md5sum | cut -c1-8)"
    case "$(pg_name)" in .pg-test*) sock="${sock}t" ;; esac
    local port
    port="$(pg_port)"
    mkdir -p "$sock"
    [ "$(id -u)" -eq 0 ] && chown postgres "$sock"

    if [ ! -f "$data/PG_VERSION" ]; then
        say "creating a PostgreSQL cluster in $data"
        as_pg "$bin/initdb" -D "$data" --auth=trust --username=rewind -E UTF8 --locale=C.UTF-8 >/dev/null 2>&1 \
            || as_pg "$bin/initdb" -D "$data" --auth=trust --username=rewind -E UTF8 --no-locale >/dev/null \
            || die "initdb failed"
    fi

    # Socket only: two checkouts on one machine never fight over a TCP port.
    local opts="-p $port -k $sock -c listen_addresses= -c max_connections=300"
    if [ "${REWIND_PG_FAST:-0}" = 1 ]; then
        # Test-only speed: benchmarks never set this; their commits are durable.
        opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    fi
    if as_pg "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        say "PostgreSQL already running ($data)"
        # Started by an older scripts/test with durability off (one cluster served both then): restart it as it should run.
        local want=on
        [ "${REWIND_PG_FAST:-0}" = 1 ] && want=off
        if [ "$(PGHOST="$sock" PGPORT="$port" psql -U rewind -d postgres -qAtX -c "SHOW fsync" 2>/dev/null)" != "$want" ]; then
            say "restarting it with fsync=$want"
            without_lock_fds as_pg "$bin/pg_ctl" -D "$data" -l "$log" -m fast -w -t 60 stop >/dev/null
            without_lock_fds as_pg "$bin/pg_ctl" -D "$data" -l "$log" -o "$opts" -w -t 60 start >/dev/null \
                || { tail -n 20 "$log" >&2; die "PostgreSQL did not start (log: $log)"; }
        fi
    else
        say "starting PostgreSQL on port $port (socket $sock)"
        without_lock_fds as_pg "$bin/pg_ctl" -D "$data" -l "$log" -o "$opts" -w -t 60 start >/dev/null \
            || { tail -n 20 "$log" >&2; die "PostgreSQL did not start (log: $log)"; }
    fi

    export PGHOST="$sock" PGPORT="$port" PGUSER=rewind PGDATABASE=rewind
    if [ "$(psql -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'rewind'")" != 1 ]; then
        psql -d postgres -qc "CREATE DATABASE rewind" || die "cannot create the rewind database"
    fi
    local durability
    durability="$(psql -d postgres -qAtX -c "SELECT 'fsync=' || current_setting('fsync') || ' synchronous_commit=' || current_setting('synchronous_commit') || ' full_page_writes=' || current_setting('full_page_writes')")"
    say "PostgreSQL ready ($([ "${REWIND_PG_FAST:-0}" = 1 ] && echo "a tests' cluster, not durable" || echo "durable"): $durability): PGHOST=$PGHOST PGPORT=$PGPORT PGUSER=$PGUSER PGDATABASE=$PGDATABASE"
    rewind_master_key
}

# The tests' two extra clusters (SPEC section 17: documents on several
# PostgreSQL clusters), .pg-test-s2/ and .pg-test-s3/, not durable like
# .pg-test/, beside it on ports of their own; ShardTests makes its databases
# on them. REWIND_TEST_SHARD_CLUSTERS: their conninfos, `;` between.
rewind_start_shard_clusters() {
    local n clusters=""
    for n in 2 3; do
        ( export REWIND_PG_FAST=1 REWIND_PG_SHARD=$n; rewind_start_postgres ) || die "the tests' shard cluster $n did not start"
        clusters="$clusters${clusters:+;}host=$PGHOST port=$(REWIND_PG_FAST=1 REWIND_PG_SHARD=$n pg_port) user=rewind"
    done
    export REWIND_TEST_SHARD_CLUSTERS="$clusters"
}

# The master key (SPEC section 15): it wraps every document's data key, so
# without it nothing in the database can be read. Created once, mode 0600,
# in .rewind/ (never in the database); REWIND_MASTER_KEY_FILE names another.
rewind_master_key() {
    REWIND_MASTER_KEY_FILE="${REWIND_MASTER_KEY_FILE:-$REWIND_ROOT/.rewind/master.key}"
    export REWIND_MASTER_KEY_FILE
    [ -e "$REWIND_MASTER_KEY_FILE" ] && return 0
    mkdir -p "$(dirname "$REWIND_MASTER_KEY_FILE")"
    (umask 077 && head -c 32 /dev/urandom | base64 > "$REWIND_MASTER_KEY_FILE") || die "cannot create $REWIND_MASTER_KEY_FILE"
    say "created the master key $REWIND_MASTER_KEY_FILE (mode 0600): it wraps every document's key; back it up apart from the database (without it nothing can be read)"
}

rewind_stop_postgres() {
    local data
    data="$(pg_datadir)/data"
    [ -f "$data/PG_VERSION" ] || { say "no cluster at $data"; return 0; }
    as_pg "$(pg_bindir)/pg_ctl" -D "$data" -m fast stop
}

rewind_build() {
    local config="${1:-debug}"
    (cd "$REWIND_ROOT" && swift build -c "$config") || die "build failed"
    REWIND_BIN="$(cd "$REWIND_ROOT" && swift build -c "$config" --show-bin-path)"
    export REWIND_BIN
}
