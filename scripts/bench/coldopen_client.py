#!/usr/bin/env python3
"""The first open of a document after a restart (scripts/bench/coldopen).

`build PORT TOKENS DOC EVENTS`: the document DOC of EVENTS events through
the server. The owner (the first token) makes one edit — a prop of v0, its
own undo group — and never edits again; the other user (the second token)
seeds 20 text nodes and 200 views and writes the rest (pipelined). So the
owner's group stays on their undo stack, EVENTS versions below the head.

`open PORT TOKENS DOCS`: one fresh terminal opens `cold-warm` (untimed: a
fresh server's first requests warm its database connections), then each
document of DOCS once in that order; prints `DOC ms` lines (the first open
of each since the restart).

`undo PORT TOKENS DOC`: the owner undoes their old group and redoes it,
timing each (the first undo reads the group's part of the log back).
Meanwhile the other user's terminal sends `ping` after `ping` (2 ms apart):
the longest wait of one of them during the first undo is what that read
costs everyone else on the server.

`report FILE`: percentiles of the `DOC ms` lines collected over restarts.
"""
import json
import sys
import threading
import time

from bench_terminal import Terminal, history_op

TEXTS, VIEWS = 20, 200


def check(r, what):
    if not r.get("ok"):
        sys.exit(f"{what} failed: {json.dumps(r)[:400]}")
    return r


def build(port, tokens, doc, events):
    owner = Terminal(port, tokens[0], "owner")
    check(owner.request("create_doc", doc=doc, title="Cold open benchmark"), "create_doc")
    check(owner.request("share", doc=doc, user="carol", role="editor"), "share")
    writer = Terminal(port, tokens[1], "writer")
    check(writer.request("open", doc=doc), "open")
    ops = [{"op": "create", "node": f"t{i}", "parent": "root", "kind": "text", "text": "", "focusable": True} for i in range(TEXTS)]
    ops += [{"op": "create", "node": f"v{i}", "parent": "root", "kind": "view", "frame": [i, i, 10, 10]} for i in range(VIEWS)]
    head = check(writer.request("submit", doc=doc, tx="seed", base=0, ops=ops), "seed")["version"]
    check(owner.request("open", doc=doc), "open")
    head = check(owner.request("submit", doc=doc, tx="mine", base=head,
                               ops=[{"op": "set", "node": "v0", "key": "owner", "value": "once"}]), "owner's edit")["version"]
    owner.sock.close()  # gone before the writer's pushes pile up unread
    n, window = head, 400
    while n < events:
        sent = []
        for k in range(min(window, events - n)):
            i = n + k
            sent.append(writer.send("submit", doc=doc, tx=f"w{i}", base=head, ops=[history_op(i, VIEWS, lambda i: f"t{i % TEXTS}")]))
        for i in sent:
            head = max(head, check(writer.reply(i), "submit")["version"])
        n += len(sent)
    print(f"built: {doc} at version {head}", file=sys.stderr)


def timed(t, type_, **fields):
    t0 = time.perf_counter()
    r = t.reply(t.send(type_, **fields))
    ms = (time.perf_counter() - t0) * 1e3
    return check(r, f"{type_} {fields}"), ms


def open_docs(port, tokens, docs):
    t = Terminal(port, tokens[0], "measure")
    # A fresh server's first requests also warm its PostgreSQL connections (a new
    # backend's caches): a third document takes that, untimed, so neither measured one does.
    timed(t, "open", doc="cold-warm")
    for doc in docs:
        _, ms = timed(t, "open", doc=doc)
        print(f"{doc} {ms:.3f}")


def undo(port, tokens, doc):
    t = Terminal(port, tokens[0], "measure")
    r, open_ms = timed(t, "open", doc=doc)
    other, pings, stop = Terminal(port, tokens[1], "pinger"), [], threading.Event()

    def ping():
        while not stop.is_set():
            t0 = time.perf_counter()
            other.request("ping")
            pings.append((t0, (time.perf_counter() - t0) * 1e3))
            time.sleep(0.002)
    pinger = threading.Thread(target=ping)
    pinger.start()
    time.sleep(0.1)
    started = time.perf_counter()
    r, undo_ms = timed(t, "undo", doc=doc)
    stop.set()
    pinger.join()
    during = [ms for (at, ms) in pings if at >= started - 0.01]
    _, redo_ms = timed(t, "redo", doc=doc)
    _, undo2_ms = timed(t, "undo", doc=doc)
    _, redo2_ms = timed(t, "redo", doc=doc)
    print(f"old group, after a restart: open {open_ms:.2f} ms, first undo {undo_ms:.2f} ms (reads the log back to the group), "
          f"redo {redo_ms:.2f} ms, undo again {undo2_ms:.2f} ms, redo again {redo2_ms:.2f} ms; undid version {r.get('version')}")
    print(f"another user's pings during that first undo: {len(during)}, longest {max(during, default=0):.2f} ms")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def report(path):
    by = {}
    for line in open(path):
        doc, ms = line.split()
        by.setdefault(doc, []).append(float(ms))
    print(f"{'first open after a restart':<28}{'samples':>8}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for doc, xs in by.items():
        print(f"{doc:<28}{len(xs):>8}{pct(xs, 50):>10.2f}{pct(xs, 99):>10.2f}{max(xs):>10.2f}")
    return by


def main():
    mode = sys.argv[1]
    if mode == "report":
        by = report(sys.argv[2])
        long, short = by[sys.argv[3]], by[sys.argv[4]]
        print(f"RATIO long_p99/short_p99={pct(long, 99) / pct(short, 99):.2f} long_p50/short_p50={pct(long, 50) / pct(short, 50):.2f}")
        print(f"p99 {pct(long, 99):.2f}")
        return
    port, tokens = int(sys.argv[2]), sys.argv[3].split(",")
    if mode == "build":
        build(port, tokens, sys.argv[4], int(sys.argv[5]))
    elif mode == "open":
        open_docs(port, tokens, sys.argv[4].split(","))
    else:
        undo(port, tokens, sys.argv[4])


if __name__ == "__main__":
    main()
