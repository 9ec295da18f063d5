#!/usr/bin/env python3
"""Undo/redo latency on a long history, beside the same at a short one.

Called by scripts/bench/undo with the server's port and the users' tokens
(the measuring user's first), the history sizes, and the other users' names
(comma-separated, in the order of their tokens). For each history length it
builds a document through the server (several users, pipelined submits; the
measuring user creates it and shares it with the others as editors, since
documents are private to their creator), then measures, from a separate
terminal:

  newest  undo of the measuring user's newest group (an edit made just before),
          and the redo after it;
  deep    undo of a group made before the whole history, whose node later
          edits by others touched a fixed number of times (the same at every
          length), so the work is the same and only the history differs.

Undo and redo must do work proportional to the group and to the later events
touching the same nodes, never to the history: the ratio long/short should
stay near 1. Prints `key value` lines and a table.
"""
import json
import sys
import time

from bench_terminal import Terminal


def check(r, what):
    if not r.get("ok"):
        sys.exit(f"{what} failed: {json.dumps(r)}")
    return r


def build(port, tokens, doc, events, deep_groups, touches_per_deep, share_with, others_nodes=200):
    """A document with `events` events: deep groups by the measuring user
    first, then others' edits (a fixed number touching each deep node)."""
    me = Terminal(port, tokens[0], f"measure-{doc}")
    check(me.request("create_doc", doc=doc), "create_doc")
    for user in share_with:
        check(me.request("share", doc=doc, user=user, role="editor"), f"share with {user}")
    check(me.request("open", doc=doc), "open")
    ops = [{"op": "create", "node": f"o{i}", "parent": "root", "kind": "view"} for i in range(others_nodes)]
    ops += [{"op": "create", "node": f"deep{i}", "parent": "root", "kind": "text", "text": "hello"} for i in range(deep_groups)]
    ops.append({"op": "create", "node": "mine", "parent": "root", "kind": "text", "text": ""})
    head = check(me.request("submit", doc=doc, tx="seed", base=0, ops=ops), "seed")["version"]
    for i in range(deep_groups):
        r = me.request("submit", doc=doc, tx=f"deep{i}", base=head,
                       ops=[{"op": "set", "node": f"deep{i}", "key": "color", "value": "red"},
                            {"op": "insert", "node": f"deep{i}", "pos": 5, "text": " world"}])
        head = check(r, "deep group")["version"]
    # This terminal reads nothing while others write: close the document so
    # that its pushes do not pile up (the measuring terminal opens it later).
    check(me.request("close", doc=doc), "close")
    others = [Terminal(port, t, f"other-{doc}-{k}") for k, t in enumerate(tokens[1:])]
    # Which of the others' events touch deep nodes: evenly spread, fixed count per node.
    remaining = events - head
    touch_at = {}
    total_touches = deep_groups * touches_per_deep
    if total_touches:
        step = max(1, remaining // total_touches)
        for j in range(total_touches):
            touch_at[j * step] = j % deep_groups
    n = 0
    window = 400
    while n < remaining:
        batch = []
        for k in range(min(window, remaining - n)):
            t = others[(n + k) % len(others)]
            if (n + k) in touch_at:
                d = touch_at[n + k]
                op = {"op": "insert", "node": f"deep{d}", "pos": 0, "text": "x"}
            else:
                op = {"op": "set", "node": f"o{(n + k) % others_nodes}", "key": "v", "value": n + k}
            batch.append((t, t.send("submit", doc=doc, tx=f"f{n + k}", base=head, ops=[op])))
        for t, i in batch:
            r = t.reply(i)
            check(r, "fill submit")
            head = max(head, r["version"])
        n += len(batch)
    return me, head


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def measure_deep(me, doc):
    t0 = time.perf_counter()
    check(me.request("undo", doc=doc, on_conflict="force"), "deep undo")
    return (time.perf_counter() - t0) * 1e3


def measure_newest(me, doc, head, i):
    """An edit, then undo and redo of it: (undo ms, redo ms, new head)."""
    check(me.request("submit", doc=doc, tx=f"m{i}", base=head,
                     ops=[{"op": "set", "node": "mine", "key": "n", "value": i}]), "newest edit")
    t0 = time.perf_counter()
    check(me.request("undo", doc=doc), "newest undo")
    t1 = time.perf_counter()
    r = check(me.request("redo", doc=doc), "redo")
    return (t1 - t0) * 1e3, (time.perf_counter() - t1) * 1e3, r["version"]


def main():
    mode, port, tokens = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
    short, long_ = int(sys.argv[4]), int(sys.argv[5])
    deep_groups, touches, rounds = int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
    share_with = [u for u in sys.argv[9].split(",") if u]
    sizes = (("short", short), ("long", long_))
    if mode == "build":
        for label, size in sizes:
            t0 = time.perf_counter()
            _, head = build(port, tokens, f"undo-{label}", size, deep_groups, touches, share_with)
            built = time.perf_counter() - t0
            print(f"built {label}: {head} events in {built:.1f} s ({head / built:.0f} events/s)", file=sys.stderr)
        return
    # Measure: a fresh terminal of the same user (the stacks are the user's,
    # not the terminal's); short and long interleaved so that both see the
    # same machine.
    terms, heads, results = {}, {}, {}
    for label, _ in sizes:
        terms[label] = Terminal(port, tokens[0], f"measure2-{label}")
        heads[label] = check(terms[label].request("open", doc=f"undo-{label}"), "open")["version"]
        results[label] = {"newest_undo": [], "redo": [], "deep_undo": [], "events": heads[label]}
    for _ in range(deep_groups):
        for label, _ in sizes:
            results[label]["deep_undo"].append(measure_deep(terms[label], f"undo-{label}"))
    for label, _ in sizes:
        heads[label] = check(terms[label].request("open", doc=f"undo-{label}"), "open")["version"]
    for i in range(rounds):
        for label, _ in sizes:
            u, r, heads[label] = measure_newest(terms[label], f"undo-{label}", heads[label], i)
            results[label]["newest_undo"].append(u)
            results[label]["redo"].append(r)
    print(f"{'measure':<14}{'history':>10}{'samples':>9}{'p50 ms':>10}{'p99 ms':>10}")
    for key in ("newest_undo", "redo", "deep_undo"):
        for label, _ in sizes:
            xs = results[label][key]
            print(f"{key:<14}{results[label]['events']:>10}{len(xs):>9}{pct(xs, 50):>10.3f}{pct(xs, 99):>10.3f}")
    print()
    for key in ("newest_undo", "redo", "deep_undo"):
        s50, l50 = pct(results["short"][key], 50), pct(results["long"][key], 50)
        s99, l99 = pct(results["short"][key], 99), pct(results["long"][key], 99)
        print(f"RATIO {key} p50_long/short={l50 / s50:.2f} p99_long/short={l99 / s99:.2f}")


if __name__ == "__main__":
    main()
