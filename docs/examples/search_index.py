"""A search index kept from Rewind's log, as an application's backend keeps one
(docs/api.md, "Following the log"): it follows `GET /v1/events` (Server-Sent
Events) from the last position it saw, and for every document that changed reads
its text again (`GET /v1/docs/{doc}/state`) and indexes its words. Standard
library only. Reconnects with `Last-Event-ID` when the stream ends, so a restart
(or a lost connection) neither misses a change nor indexes one twice.

    python3 docs/examples/search_index.py API_URL KEY [--prefix P] [--idle S] [--state FILE]

The key needs events:read and docs:read. With --idle S it stops once nothing has
come for S seconds and prints the index as JSON (word -> documents); --state FILE
keeps the last position across runs. (FollowTests runs it.)
"""
import argparse
import json
import re
import socket
import urllib.parse
import urllib.request


def words_of(state):
    """Every word of the document's text nodes, lower-cased."""
    text = " ".join(n.get("text", "") for n in state["nodes"].values())
    return {w.lower() for w in re.findall(r"\w+", text)}


def follow(api, key, after, prefix, idle):
    """(position, doc) of each entry after `after`, until the stream is idle for `idle` seconds."""
    query = {"after": str(after)}
    if prefix:
        query["doc_prefix"] = prefix
    req = urllib.request.Request(f"{api}/v1/events?{urllib.parse.urlencode(query)}",
                                 headers={"Authorization": "Bearer " + key, "Last-Event-ID": str(after)})
    with urllib.request.urlopen(req, timeout=idle) as stream:
        event_id = None
        try:
            for raw in stream:
                line = raw.decode().rstrip("\n")
                if line.startswith("id: "):
                    event_id = int(line[4:])
                elif line.startswith("data: "):
                    yield event_id, json.loads(line[6:])["doc"]
        except (socket.timeout, TimeoutError):
            return  # idle: caught up


def state(api, key, doc):
    req = urllib.request.Request(f"{api}/v1/docs/{urllib.parse.quote(doc, safe='')}/state",
                                 headers={"Authorization": "Bearer " + key})
    try:
        with urllib.request.urlopen(req) as r:
            return json.load(r)["state"]
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None  # deleted since: nothing to index
        raise


def main():
    p = argparse.ArgumentParser(description="Keep a search index from Rewind's log.")
    p.add_argument("api")
    p.add_argument("key")
    p.add_argument("--prefix")
    p.add_argument("--idle", type=float, default=30)
    p.add_argument("--state", help="a file keeping the last position seen")
    a = p.parse_args()
    position = 0
    if a.state:
        try:
            position = int(open(a.state).read())
        except (OSError, ValueError):
            pass
    index = {}  # word -> set of documents
    changed = set()
    for position, doc in follow(a.api.rstrip("/"), a.key, position, a.prefix, a.idle):
        changed.add(doc)
        if a.state:
            open(a.state, "w").write(str(position))
    for doc in sorted(changed):
        for docs in index.values():
            docs.discard(doc)
        s = state(a.api.rstrip("/"), a.key, doc)
        for w in words_of(s) if s else ():
            index.setdefault(w, set()).add(doc)
    print(json.dumps({w: sorted(d) for w, d in sorted(index.items()) if d}))


if __name__ == "__main__":
    main()
