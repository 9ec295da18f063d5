#!/usr/bin/env python3
"""The plain-PostgreSQL row of scripts/bench/scrub: latency percentiles from
pgbench's per-transaction log (snap.*: the third field is microseconds),
beside the scrub steps measured in the same run (measure.out)."""
import glob
import sys

work = sys.argv[1]
xs = sorted(int(line.split()[2]) / 1000 for f in glob.glob(work + "/snap.[0-9]*") for line in open(f))
if not xs:
    sys.exit("pgbench logged no transactions")


def pct(p):
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


rows = {l[:24].strip(): l[24:].split() for l in open(work + "/measure.out") if l[:24].strip()}
scrub = rows["scrub 0→1 all passes"]
p50, p99 = float(scrub[1]), float(scrub[2])
print(f"{'plain PG: snapshot row':<24}{len(xs):>8}{pct(50):>10.2f}{pct(99):>10.2f}{xs[-1]:>10.2f}   (pgbench -c 1 -T 10, same cluster)")
print(f"RATIO scrub_step_p50/plain_snapshot_row_p50={p50 / pct(50):.2f} scrub_step_p99/plain_snapshot_row_p99={p99 / pct(99):.2f}")
