#!/usr/bin/env python3
"""Shake and answer latencies for scripts/bench/prompts: one terminal, one
document with a box; each round moves the box (a new undo group), shakes
(timed until the reply: the prompt is stored, then shown) and answers Cancel
(timed until the reply: the answer is recorded). Pings are timed too (the
server's floor). Prints `key value` lines (milliseconds)."""
import math
import sys
import time

from bench_terminal import Terminal


def check(r, what):
    if not r.get("ok"):
        sys.exit(f"{what} failed: {r}")
    return r


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, math.ceil(p * len(xs)) - 1)]


def main(port, token, rounds):
    t = Terminal(port, token, "prompts-bench")
    check(t.request("create_doc", doc="prompts"), "create_doc")
    check(t.request("submit", doc="prompts", tx="seed", base=0,
                    ops=[{"op": "create", "node": "box", "parent": "root", "index": 0, "kind": "view",
                          "frame": [0, 0, 10, 10], "focusable": True}]), "seed")
    check(t.request("open", doc="prompts"), "open")
    version = 1
    shake, respond, ping = [], [], []
    for i in range(rounds + 20):
        r = check(t.request("submit", doc="prompts", tx=f"m{i}", base=version, action="Move",
                            ops=[{"op": "set", "node": "box", "key": "frame", "value": [i % 100, 0, 10, 10]}]), "submit")
        version = r["version"]
        a = time.perf_counter()
        r = check(t.request("motion", doc="prompts", motion="shake"), "motion")
        b = time.perf_counter()
        check(t.request("respond", prompt=r["prompt"], action="cancel"), "respond")
        c = time.perf_counter()
        t.request("ping")
        d = time.perf_counter()
        if i >= 20:  # warm-up left out
            shake.append((b - a) * 1000)
            respond.append((c - b) * 1000)
            ping.append((d - c) * 1000)
    for name, xs in (("shake", shake), ("respond", respond), ("ping", ping)):
        print(f"{name}_p50 {pct(xs, 0.5):.3f}")
        print(f"{name}_p99 {pct(xs, 0.99):.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
