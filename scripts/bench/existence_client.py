#!/usr/bin/env python3
"""Can a stranger tell, by the clock, which document ids exist?

Called by scripts/bench/existence (standard library only):

  existence_client.py PORT OWNER_TOKEN STRANGER_TOKEN IDS PROBES OUT.json

The owner (user `owner`) creates IDS documents and shares none of them. The
stranger (user `stranger`) then asks `open` of three classes of ids, IDS each:
`taken` (the owner's documents), `free` and `free2` (ids nobody created), each
answered `not_found` alike. Every id is probed PROBES times, one request in
flight at a time, the probes of all ids shuffled together so that drift in the
machine's speed falls on every class alike; each probe is timed from the
request's send to its reply on CLOCK_MONOTONIC. Per id, the median of its
probes. Then, as an attacker would: the best single threshold on those
medians separating `taken` from `free` (the fraction of ids it classifies
right), and the same for `free2` against `free` — two classes that cannot
differ, the control: how well a threshold does by chance on this many ids.
"""
import json
import random
import socket
import statistics
import sys
import time


class Terminal:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.next_id = 1

    def request(self, type_, **fields):
        i = self.next_id
        self.next_id += 1
        self.s.sendall(json.dumps({"id": i, "type": type_, **fields}).encode() + b"\n")
        while True:
            nl = self.buf.find(b"\n")
            if nl < 0:
                chunk = self.s.recv(65536)
                if not chunk:
                    raise SystemExit("connection closed")
                self.buf += chunk
                continue
            line, self.buf = self.buf[:nl], self.buf[nl + 1:]
            m = json.loads(line)
            if m.get("re") == i:
                return m


def best_threshold(a, b):
    """The best accuracy of one threshold (either direction) telling a's values from b's."""
    points = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    n = len(points)
    below_a = below_b = 0
    best = 0.5
    for k in range(n + 1):
        # Threshold after the k-th point: "a" below, "b" above (or the reverse).
        right = below_a + (len(b) - below_b)
        best = max(best, right / n, (n - right) / n)
        if k < n:
            if points[k][1] == 0:
                below_a += 1
            else:
                below_b += 1
    return best


def main():
    port, owner_token, stranger_token, ids, probes, out = sys.argv[1:7]
    port, ids, probes = int(port), int(ids), int(probes)
    run = "%08x" % random.getrandbits(32)
    owner = Terminal(port)
    assert owner.request("hello", user="owner", token=owner_token)["ok"]
    classes = {"taken": [f"x-{run}-t{i}" for i in range(ids)],
               "free": [f"x-{run}-f{i}" for i in range(ids)],
               "free2": [f"x-{run}-g{i}" for i in range(ids)]}
    for d in classes["taken"]:
        r = owner.request("create_doc", doc=d)
        assert r["ok"], r
    stranger = Terminal(port)
    assert stranger.request("hello", user="stranger", token=stranger_token)["ok"]
    # Warm-up: the paths once each, not counted.
    for c in classes.values():
        for d in c[:20]:
            stranger.request("open", doc=d)
    order = [(c, d) for c, ds in classes.items() for d in ds for _ in range(probes)]
    random.shuffle(order)
    times = {d: [] for ds in classes.values() for d in ds}
    codes = {}
    for c, d in order:
        t0 = time.monotonic_ns()
        r = stranger.request("open", doc=d)
        times[d].append((time.monotonic_ns() - t0) / 1000)
        code = (r.get("error") or {}).get("code", "ok")
        codes[(c, code)] = codes.get((c, code), 0) + 1
    med = {c: [statistics.median(times[d]) for d in ds] for c, ds in classes.items()}
    result = {
        "ids_per_class": ids, "probes_per_id": probes,
        "answers": {f"{c}:{code}": n for (c, code), n in sorted(codes.items())},
        "median_us": {c: round(statistics.median(v), 1) for c, v in med.items()},
        "accuracy_taken_vs_free": round(best_threshold(med["taken"], med["free"]), 3),
        "accuracy_control_free2_vs_free": round(best_threshold(med["free2"], med["free"]), 3),
    }
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
