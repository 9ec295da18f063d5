#!/usr/bin/env python3
"""A terminal that edits one document while scripts/bench/move moves it.

  move_client.py PORT TOKEN DOC STOPFILE

Says hello, opens DOC, then submits one edit at a time (a `set` of a view's
field) until STOPFILE exists, doing what PROTOCOL.md asks of a client when
its document moves: on push `closed` `moved` it opens the document again with
`since` (answered `unavailable` until the move's flip: again after 20 ms),
and sends an edit answered `unavailable` again with the same `tx`. Prints
one line: edits acknowledged, `unavailable` answers, and the time from the
`closed` push to the open that succeeded (what the person editing waits).
"""
import json
import os
import socket
import sys
import time


def main():
    port, token, doc, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    next_id = 1
    moved_at = None
    waits = []

    def send(type_, **fields):
        nonlocal next_id
        i = next_id
        next_id += 1
        sock.sendall((json.dumps({"id": i, "type": type_, **fields}) + "\n").encode())
        return i

    def reply(i):
        nonlocal buf, moved_at
        while True:
            while b"\n" not in buf:
                chunk = sock.recv(1 << 20)
                if not chunk:
                    sys.exit("the server closed the connection")
                buf += chunk
            line, buf = buf.split(b"\n", 1)
            m = json.loads(line)
            if m.get("push") == "closed" and m.get("doc") == doc:
                if m.get("reason") != "moved":
                    sys.exit(f"closed: {m}")
                moved_at = time.monotonic()
            elif m.get("re") == i:
                return m

    def request(type_, **fields):
        return reply(send(type_, **fields))

    if not request("hello", token=token, client="move-editor").get("ok"):
        sys.exit("hello refused")
    r = request("open", doc=doc)
    if not r.get("ok"):
        sys.exit(f"open: {r}")
    version = r["version"]

    def reopen():
        nonlocal version, moved_at
        while True:
            r = request("open", doc=doc, since=version)
            if r.get("ok"):
                for e in r.get("events", []):
                    version = max(version, e["version"])
                if moved_at is not None:
                    waits.append((time.monotonic() - moved_at) * 1000)
                    moved_at = None
                return
            if r.get("error", {}).get("code") != "unavailable":
                sys.exit(f"reopen: {r}")
            time.sleep(0.02)

    acked = unavailable = 0
    i = 0
    while not os.path.exists(stop):
        i += 1
        tx = f"move-edit-{i}"
        while True:
            r = request("submit", doc=doc, tx=tx, base=version, ops=[{"op": "set", "node": "v0", "key": "m", "value": i}])
            if r.get("ok"):
                version = max(version, r["version"])
                acked += 1
                break
            if r.get("error", {}).get("code") != "unavailable":
                sys.exit(f"submit: {r}")
            unavailable += 1
            time.sleep(0.02)
            if moved_at is not None:
                reopen()
        if moved_at is not None:
            reopen()
    waited = ",".join(f"{w:.1f}" for w in waits) or "none"
    print(f"editor acked={acked} unavailable={unavailable} closed_to_reopened_ms={waited} version={version}")


if __name__ == "__main__":
    main()
