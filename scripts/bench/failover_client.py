#!/usr/bin/env python3
"""Terminals and analysis for scripts/bench/failover (stdlib only).

  failover_client.py setup PORT TOKEN USER DOC
      create DOC (as USER) and print its version (0)
  failover_client.py writer PORT TOKEN USER DOC STOPFILE OUT [--interval-ms MS] [--prefix P]
      one terminal submitting to DOC, one transaction in flight, until STOPFILE
      exists; writes OUT (JSON): every ack (tx, version, times) and every error,
      disconnect and reconnect
  failover_client.py subscriber PORT TOKEN USER DOC STOPFILE WRITER_OUT OUT
      one terminal with DOC open, recording the version of every `events` push;
      after STOPFILE it waits (45 s at most) until it has seen the writer's last
      acknowledged version (read from WRITER_OUT), then writes OUT (JSON)
  failover_client.py state [sync|async]
      reads `pg_autoctl show state --json` on stdin; prints
      "healthy PRIMARY SECONDARY" or "unhealthy <summary>"
  failover_client.py report WRITER_OUT SUB_OUT ROUNDS_FILE LOG_TXS
      prints acked, lost, the subscriber's gaps/duplicates and the unavailable
      window of every failover, with p50/max

The writer (SPEC 16; deploy/README.md "How terminals fail over"): transaction
i has tx "<prefix>-i" and base = the version of the previous ack. A reply
`unavailable` is retried 25 ms later with the same tx and base on the same
connection; a disconnect (EOF, reset, `bye`, no reply within 30 s) is followed
by a reconnect (100 ms doubling to 1 s), `hello`, `open`, and the same tx
resent with the same base: a tx that committed answers its first version
(docs/protocol.md: resubmitting a tx returns the first result). If the head
the `open` returns is below the base (acknowledged events gone: asynchronous
replication), that is recorded ("regressions") and the tx is resent with
base = the head. Times are wall-clock (time.time()), comparable with the
script's failover timestamps.
"""
import json
import os
import signal
import socket
import sys
import time

REPLY_TIMEOUT = 30.0
CONNECT_TIMEOUT = 5.0
PING_EVERY = 10.0


class Disconnected(Exception):
    pass


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=CONNECT_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.next_id = 1
        self.pushes = []

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, obj):
        rid = self.next_id
        self.next_id += 1
        obj = dict(obj)
        obj["id"] = rid
        try:
            self.sock.sendall((json.dumps(obj, separators=(",", ":")) + "\n").encode())
        except OSError as e:
            raise Disconnected("send: %s" % e)
        return rid

    def read(self, timeout):
        """One message, or None when nothing came within timeout."""
        deadline = time.time() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return None
            except OSError as e:
                raise Disconnected("recv: %s" % e)
            if not chunk:
                raise Disconnected("EOF")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        msg = json.loads(line)
        if msg.get("push") == "bye":
            raise Disconnected("bye %s" % json.dumps(msg))
        return msg

    def request(self, obj, timeout=REPLY_TIMEOUT, on_push=None):
        rid = self.send(obj)
        deadline = time.time() + timeout
        while True:
            left = deadline - time.time()
            if left <= 0:
                raise Disconnected("no reply to %s within %.0f s" % (obj.get("type"), timeout))
            msg = self.read(left)
            if msg is None:
                continue
            if "push" in msg:
                if on_push:
                    on_push(msg)
                continue
            if msg.get("re") == rid:
                return msg


def hello(conn, user, token, client):
    r = conn.request({"type": "hello", "user": user, "token": token, "client": client})
    if not r.get("ok"):
        raise Disconnected("hello refused: %s" % json.dumps(r))


def err_code(r):
    return (r.get("error") or {}).get("code", "?")


def now():
    return time.time()


def cmd_setup(port, token, user, doc):
    c = Conn(int(port))
    hello(c, user, token, "failover-setup")
    r = c.request({"type": "create_doc", "doc": doc})
    if not r.get("ok"):
        sys.exit("create_doc failed: %s" % json.dumps(r))
    print(r.get("version"))
    c.close()


class Stop(Exception):
    pass


def on_sigterm(signum, frame):
    raise Stop()


def cmd_writer(port, token, user, doc, stopfile, out, interval_ms=0.0, prefix="w"):
    port = int(port)
    acks = []          # [tx, version, t_first_send, t_ack, attempts]
    errors = []        # [t, tx, code] (code "unavailable:contended" when the message says so)
    disconnects = []   # [t, tx, reason]
    reconnects = []    # [t, head, base]
    regressions = []   # [t, base, head]
    unanswered = []    # [tx, base, t_first_send, attempts]: in flight when the run ended
    conn = None
    base = None
    i = 0
    backoff = 0.1
    progress = out + ".progress"
    last_progress = 0.0
    stop_deadline = None
    signal.signal(signal.SIGTERM, on_sigterm)

    def check_stop():
        nonlocal stop_deadline
        if stop_deadline is None and os.path.exists(stopfile):
            stop_deadline = now() + 30  # the tx in flight gets 30 s to be answered
        if stop_deadline is not None and now() > stop_deadline:
            raise Stop()

    def connect():
        nonlocal conn, base, backoff
        while True:
            check_stop()
            try:
                c = Conn(port)
                hello(c, user, token, "failover-writer")
                while True:
                    check_stop()
                    r = c.request({"type": "open", "doc": doc})
                    if r.get("ok"):
                        break
                    if err_code(r) == "unavailable":
                        errors.append([now(), None, "open:unavailable"])
                        time.sleep(0.025)
                        continue
                    raise Disconnected("open: %s" % json.dumps(r))
                head = r["version"]
                if base is None:
                    base = head
                elif head < base:
                    regressions.append([now(), base, head])
                    base = head
                reconnects.append([now(), head, base])
                conn = c
                backoff = 0.1
                return
            except (Disconnected, OSError) as e:
                disconnects.append([now(), None, "connect: %s" % e])
                time.sleep(backoff)
                backoff = min(1.0, backoff * 2)

    tx = None
    try:
        connect()
        while not os.path.exists(stopfile):
            i += 1
            tx = "%s-%d" % (prefix, i)
            ops = [{"op": "set", "node": "root", "key": "k%d" % (i % 10), "value": i}]
            t_first = now()
            attempts = 0
            while True:
                check_stop()
                if conn is None:
                    connect()
                attempts += 1
                try:
                    r = conn.request({"type": "submit", "doc": doc, "tx": tx, "base": base, "ops": ops})
                except (Disconnected, OSError, ValueError) as e:
                    disconnects.append([now(), tx, str(e)[:300]])
                    conn.close()
                    conn = None
                    time.sleep(backoff)
                    backoff = min(1.0, backoff * 2)
                    continue
                if r.get("ok"):
                    acks.append([tx, r["version"], t_first, now(), attempts])
                    base = r["version"]
                    if now() - last_progress > 0.5:
                        last_progress = now()
                        with open(progress + ".tmp", "w") as f:
                            f.write("%.6f %d %d\n" % (last_progress, base, len(acks)))
                        os.rename(progress + ".tmp", progress)
                    break
                code = err_code(r)
                msg = (r.get("error") or {}).get("message", "")
                errors.append([now(), tx, code + (":contended" if "contended" in msg else "")])
                if code == "unavailable":
                    time.sleep(0.025)
                elif code == "rate_limited":
                    time.sleep(((r.get("error") or {}).get("details") or {}).get("retry_after_ms", 100) / 1000.0)
                elif code == "version":
                    # base beyond the head: acknowledged events are gone. Open again.
                    conn.close()
                    conn = None
                else:
                    errors.append([now(), tx, "detail: %s" % json.dumps(r)[:300]])
                    time.sleep(0.1)
                    if attempts > 50:
                        break
            tx = None
            if interval_ms > 0:
                time.sleep(interval_ms / 1000.0)
    except Stop:
        if tx is not None:
            unanswered.append([tx, base, t_first, attempts])
    if conn:
        conn.close()
    with open(out + ".tmp", "w") as f:
        json.dump({"acks": acks, "errors": errors, "disconnects": disconnects,
                   "reconnects": reconnects, "regressions": regressions,
                   "unanswered": unanswered, "last_version": base}, f)
    os.rename(out + ".tmp", out)


def cmd_subscriber(port, token, user, doc, stopfile, writer_out, out):
    port = int(port)
    last = None
    seen = 0
    gaps = []        # [t, expected, got]
    dups = []        # [t, version, last]
    disconnects = [] # [t, reason]
    reconnects = []  # [t, since, head, n_events]
    errors = []      # [t, code]
    regressions = [] # [t, last seen, head]: the head went back (acknowledged events lost)
    conn = None
    backoff = 0.1
    stop_at = None
    signal.signal(signal.SIGTERM, on_sigterm)
    target = None

    def take(versions, t):
        nonlocal last, seen
        for v in versions:
            seen += 1
            if last is None:
                last = v
                continue
            if v == last + 1:
                last = v
            elif v <= last:
                dups.append([t, v, last])
            else:
                gaps.append([t, last + 1, v])
                last = v

    def on_push(msg):
        if msg.get("push") == "events" and msg.get("doc") == doc:
            take([e["version"] for e in msg.get("events", [])], now())

    def connect():
        nonlocal conn, backoff, last
        while True:
            try:
                c = Conn(port)
                hello(c, user, token, "failover-subscriber")
                since = last
                while True:
                    req = {"type": "open", "doc": doc}
                    if since is not None:
                        req["since"] = since
                    r = c.request(req, on_push=on_push)
                    if not r.get("ok"):
                        if err_code(r) == "unavailable":
                            errors.append([now(), "open:unavailable"])
                            time.sleep(0.05)
                            continue
                        if err_code(r) == "version" and since is not None:
                            # `since` beyond the head: events this terminal was
                            # pushed are no longer in the log. Start again at the head.
                            r = c.request({"type": "open", "doc": doc}, on_push=on_push)
                            if not r.get("ok"):
                                raise Disconnected("open: %s" % json.dumps(r))
                            regressions.append([now(), since, r["version"]])
                            last = r["version"]
                            reconnects.append([now(), since, r["version"], 0])
                            break
                        raise Disconnected("open: %s" % json.dumps(r))
                    if since is None:
                        last = r["version"]  # the state at this version
                        reconnects.append([now(), None, r["version"], 0])
                        break
                    evs = [e["version"] for e in r.get("events", [])]
                    take(evs, now())
                    reconnects.append([now(), since, r["version"], len(evs)])
                    if r.get("more"):
                        since = r["version"]
                        continue
                    break
                conn = c
                backoff = 0.1
                return
            except (Disconnected, OSError) as e:
                disconnects.append([now(), "connect: %s" % e])
                time.sleep(backoff)
                backoff = min(1.0, backoff * 2)

    last_ping = now()
    try:
        run_subscriber_loop = True
        connect()
    except Stop:
        run_subscriber_loop = False
    while run_subscriber_loop:
        if stop_at is None and os.path.exists(stopfile):
            stop_at = now()
        if stop_at is not None:
            if target is None and os.path.exists(writer_out):
                with open(writer_out) as f:
                    target = json.load(f).get("last_version")
            if (target is not None and last is not None and last >= target) or now() - stop_at > 45:
                break
        try:
            if conn is None:
                connect()
            if now() - last_ping > PING_EVERY:
                conn.send({"type": "ping"})
                last_ping = now()
            msg = conn.read(0.2)
            if msg is not None and msg.get("push") == "closed" and msg.get("doc") == doc:
                # The server stopped the document (its log lost versions it had
                # pushed, after an asynchronous failover): open it again.
                disconnects.append([now(), "closed: %s" % msg.get("reason")])
                conn.close()
                conn = None
                continue
            if msg is not None and "push" in msg:
                on_push(msg)
        except Stop:
            break
        except (Disconnected, OSError, ValueError) as e:
            disconnects.append([now(), str(e)[:300]])
            conn.close()
            conn = None
            time.sleep(backoff)
            backoff = min(1.0, backoff * 2)
    if conn:
        conn.close()
    with open(out, "w") as f:
        json.dump({"last": last, "seen": seen, "gaps": gaps, "dups": dups,
                   "disconnects": disconnects, "reconnects": reconnects,
                   "errors": errors, "regressions": regressions, "target": target}, f)


def cmd_state(mode="sync"):
    nodes = json.load(sys.stdin)
    prim = [n for n in nodes if n["current_group_state"] == "primary" and n["assigned_group_state"] == "primary"]
    sec = [n for n in nodes if n["current_group_state"] == "secondary" and n["assigned_group_state"] == "secondary"]
    if len(nodes) == 2 and len(prim) == 1 and len(sec) == 1 and all(n["health"] == 1 for n in nodes):
        print("healthy %s %s" % (prim[0]["nodename"], sec[0]["nodename"]))
    else:
        print("unhealthy " + ",".join("%s:%s/%s:h%s" % (n["nodename"], n["current_group_state"],
                                                       n["assigned_group_state"], n["health"]) for n in nodes))


def pct(values, p):
    """Nearest rank."""
    if not values:
        return float("nan")
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(-(-p * len(v) // 100)) - 1))
    return v[k]


def cmd_report(writer_out, sub_out, rounds_file, log_txs):
    with open(writer_out) as f:
        w = json.load(f)
    with open(sub_out) as f:
        s = json.load(f)
    rounds = []
    with open(rounds_file) as f:
        for line in f:
            if line.strip():
                rounds.append(json.loads(line))
    logged = {}
    with open(log_txs) as f:
        for line in f:
            line = line.strip()
            if line:
                tx, v = line.split("|")
                logged[tx] = int(v)
    acks = w["acks"]
    lost = [a for a in acks if a[0] not in logged]
    moved = [a for a in acks if a[0] in logged and logged[a[0]] != a[1]]
    print("acked %d  lost %d  acked-with-another-version-in-log %d  log-events %d  writer-regressions %d"
          % (len(acks), len(lost), len(moved), len(logged), len(w["regressions"])))
    for a in lost[:20]:
        print("  LOST tx %s version %d acked at %s" % (a[0], a[1], time.strftime("%H:%M:%S", time.localtime(a[3])) + ("%.3f" % (a[3] % 1))[1:]))
    for r in w["regressions"]:
        print("  REGRESSION at %.3f: the writer's base %d, the head after reconnecting %d" % (r[0], r[1], r[2]))
    for u in w.get("unanswered", []):
        print("  UNANSWERED when the run ended: tx %s (base %s), first sent %.1f s before, %d attempts"
              % (u[0], u[1], now() - u[2], u[3]))
    print("subscriber: events pushed %d, last version %s (writer's last ack %s), gaps %d, duplicates %d, reconnects %d, head went back %d"
          % (s["seen"], s["last"], w["last_version"], len(s["gaps"]), len(s["dups"]), len(s["reconnects"]) - 1,
             len(s.get("regressions", []))))
    for g in s.get("regressions", []):
        print("  HEAD WENT BACK at %.3f: last pushed %d, head on reopening %d" % tuple(g))
    for g in s["gaps"][:10]:
        print("  GAP at %.3f: expected %d, got %d" % tuple(g))
    for d in s["dups"][:10]:
        print("  DUPLICATE at %.3f: version %d after %d" % tuple(d))
    # The unavailable window of a failover: the longest gap between two
    # consecutive acks during it (from the failover's start to the formation
    # healthy again), i.e. from the last ack before the outage to the first
    # after it. For `promote` the outage begins at the kill; for `perform`
    # some time after the command (the monitor drains the primary first).
    windows = []
    stuck = []
    # The baseline, same run: how long PostgreSQL itself had no writable
    # primary (from the failover to the promotion the harness saw: the
    # standby taking writes). No client, ours or another, can write sooner.
    no_primary = []
    print("round  primary→        t_failover     outage from    to      window_ms  unavailable  disconnects  promoted  healthy  lost")
    for r in rounds:
        t0, t1 = r["t_fail"], r.get("t_healthy", r["t_fail"])
        pairs = [(b[3] - a[3], a, b) for a, b in zip(acks, acks[1:]) if b[3] > t0 and a[3] < t1]
        if not pairs:
            print("%5d  no ack during the failover" % r["round"])
            continue
        gap, a, b = max(pairs, key=lambda x: x[0])
        win = gap * 1000.0
        windows.append(win)
        if r.get("t_promoted") and not r.get("t_restart"):
            no_primary.append((r["t_promoted"] - t0) * 1000.0)
        unav = sum(1 for e in w["errors"] if a[3] <= e[0] <= b[3] and e[2] == "unavailable")
        disc = sum(1 for d in w["disconnects"] if a[3] <= d[0] <= b[3])
        prev = max([q["t_fail"] for q in rounds if q["t_fail"] < t0] or [0])
        lost_here = sum(1 for x in lost if prev + 1 < x[3] <= t0 + 1)  # acks go on a few ms past t_fail
        print("%5d  %-6s→%-6s  %s  %+8.3f s  %+8.3f s  %9.0f  %11d  %11d  %+7.1f s  %+6.1f s  %4d%s"
              % (r["round"], r["primary_before"], r.get("primary_after", "?"),
                 time.strftime("%H:%M:%S", time.localtime(t0)) + ("%.3f" % (t0 % 1))[1:],
                 a[3] - t0, b[3] - t0, win, unav, disc, r.get("t_promoted", t0) - t0, t1 - t0, lost_here,
                 ("  SERVER DID NOT RESUME: restarted at %+.1f s" % (r["t_restart"] - t0)) if r.get("t_restart") else ""))
        if r.get("t_restart"):
            stuck.append(win)
    if windows:
        print("unavailable window over %d failovers: p50 %.0f ms, max %.0f ms, min %.0f ms%s"
              % (len(windows), pct(windows, 50), max(windows), min(windows),
                 (" (%d of them ended only by restarting rewind-server)" % len(stuck)) if stuck else ""))
        ok = [x for x in windows if x not in stuck]
        if stuck and ok:
            print("  without those: %d failovers, p50 %.0f ms, max %.0f ms" % (len(ok), pct(ok, 50), max(ok)))
        if no_primary and ok:
            print("baseline, same run: PostgreSQL without a writable primary (failover → promotion seen): p50 %.0f ms, max %.0f ms"
                  % (pct(no_primary, 50), max(no_primary)))
            print("RATIO unavailable_p50/no_primary_p50=%.2f (what Rewind adds to PostgreSQL's own outage; the promotion is seen by polling every ~0.5 s)"
                  % (pct(ok, 50) / pct(no_primary, 50)))
    # The longest gaps between acks outside the failovers (stalls elsewhere).
    gaps = []
    for a, b in zip(acks, acks[1:]):
        if any(b[3] > r["t_fail"] and a[3] < r.get("t_healthy", r["t_fail"]) for r in rounds):
            continue
        gaps.append(((b[3] - a[3]) * 1000.0, a[3]))
    gaps.sort(reverse=True)
    if gaps:
        print("longest ack gaps outside the failovers: " + ", ".join(
            "%.0f ms at %s" % (g, time.strftime("%H:%M:%S", time.localtime(t))) for g, t in gaps[:3]))
    codes = {}
    for e in w["errors"]:
        key = "other" if e[2].startswith("detail") else e[2]
        codes[key] = codes.get(key, 0) + 1
    print("writer errors by code: %s; disconnects %d; reconnects %d"
          % (json.dumps(codes, sort_keys=True), len(w["disconnects"]), len(w["reconnects"]) - 1))
    if len(acks) > 1:
        span = acks[-1][3] - acks[0][2]
        lat = [(a[3] - a[2]) * 1000.0 for a in acks if a[4] == 1]
        print("writer: %.0f acks/s over %.0f s; ack latency of first tries p50 %.1f ms, p99 %.1f ms"
              % (len(acks) / span, span, pct(lat, 50), pct(lat, 99)))
    return 0 if not lost and not s["gaps"] and not s["dups"] and not stuck else 1


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, args = argv[1], argv[2:]
    opts = {}
    pos = []
    k = 0
    while k < len(args):
        if args[k].startswith("--"):
            opts[args[k][2:].replace("-", "_")] = args[k + 1]
            k += 2
        else:
            pos.append(args[k])
            k += 1
    if cmd == "setup":
        cmd_setup(*pos)
    elif cmd == "writer":
        cmd_writer(*pos, interval_ms=float(opts.get("interval_ms", 0)), prefix=opts.get("prefix", "w"))
    elif cmd == "subscriber":
        cmd_subscriber(*pos)
    elif cmd == "state":
        cmd_state(*pos)
    elif cmd == "report":
        sys.exit(cmd_report(*pos))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
