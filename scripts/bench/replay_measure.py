#!/usr/bin/env python3
"""The timed part of scripts/bench/replay.

  replay_measure.py log REWIND_BIN DOC RUNS WORK
      RUNS rounds, each: COPY (SELECT … ) TO STDOUT of the document's log rows
      (the columns `rewind admin replay` reads, joined to users, in log order)
      through psql into a file (its lines counted); `rewind admin replay DOC`; `rewind admin
      verify DOC`. Wall time and peak RSS of each process (wait4). Prints each
      run, the medians, rows/s and the ratios to COPY.
  replay_measure.py opens FILE
      The `open DOC ms bytes version` lines of every restart: p50/p99 per
      document and the ratio long/short.

The database is the one in PG* (PGDATABASE). Prints `key value` lines too.
"""
import os
import subprocess
import sys
import time


def run(argv, stdout_path):
    """Wall seconds and peak RSS (KiB) of one process; its stdout to a file."""
    with open(stdout_path, "wb") as out, open(stdout_path + ".err", "wb") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        secs = time.perf_counter() - t0
    if status != 0:
        sys.stderr.write(open(stdout_path + ".err").read()[-2000:])
        sys.exit(f"{argv[0]} exited with status {status >> 8}: {' '.join(argv)}")
    return secs, usage.ru_maxrss


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def psql_value(sql):
    return subprocess.run(["psql", "-qAtX", "-c", sql], check=True, capture_output=True, text=True).stdout.strip()


def log(bin_dir, doc, runs, work):
    esc = doc.replace("'", "''")
    rows = int(psql_value(f"SELECT count(*) FROM log WHERE doc = '{esc}'"))
    events = int(psql_value(f"SELECT head FROM documents WHERE id = '{esc}'"))
    # The rows and columns LogRows.range reads (Sources/RewindStore/LogRows.swift), in one statement.
    copy = ("COPY (SELECT l.seq, l.version, l.entry, l.id, l.user_id, u.name, l.client, l.kind, l.grp, l.action, l.tx, "
            "l.tx_digest, l.base, l.ops, l.inverse, l.refers, l.meta, (extract(epoch FROM l.time) * 1000)::bigint, l.hash "
            f"FROM log l JOIN users u ON u.id = l.user_id WHERE l.doc = '{esc}' ORDER BY l.seq) TO STDOUT")
    cmds = {
        "copy": ["psql", "-qX", "-v", "ON_ERROR_STOP=1", "-c", copy],
        "replay": [f"{bin_dir}/rewind", "admin", "replay", doc, "--database", ""],
        "verify": [f"{bin_dir}/rewind", "admin", "verify", doc, "--database", ""],
    }
    res = {k: [] for k in cmds}
    for r in range(runs):
        for k, argv in cmds.items():
            out = f"{work}/{k}.out"
            secs, rss = run(argv, out)
            res[k].append((secs, rss))
            print(f"run {r + 1} {k:<7} {secs:8.2f} s  {rows / secs:>10,.0f} rows/s  peak RSS {rss / 1024:8.1f} MiB", flush=True)
            if k == "replay":
                head = open(out, "rb").read(200).decode(errors="replace")
                if f'"version":{events}' not in head:
                    sys.exit(f"replay did not answer version {events}: {head[:120]}")
            if k == "verify" and "ok: 1 document(s) verified" not in open(out).read():
                sys.exit("verify did not pass: " + open(out).read()[:400])
            if k == "copy":
                copied = sum(1 for _ in open(out, "rb"))
                if copied != rows:
                    sys.exit(f"COPY wrote {copied} lines, the log holds {rows} rows")
    print()
    print(f"document {doc}: {events} events, {rows} log rows (events and marks)")
    print(f"{'measure':<10}{'runs':>5}{'median s':>10}{'rows/s':>12}{'peak RSS MiB':>14}")
    med = {}
    for k, xs in res.items():
        med[k] = median([s for s, _ in xs])
        print(f"{k:<10}{len(xs):>5}{med[k]:>10.2f}{rows / med[k]:>12,.0f}{max(m for _, m in xs) / 1024:>14.1f}")
        print(f"{k}_rows_per_s {rows / med[k]:.0f}")
    print()
    print(f"RATIO replay_rate/copy_rate={med['copy'] / med['replay']:.2f} verify_rate/copy_rate={med['copy'] / med['verify']:.2f}"
          f" (goal: replay >= 0.50)")


def opens(path):
    by = {}
    for line in open(path):
        f = line.split()
        if len(f) == 5 and f[0] == "open":
            by.setdefault(f[1], []).append((float(f[2]), int(f[3]), int(f[4])))
    if set(by) != {"replay-long", "replay-short"}:
        sys.exit(f"missing open samples: {sorted(by)}")
    print(f"{'first open after a restart':<28}{'events':>9}{'samples':>9}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'reply bytes':>13}")
    p50 = {}
    for doc in ("replay-long", "replay-short"):
        xs = [ms for ms, _, _ in by[doc]]
        p50[doc] = pct(xs, 50)
        print(f"{doc:<28}{by[doc][0][2]:>9}{len(xs):>9}{pct(xs, 50):>9.2f}{pct(xs, 99):>9.2f}{max(xs):>9.2f}{by[doc][0][1]:>13}")
    print()
    r = p50["replay-long"] / p50["replay-short"]
    print(f"RATIO open_p50_long/short={r:.2f} (goal: <= 1.5 and long p50 <= 100 ms: "
          f"{'met' if r <= 1.5 and p50['replay-long'] <= 100 else 'NOT met'})")


def main():
    if sys.argv[1] == "log":
        log(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    elif sys.argv[1] == "opens":
        opens(sys.argv[2])
    else:
        sys.exit(f"unknown mode {sys.argv[1]}")


if __name__ == "__main__":
    main()
