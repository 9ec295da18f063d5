"""A blocking NDJSON terminal for the Python benchmark clients (undo, scrub):
hello on connect, requests matched to replies by `re`, pushes skipped."""
import json
import socket
import sys


class Terminal:
    def __init__(self, port, token, client):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.next_id = 1
        r = self.request("hello", token=token, client=client)
        if not r.get("ok"):
            sys.exit(f"hello refused: {r}")

    def send(self, type_, **fields):
        i = self.next_id
        self.next_id += 1
        self.sock.sendall((json.dumps({"id": i, "type": type_, **fields}) + "\n").encode())
        return i

    def line(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(1 << 22)
            if not chunk:
                sys.exit("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def reply_sized(self, i):
        """The reply to request i and its size in bytes; pushes are skipped
        without being parsed (a reply starts with `{"re":`)."""
        while True:
            raw = self.line()
            if raw.startswith(b'{"re"'):
                m = json.loads(raw)
                if m.get("re") == i:
                    return m, len(raw)

    def reply(self, i):
        return self.reply_sized(i)[0]

    def request(self, type_, **fields):
        return self.reply(self.send(type_, **fields))


def history_op(i, views, texts):
    """The i-th edit of a benchmark's long history: every third sets a field
    of one of `views` views (v0, v1, …), the others type a letter at the start
    of one of the text nodes named by `texts(i)`."""
    if i % 3 == 0:
        return {"op": "set", "node": f"v{i % views}", "key": "n", "value": i}
    return {"op": "insert", "node": texts(i), "pos": 0, "text": chr(97 + i % 26)}

