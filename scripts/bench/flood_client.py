#!/usr/bin/env python3
"""A flood on one connection against another user's submit latency.

Called by scripts/bench/flood (standard library only):

  flood_client.py docs WRITERS same|other SUFFIX
      two document names (the flood's, the probe's) whose writer connections
      (FNV-1a of the id, modulo --writers, as EventStore.writer(for:)) are the
      same one or different ones.
  flood_client.py run PORT TOKEN_A DOC_A TOKEN_B DOC_B SUBMITS PRE POST BASELINE_SECONDS OUT.json
      one run against a running server. The probe (user B, its own document,
      open) submits one `set` every 10 ms, waiting for each ack. With SUBMITS > 0:
      after PRE seconds the flooder (user A, its own document, not open) writes
      SUBMITS pipelined submits in one sendall, reads nothing until all are
      written, then reads every reply; the probe goes on until POST seconds
      after the last reply. With SUBMITS = 0 (baseline) the probe runs
      BASELINE_SECONDS. Each side is a process of its own; both time on
      CLOCK_MONOTONIC, which they share.
  flood_client.py report LABEL=OUT.json ...
      the table.
"""
import json
import math
import os
import selectors
import socket
import subprocess
import sys
import time

PERIOD = 0.010  # the probe's submit interval, s
REPLY = b'{"re":'


def now():
    return time.monotonic_ns() / 1e9


def fnv1a(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def pct(xs, p):
    """Nearest rank."""
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = max(1, math.ceil(p / 100 * len(xs)))
    return xs[k - 1]


class Conn:
    def __init__(self, port, token, client):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(120)  # a reply that never comes ends the run instead of hanging it
        self.buf = b""
        self.byes = []
        self.request("hello", 1, token=token, client=client)

    def send(self, type_, id_, **fields):
        self.sock.sendall((json.dumps({"id": id_, "type": type_, **fields}, separators=(",", ":")) + "\n").encode())

    def lines(self):
        """The complete lines of one recv (blocking)."""
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError(f"closed by the server {self.byes}")
        done, _, self.buf = (self.buf + chunk).rpartition(b"\n")
        out = done.split(b"\n") if done else []
        for line in out:
            if line.startswith(b'{"push":"bye"'):
                self.byes.append(line.decode()[:300])
        return out

    def reply(self, id_):
        while True:
            for line in self.lines():
                if line.startswith(REPLY):
                    m = json.loads(line)
                    if m["re"] == id_:
                        return m

    def request(self, type_, id_, **fields):
        self.send(type_, id_, **fields)
        m = self.reply(id_)
        if not m.get("ok"):
            sys.exit(f"{type_} failed: {m}")
        return m


# ---------------------------------------------------------------- probe ----

def probe_main(port, token, doc):
    c = Conn(port, token, "probe")
    c.request("create_doc", 2, doc=doc)
    head = c.request("open", 3, doc=doc).get("version", 0)
    print("ready", flush=True)
    sys.stdin.readline()  # go
    sel = selectors.DefaultSelector()
    sel.register(sys.stdin, selectors.EVENT_READ, "stdin")
    sel.register(c.sock, selectors.EVENT_READ, "sock")
    samples, errors, byes, lost = [], {}, [], None
    start, k, n, stop = now(), 0, 0, False
    while not stop:
        # Wait for the next tick (missed ticks are skipped, never caught up in a burst).
        due = start + k * PERIOD
        while not stop:
            wait = due - now()
            if wait <= 0:
                break
            for key, _ in sel.select(wait):
                if key.data == "stdin":
                    stop = True
                else:  # pushes of our own events: drain them
                    try:
                        c.lines()
                    except OSError as e:
                        lost = str(e)
                        stop = True
        if stop:
            break
        n += 1
        rid = 10 + n
        t0 = now()
        c.send("submit", rid, doc=doc, tx=f"b{n}", base=head, ops=[{"op": "set", "node": "root", "key": "b", "value": n}])
        m = None
        try:
            while m is None:
                for line in c.lines():
                    if line.startswith(REPLY):
                        r = json.loads(line)
                        if r["re"] == rid:
                            m = r
        except OSError as e:
            lost = str(e)
            break
        t1 = now()
        if m.get("ok"):
            head = max(head, m["version"])
            samples.append((t0, (t1 - t0) * 1e3))
        else:
            code = m.get("error", {}).get("code", "unknown")
            errors[code] = errors.get(code, 0) + 1
        k = max(k + 1, math.ceil((now() - start) / PERIOD))
    print(json.dumps({"samples": samples, "errors": errors, "byes": c.byes, "lost": lost,
                      "start": start, "end": now()}), flush=True)


# -------------------------------------------------------------- flooder ----

def flood_main(port, token, doc, submits):
    c = Conn(port, token, "flood")
    c.request("create_doc", 2, doc=doc)
    base = 0  # a new document; the flooder never opens it
    # Each submit based on the version its predecessor makes: a pipelining
    # client's prediction, exact when every one commits.
    buf = b"".join((json.dumps({"id": 10 + i, "type": "submit", "doc": doc, "tx": f"f{i}", "base": base + i,
                                "ops": [{"op": "set", "node": "root", "key": "f", "value": i}]},
                               separators=(",", ":")) + "\n").encode() for i in range(submits))
    print("ready", flush=True)
    sys.stdin.readline()  # go
    t0 = now()
    c.sock.sendall(buf)  # one write, as fast as the socket takes it; nothing read meanwhile
    t_sent = now()
    counts, answered, t_first, lost, first_other = {}, 0, None, None, None
    try:
        while answered < submits:
            for line in c.lines():
                if not line.startswith(REPLY):
                    continue
                if t_first is None:
                    t_first = now()
                if b'"ok":true' in line:
                    counts["ok"] = counts.get("ok", 0) + 1
                else:
                    m = json.loads(line)
                    code = m.get("error", {}).get("code", "unknown")
                    counts[code] = counts.get(code, 0) + 1
                    if code != "rate_limited" and first_other is None:
                        first_other = m
                answered += 1
    except OSError as e:
        lost = str(e)
    t_done = now()
    print(json.dumps({"submits": submits, "bytes": len(buf), "t0": t0, "t_sent": t_sent, "t_first": t_first,
                      "t_done": t_done, "answered": answered, "counts": counts, "first_other": first_other,
                      "byes": c.byes, "lost": lost}), flush=True)


# ------------------------------------------------------------ orchestra ----

def child(*args):
    p = subprocess.Popen([sys.executable, __file__, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "ready":
        sys.exit(f"{args[0]} did not start")
    return p


def go(p):
    p.stdin.write("go\n")
    p.stdin.flush()


def finish(p):
    line = p.stdout.readline()
    p.wait()
    if not line:
        sys.exit("a child died")
    return json.loads(line)


def run(port, token_a, doc_a, token_b, doc_b, submits, pre, post, baseline, out):
    probe = child("probe", str(port), token_b, doc_b)
    flooder = child("flooder", str(port), token_a, doc_a, str(submits)) if submits else None
    go(probe)
    if flooder:
        time.sleep(pre)
        go(flooder)
        f = finish(flooder)
        time.sleep(post)
    else:
        f = None
        time.sleep(baseline)
    probe.stdin.write("stop\n")
    probe.stdin.flush()
    b = finish(probe)
    json.dump({"probe": b, "flood": f}, open(out, "w"))


def report(runs):
    print("B = one set every 10 ms on its own document, waiting for each ack; ack latency in ms "
          "(during = B's submits sent between the flood's first byte and its last reply)")
    print(f"{'run':<26}{'B acks':>7}{'p50':>8}{'p99':>8}{'max':>8}{'during':>8}{'p50':>8}{'p99':>8}{'max':>8}"
          f"{'B errors':>10}  flood: ok / rate_limited / other, all written, all answered (from its first byte)")
    notes = []
    for label, path in runs:
        r = json.load(open(path))
        b, f = r["probe"], r["flood"]
        lat = [l for _, l in b["samples"]]
        dur = [l for t, l in b["samples"] if f and f["t0"] <= t <= f["t_done"]]
        berr = sum(b["errors"].values())
        line = (f"{label:<26}{len(lat):>7}{pct(lat, 50):>8.2f}{pct(lat, 99):>8.2f}{max(lat, default=float('nan')):>8.2f}"
                f"{len(dur) if f else '-':>8}")
        if f and dur:
            line += f"{pct(dur, 50):>8.2f}{pct(dur, 99):>8.2f}{max(dur):>8.2f}"
        else:
            line += f"{'-':>8}{'-':>8}{'-':>8}"
        line += f"{berr:>10}"
        if f:
            c = f["counts"]
            other = sum(v for k, v in c.items() if k not in ("ok", "rate_limited"))
            line += (f"  {c.get('ok', 0)} / {c.get('rate_limited', 0)} / {other}, "
                     f"{(f['t_sent'] - f['t0']) * 1e3:.0f} ms, {f['t_done'] - f['t0']:.2f} s")
            others = {k: v for k, v in c.items() if k not in ("ok", "rate_limited")}
            notes.append(f"  {label}: flood {f['submits']} submits ({f['bytes']} bytes) answered {f['answered']};"
                         f" first reply after {(f['t_first'] or f['t_done']) - f['t0']:.3f} s;"
                         f" {c.get('ok', 0) / max(f['t_done'] - f['t0'], 1e-9):.0f} ok/s over its span; other errors by code"
                         f" {json.dumps(others) if others else 'none'}"
                         f"{'; first: ' + json.dumps(f['first_other'])[:240] if f['first_other'] else ''}"
                         f"; byes {len(f['byes'])}{': ' + f['byes'][0] if f['byes'] else ''}"
                         f"; lost {f['lost'] or 'no'}")
        notes.append(f"  {label}: B ran {b['end'] - b['start']:.1f} s, {len(lat)} acks, errors by code"
                     f" {json.dumps(b['errors']) if b['errors'] else 'none'}; byes {len(b['byes'])}; lost {b['lost'] or 'no'}")
        print(line)
    print("\n".join(notes))


if __name__ == "__main__":
    mode, a = sys.argv[1], sys.argv[2:]
    if mode == "docs":
        writers, want, suffix = int(a[0]), a[1], a[2]
        flood_doc = f"flood-{suffix}"
        w = fnv1a(flood_doc) % writers
        for i in range(1000):
            d = f"probe-{suffix}-{i}"
            if (fnv1a(d) % writers == w) == (want == "same"):
                print(flood_doc, d, w, fnv1a(d) % writers)
                break
    elif mode == "probe":
        probe_main(int(a[0]), a[1], a[2])
    elif mode == "flooder":
        flood_main(int(a[0]), a[1], a[2], int(a[3]))
    elif mode == "run":
        run(int(a[0]), a[1], a[2], a[3], a[4], int(a[5]), float(a[6]), float(a[7]), float(a[8]), a[9])
    elif mode == "report":
        report([x.split("=", 1) for x in a])
    else:
        sys.exit(__doc__)
