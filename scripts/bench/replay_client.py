#!/usr/bin/env python3
"""Long documents for scripts/bench/replay, and their first `open` after a restart.

Called by scripts/bench/replay with the server's port and the users' tokens
(the owner's first), then:

  build LONG SHORT OTHERS   writes `replay-long` (LONG events) and
                            `replay-short` (SHORT events) through the server,
                            and `replay-warm` (one event); the owner shares
                            them with OTHERS (comma-separated) as editors
  open FIRST SECOND         on a server just started: opens `replay-warm` (so
                            that neither measured document pays for the
                            server's first request), then FIRST and SECOND,
                            each once, and prints `open DOC ms bytes version`

The history: 20 text nodes typed into one character at a time (two events in
three) and 200 views whose props are set (one in three), by three users,
pipelined 100 submits at a time (scripts/bench/scrub: 400; each
submit of a window is rebased through the ones before it, which costs the
server O(window) per submit). Every 4,000
events the text nodes are deleted and made afresh (one event, between two
windows of submits), so the state stays the same size at every length
(~20 KB): the two documents differ in history only, not in what `open`
sends.
"""
import json
import sys
import time

from bench_terminal import Terminal, history_op


def check(r, what):
    if not r.get("ok"):
        sys.exit(f"{what} failed: {json.dumps(r)[:400]}")
    return r


TEXTS, VIEWS, WINDOW, RENEW = 20, 200, 100, 4000


def text_ops(gen):
    return [{"op": "create", "node": f"t{gen}-{i}", "parent": "root", "kind": "text", "text": "", "focusable": True}
            for i in range(TEXTS)]


def build(port, tokens, doc, events, share_with):
    me = Terminal(port, tokens[0], f"build-{doc}")
    check(me.request("create_doc", doc=doc, title=f"Replay benchmark ({events} events)"), "create_doc")
    for user in share_with:
        check(me.request("share", doc=doc, user=user, role="editor"), f"share with {user}")
    ops = text_ops(0) + [{"op": "create", "node": f"v{i}", "parent": "root", "kind": "view", "frame": [i, i, 10, 10]}
                         for i in range(VIEWS)]
    head = check(me.request("submit", doc=doc, tx="seed", base=0, ops=ops), "seed")["version"]
    writers = [Terminal(port, t, f"writer-{doc}-{k}") for k, t in enumerate(tokens)]
    t0, gen, n = time.perf_counter(), 0, head
    while n < events:
        if n // RENEW > gen and events - n > 1:
            # Between two windows: no submit in flight targets the old nodes.
            ops = [{"op": "delete", "node": f"t{gen}-{i}"} for i in range(TEXTS)] + text_ops(gen + 1)
            head = check(me.request("submit", doc=doc, tx=f"renew{gen + 1}", base=head, ops=ops), "renew")["version"]
            gen, n = gen + 1, n + 1
        batch = []
        for k in range(min(WINDOW, events - n)):
            i = n + k
            w = writers[i % len(writers)]
            op = history_op(i, VIEWS, lambda i: f"t{gen}-{i % TEXTS}")
            batch.append((w, w.send("submit", doc=doc, tx=f"f{i}", base=head, ops=[op])))
        for w, i in batch:
            head = max(head, check(w.reply(i), "submit")["version"])
        n += len(batch)
        if n // 50000 > (n - len(batch)) // 50000:
            print(f"  {doc}: {n} events, {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    built = time.perf_counter() - t0
    print(f"built {doc}: {head} events in {built:.1f} s ({head / max(built, 1e-9):.0f} events/s)", file=sys.stderr)
    return head


def timed_open(t, doc):
    t0 = time.perf_counter()
    r, size = t.reply_sized(t.send("open", doc=doc))
    ms = (time.perf_counter() - t0) * 1e3
    check(r, f"open {doc}")
    return ms, size, r["version"]


def main():
    mode, port, tokens = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
    if mode == "build":
        long_, short = int(sys.argv[4]), int(sys.argv[5])
        share_with = [u for u in sys.argv[6].split(",") if u]
        build(port, tokens, "replay-warm", 1, share_with)
        build(port, tokens, "replay-short", short, share_with)
        build(port, tokens, "replay-long", long_, share_with)
    elif mode == "build-one":  # build-one DOC EVENTS OTHERS: one more long document (scripts/bench/replay --compare-unsealed)
        build(port, tokens, sys.argv[4], int(sys.argv[5]), [u for u in sys.argv[6].split(",") if u])
    elif mode == "open":
        t = Terminal(port, tokens[0], "measure-open")
        timed_open(t, "replay-warm")
        for doc in sys.argv[4:6]:
            ms, size, version = timed_open(t, doc)
            print(f"open {doc} {ms:.3f} {size} {version}")
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
