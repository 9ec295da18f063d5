#!/usr/bin/env python3
"""The cost of remote cursors: one typist, N terminals whose carets it moves.

Called by scripts/bench/presence: port, tokens (writer's first), server pid,
N, seconds, window, warm-up, the readers' user names (comma-separated, in the
order of their tokens). One document, one focusable text node `t` (200
characters), created by the writer, which shares it with the readers' users
as editors (documents are private to their creator). A writer (a child process, so that its latencies never wait on
the readers' event loop) inserts one character at 0, W submits in flight.
N readers (asyncio, here) have the document open and are drained all the
time, counting bytes and lines containing "push":"presence". The phases:

  A  the readers have no focus (baseline);
  B  every reader's caret sits at the end of the text: each insert moves all
     N carets, so the readers get up to N*(N-1) presence pushes per commit;
  C  every reader's caret sits at 0: an insert exactly at a caret leaves it
     before the text, so nothing moves (focused but not moved);
  A2 the readers blur: A again, to show the drift over the run.
"""
import asyncio
import json
import os
import socket
import sys
import time

DOC, NODE, TEXT0 = "presence", "t", 200
PRESENCE, BYE, REPLY = b'"push":"presence"', b'"push":"bye"', b'{"re":'


def pct(xs, p):
    xs = sorted(xs) or [float("nan")]
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


# ---------------------------------------------------------------- writer ----

def writer_main(port, token, window, share_with):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    st = {"buf": b"", "id": 0, "bytes": 0, "presence": 0, "byes": []}

    def send(type_, **fields):
        st["id"] += 1
        sock.sendall((json.dumps({"id": st["id"], "type": type_, **fields}) + "\n").encode())
        return st["id"]

    def lines(block=True):
        """The replies among the complete lines of one recv (None: nothing waiting, if not `block`)."""
        try:
            chunk = sock.recv(1 << 20, 0 if block else socket.MSG_DONTWAIT)
        except BlockingIOError:
            return None
        if not chunk:
            sys.exit(f"writer: the server closed the connection {st['byes']}")
        st["bytes"] += len(chunk)
        done, _, st["buf"] = (st["buf"] + chunk).rpartition(b"\n")
        out = []
        for line in done.split(b"\n") if done else []:
            if PRESENCE in line:
                st["presence"] += 1
            elif line.startswith(REPLY):
                out.append(json.loads(line))
            elif BYE in line:
                st["byes"].append(line.decode()[:300])
        return out

    def request(type_, **fields):
        i = send(type_, **fields)
        while True:
            for m in lines():
                if m["re"] == i:
                    if not m.get("ok"):
                        sys.exit(f"writer: {type_} failed: {m}")
                    return m

    request("hello", token=token, client="writer")
    request("create_doc", doc=DOC)
    for user in share_with:
        request("share", doc=DOC, user=user, role="editor")
    request("open", doc=DOC)
    head = request("submit", doc=DOC, tx="seed", base=0, ops=[
        {"op": "create", "node": NODE, "parent": "root", "index": 0, "kind": "text",
         "frame": [0, 0, 400, 20], "focusable": True, "text": "abcdefghij" * (TEXT0 // 10)}])["version"]
    length, seq = TEXT0, 0
    print("ready", flush=True)
    for cmd in sys.stdin:
        seconds = float(cmd)
        while lines(block=False) is not None:  # what came in between phases is not this phase's
            pass
        st["bytes"] = st["presence"] = 0
        lat, ok, errors, first_error = [], 0, 0, None
        pending = {}
        cpu0, t0 = time.process_time(), time.perf_counter()
        deadline = t0 + seconds
        while True:
            now = time.perf_counter()
            while len(pending) < window and now < deadline:
                seq += 1
                pending[send("submit", doc=DOC, tx=f"w{seq}", base=head,
                             ops=[{"op": "insert", "node": NODE, "pos": 0, "text": "x"}])] = now
            if not pending:
                break
            for m in lines():
                lat.append((time.perf_counter() - pending.pop(m["re"])) * 1e3)
                if m.get("ok"):
                    ok += 1
                    head = max(head, m["version"])
                else:
                    errors += 1
                    first_error = first_error or m
        elapsed = time.perf_counter() - t0
        length += ok
        print(json.dumps({"commits": ok, "errors": errors, "first_error": first_error, "elapsed": elapsed,
                          "p50": pct(lat, 50), "p99": pct(lat, 99), "length": length,
                          "presence": st["presence"], "bytes": st["bytes"], "byes": st["byes"],
                          "cpu": (time.process_time() - cpu0) / elapsed * 100}), flush=True)


# --------------------------------------------------------------- readers ----

class Reader(asyncio.Protocol):
    def __init__(self):
        self.partial, self.bytes, self.presence = b"", 0, 0
        self.waiters, self.byes, self.lost, self.next_id = {}, [], False, 0

    def connection_made(self, transport):
        self.transport = transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data):
        # Count on complete lines only; parse only lines that are replies or byes.
        self.bytes += len(data)
        done, nl, self.partial = (self.partial + data).rpartition(b"\n")
        if not nl:
            return
        self.presence += done.count(PRESENCE)
        if REPLY in done or BYE in done:
            for line in done.split(b"\n"):
                if line.startswith(REPLY):
                    m = json.loads(line)
                    f = self.waiters.pop(m["re"], None)
                    if f and not f.done():
                        f.set_result(m)
                elif BYE in line:
                    self.byes.append(line.decode()[:300])

    def connection_lost(self, exc):
        self.lost = True
        for f in self.waiters.values():
            if not f.done():
                f.set_exception(ConnectionError(f"reader lost its connection {self.byes}"))

    async def request(self, type_, **fields):
        self.next_id += 1
        f = asyncio.get_running_loop().create_future()
        self.waiters[self.next_id] = f
        self.transport.write((json.dumps({"id": self.next_id, "type": type_, **fields}) + "\n").encode())
        m = await asyncio.wait_for(f, 60)
        if not m.get("ok"):
            sys.exit(f"reader: {type_} failed: {m}")
        return m


async def connect_reader(port, token, i):
    _, r = await asyncio.get_running_loop().create_connection(Reader, "127.0.0.1", port)
    await r.request("hello", token=token, client=f"reader-{i}")
    await r.request("open", doc=DOC)
    return r


async def settle(readers, quiet=0.3):
    """Waits until the readers have received nothing for `quiet` seconds."""
    last, still = -1, 0.0
    while still < quiet:
        await asyncio.sleep(0.05)
        total = sum(r.bytes for r in readers)
        still = still + 0.05 if total == last else 0.0
        last = total


def cpu_ticks(pid):  # utime + stime
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


async def main():
    port, tokens, server_pid = int(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])
    n, seconds, window, warmup = int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
    users = sys.argv[8]
    hz = os.sysconf("SC_CLK_TCK")
    writer = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "writer", str(port), tokens[0], str(window), users,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 20)
    if (await writer.stdout.readline()).strip() != b"ready":
        sys.exit("the writer did not start")
    readers = []
    for k in range(0, n, 50):  # connect 50 at a time
        readers += await asyncio.gather(*(connect_reader(port, tokens[1 + i % (len(tokens) - 1)], i)
                                          for i in range(k, min(n, k + 50))))

    async def run(seconds):
        writer.stdin.write(f"{seconds}\n".encode())
        await writer.stdin.drain()
        line = await writer.stdout.readline()
        return json.loads(line) if line else sys.exit("the writer died")

    length = TEXT0
    if warmup > 0:
        length = (await run(warmup))["length"]
        proc = await asyncio.create_subprocess_exec("psql", "-qX", "-c", "ANALYZE")
        await proc.wait()
    results = []
    for name, caret in (("A no focus", None), ("B carets moved", "end"), ("C carets not moved", 0),
                        ("A2 no focus again", "blur")):
        live = [r for r in readers if not r.lost]
        if caret == "blur":
            await asyncio.gather(*(r.request("blur", doc=DOC) for r in live))
        elif caret is not None:
            pos = length if caret == "end" else caret
            await asyncio.gather(*(r.request("select", doc=DOC, node=NODE, start=pos, end=pos) for r in live))
        await settle(readers)
        b0, p0 = sum(r.bytes for r in readers), sum(r.presence for r in readers)
        s0, h0, t0 = cpu_ticks(server_pid), time.process_time(), time.perf_counter()
        w = await run(seconds)
        await settle(readers)  # the pushes of the last commits
        s1, h1 = cpu_ticks(server_pid), time.process_time()
        wall = time.perf_counter() - t0
        length = w["length"]
        c = max(w["commits"], 1)
        results.append({**w, "name": name, "rate": w["commits"] / w["elapsed"],
                        "pres": (sum(r.presence for r in readers) - p0) / c,
                        "bpr": (sum(r.bytes for r in readers) - b0) / n / c,
                        "server_cpu": (s1 - s0) / hz / wall * 100, "harness_cpu": (h1 - h0) / wall * 100,
                        "us": (s1 - s0) / hz / c * 1e6})
    writer.stdin.close()
    await writer.wait()

    print(f"one writer, {n} readers. presence: pushes received by all the readers, per commit; bytes: received per"
          f" reader per commit; cpu: % of one core over the phase and its drain (server, readers, writer);"
          f" srv us/c: server CPU per commit")
    print(f"{'phase':<20}{'commits/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'presence':>10}{'bytes':>9}"
          f"{'srv cpu':>9}{'rdr cpu':>9}{'wr cpu':>8}{'srv us/c':>10}")
    for r in results:
        print(f"{r['name']:<20}{r['rate']:>10.1f}{r['p50']:>9.3f}{r['p99']:>9.3f}{r['pres']:>10.1f}{r['bpr']:>9.1f}"
              f"{r['server_cpu']:>9.1f}{r['harness_cpu']:>9.1f}{r['cpu']:>8.1f}{r['us']:>10.1f}")
    a = results[0]
    for r in results[1:]:
        print(f"RATIO {r['name'].split()[0]}/A commits/s={r['rate'] / a['rate']:.2f} p50={r['p50'] / a['p50']:.2f}"
              f" p99={r['p99'] / a['p99']:.2f} server_cpu_per_commit={r['us'] / max(a['us'], 1e-9):.2f}")
    for r in results:
        print(f"  {r['name']}: commits={r['commits']} in {r['elapsed']:.2f} s, errors={r['errors']}"
              f"{' first_error=' + json.dumps(r['first_error']) if r['first_error'] else ''},"
              f" writer received {r['presence'] / max(r['commits'], 1):.1f} presence/commit,"
              f" {r['bytes'] / max(r['commits'], 1):.1f} bytes/commit")
    print(f"(at most N*(N-1) = {n * (n - 1)} presence per commit to the readers, N = {n} to the writer, when every"
          f" caret moves; fewer when several commits share a loop turn)")
    byes = [b for rd in readers for b in rd.byes] + results[-1]["byes"]
    lost = sum(rd.lost for rd in readers)
    print(f"byes seen: {len(byes)}{' first: ' + byes[0] if byes else ''}; readers disconnected: {lost}")
    if byes or lost:
        sys.exit(1)


if __name__ == "__main__":
    if sys.argv[1] == "writer":
        writer_main(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), [u for u in sys.argv[5].split(",") if u])
    else:
        asyncio.run(main())
