#!/usr/bin/env python3
"""A webhook receiver for Rewind's tests (Tests/RewindIntegrationTests/WebhookTests.swift).

Listens on 127.0.0.1 (--port, 0: any; the port is printed first, `listening PORT`),
verifies each POST's signature as the Standard Webhooks specification says — with the
standard library, from the specification's text, not from Rewind's code — and prints one
JSON line per request: {"id", "timestamp", "verified", "answered", "body"}.

How it answers is set by lines on stdin, so a test can make it misbehave mid-run:
  secret whsec_…   the secret to verify with
  mode ok          answer 204
  mode fail        answer 500
  mode hang        never answer (the connection stays open)
  mode cut         start a 200 answer and close the connection mid-body
"""
import argparse
import base64
import hashlib
import hmac
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

state = {"mode": "ok", "secret": None}
lock = threading.Lock()
TOLERANCE = 5 * 60


def verify(secret, msg_id, timestamp, signatures, body):
    """True if one of the space-separated `v1,<base64>` signatures is HMAC-SHA256 of id.timestamp.body."""
    if not (secret and msg_id and timestamp and signatures):
        return False
    try:
        ts = int(timestamp)
    except ValueError:
        return False
    if abs(time.time() - ts) > TOLERANCE:
        return False
    key = base64.b64decode(secret[len("whsec_"):] if secret.startswith("whsec_") else secret)
    expected = base64.b64encode(hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()).decode()
    for sig in signatures.split(" "):
        version, _, value = sig.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return True
    return False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            mode, secret = state["mode"], state["secret"]
        msg_id = self.headers.get("webhook-id")
        timestamp = self.headers.get("webhook-timestamp")
        ok = verify(secret, msg_id, timestamp, self.headers.get("webhook-signature"), body)
        answered = {"ok": 204, "fail": 500}.get(mode, mode)
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        with lock:
            print(json.dumps({"id": msg_id, "timestamp": timestamp, "verified": ok, "answered": answered, "body": parsed}), flush=True)
        if mode == "hang":
            time.sleep(3600)
            return
        if mode == "cut":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial")
            self.wfile.flush()
            self.close_connection = True
            return
        self.send_response(answered)
        self.send_header("Content-Length", "0")
        self.end_headers()


def control():
    for line in sys.stdin:
        word, _, value = line.strip().partition(" ")
        with lock:
            if word == "mode" and value in ("ok", "fail", "hang", "cut"):
                state["mode"] = value
            elif word == "secret":
                state["secret"] = value
        print(json.dumps({"control": line.strip()}), flush=True)
    os._exit(0)  # the test that started it is gone: so is it


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"listening {server.server_address[1]}", flush=True)
    threading.Thread(target=control, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
