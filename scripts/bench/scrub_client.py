#!/usr/bin/env python3
"""Scrub latency on a long history, beside a plain open of the head.

Called by scripts/bench/scrub with the server's port, the users' tokens (the
measuring user's first), the history size, the steps, passes and opens, and
the other users' names. `build` writes the document `scrub` through the
server: 20 text nodes typed into and 200 views whose props are set, by three
users, pipelined. `measure` opens the head `opens` times from a fresh
terminal (the baseline), then scrubs 0→1 in `steps` steps `passes` times and
1→0 once, one request at a time, and prints `key value` lines and a table.
"""
import json
import sys
import time

from bench_terminal import Terminal, history_op


def check(r, what):
    if not r.get("ok"):
        sys.exit(f"{what} failed: {json.dumps(r)[:400]}")
    return r


TEXTS, VIEWS = 20, 200


def build(port, tokens, events, share_with):
    me = Terminal(port, tokens[0], "build")
    check(me.request("create_doc", doc="scrub", title="Scrub benchmark"), "create_doc")
    for user in share_with:
        check(me.request("share", doc="scrub", user=user, role="editor"), f"share with {user}")
    ops = [{"op": "create", "node": f"t{i}", "parent": "root", "kind": "text", "text": "", "focusable": True} for i in range(TEXTS)]
    ops += [{"op": "create", "node": f"v{i}", "parent": "root", "kind": "view", "frame": [i, i, 10, 10]} for i in range(VIEWS)]
    head = check(me.request("submit", doc="scrub", tx="seed", base=0, ops=ops), "seed")["version"]
    writers = [Terminal(port, t, f"writer-{k}") for k, t in enumerate(tokens)]
    t0, n, window = time.perf_counter(), head, 400
    while n < events:
        batch = []
        for k in range(min(window, events - n)):
            i = n + k
            w = writers[i % len(writers)]
            op = history_op(i, VIEWS, lambda i: f"t{i % TEXTS}")
            batch.append((w, w.send("submit", doc="scrub", tx=f"f{i}", base=head, ops=[op])))
        for w, i in batch:
            r = w.reply(i)
            head = max(head, check(r, "submit")["version"])
        n += len(batch)
    built = time.perf_counter() - t0
    print(f"built: {head} events in {built:.1f} s ({head / built:.0f} events/s)", file=sys.stderr)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def timed(t, type_, **fields):
    t0 = time.perf_counter()
    r, size = t.reply_sized(t.send(type_, **fields))
    ms = (time.perf_counter() - t0) * 1e3
    check(r, type_)
    return r, ms, size


def measure(port, tokens, steps, passes, opens):
    t = Terminal(port, tokens[0], "measure")
    open_ms, open_bytes, head = [], 0, 0
    for _ in range(opens):
        r, ms, open_bytes = timed(t, "open", doc="scrub")
        open_ms.append(ms)
        head = r["version"]
    rows = [("open (head)", open_ms, open_bytes)]
    forward = []
    for p in range(passes):
        xs, size = [], 0
        for k in range(steps + 1):
            r, ms, size = timed(t, "scrub", doc="scrub", progress=k / steps)
            if r["version"] != round(k / steps * head):
                sys.exit(f"scrub at {k / steps} answered version {r['version']}")
            xs.append(ms)
        rows.append((f"scrub 0→1 pass {p + 1}", xs, size))
        forward += xs
        check(t.request("scrub_cancel", doc="scrub"), "scrub_cancel")
    back = []
    for k in range(steps, -1, -1):
        _, ms, _ = timed(t, "scrub", doc="scrub", progress=k / steps)
        back.append(ms)
    rows.append(("scrub 1→0", back, 0))
    rows.append(("scrub 0→1 all passes", forward, 0))
    print(f"history: {head} events; step: {head / steps:.0f} events")
    print(f"{'measure':<24}{'samples':>8}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}{'reply bytes':>13}")
    for name, xs, size in rows:
        print(f"{name:<24}{len(xs):>8}{pct(xs, 50):>10.2f}{pct(xs, 99):>10.2f}{max(xs):>10.2f}{size or '':>13}")
    print()
    print(f"RATIO scrub_step_p50/open_p50={pct(forward, 50) / pct(open_ms, 50):.2f} "
          f"scrub_step_p99/open_p99={pct(forward, 99) / pct(open_ms, 99):.2f} "
          f"scrub_back_p50/open_p50={pct(back, 50) / pct(open_ms, 50):.2f}")


def main():
    mode, port, tokens = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
    events, steps, passes, opens = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
    share_with = [u for u in sys.argv[8].split(",") if u]
    if mode == "build":
        build(port, tokens, events, share_with)
    else:
        measure(port, tokens, steps, passes, opens)


if __name__ == "__main__":
    main()
