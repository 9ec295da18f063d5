# rewind_watched CMD…: runs CMD with its output line-buffered (a run cut short
# still shows where it was) and, when it prints nothing for REWIND_TEST_STALL
# seconds (default 900), prints every thread's stack of it and of each process
# under it (gdb), then kills them. A test that hangs then fails the run and
# says where, instead of using up CI's time limit in silence.

# The processes under $1, children before their parents' siblings' children.
descendants_of() {
    local p
    for p in $(ps -e -o pid=,ppid= | awk -v parent="$1" '$2 == parent { print $1 }'); do
        echo "$p"
        descendants_of "$p"
    done
}

rewind_watched() {
    local stall="${REWIND_TEST_STALL:-900}" log pid tailer size last=-1 quiet=0 rc=0 p
    log="$(mktemp)"
    stdbuf -oL -eL "$@" >"$log" 2>&1 &
    pid=$!
    tail -n +1 -f --pid="$pid" "$log" &
    tailer=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 5
        size="$(stat -c %s "$log")"
        if [ "$size" != "$last" ]; then last="$size"; quiet=0; continue; fi
        quiet=$((quiet + 5))
        [ "$quiet" -ge "$stall" ] || continue
        {
            echo "[rewind] error: nothing printed for $stall s by: $*"
            echo "[rewind] the stack of every thread of every process under it, then they are killed"
            for p in "$pid" $(descendants_of "$pid"); do
                echo "---- $(ps -o pid=,args= -p "$p" | cut -c1-300)"
                if command -v gdb >/dev/null; then
                    timeout 60 gdb -p "$p" -batch -ex "thread apply all bt" 2>/dev/null | grep -E '^(Thread|#)' | head -n 400
                fi
            done
        } >&2
        for p in $(descendants_of "$pid") "$pid"; do kill -KILL "$p" 2>/dev/null || true; done
        break
    done
    wait "$pid" || rc=$?
    wait "$tailer" 2>/dev/null || true
    rm -f "$log"
    return "$rc"
}
