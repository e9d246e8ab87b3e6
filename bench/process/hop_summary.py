#!/usr/bin/env python3
"""Medians over the rounds of ring_figures.sh's hop.txt: wall p50 and CPU per call (all
parties) for each mode, payload and spin, and each mode's ratio to this build's thread worker
(what a call through the ring to a child costs over the same call on a worker thread)."""
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+)\s+bytes\s+(\d+) spin\s+(\d+) us.*p50\s+([\d.]+).*total\s+([\d.]+)", line)
    if m:
        rows.setdefault((m[2], m[3], m[1]), []).append((float(m[4]), float(m[5])))
rounds = len(next(iter(rows.values())))
print(f"{'bytes':>6} {'spin':>4} {'mode':10} {'wall p50 us':>12} {'cpu us/call':>12} "
      f"{'wall/thread':>11} {'cpu/thread':>10}  (medians of {rounds} rounds)")
for (b, s, mode) in sorted(rows, key=lambda k: (int(k[0]), int(k[1]), k[2])):
    v = rows[(b, s, mode)]
    wall, cpu = statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)
    thread = rows.get((b, s, "thread"))
    tw = statistics.median(x[0] for x in thread) if thread else float("nan")
    tc = statistics.median(x[1] for x in thread) if thread else float("nan")
    print(f"{b:>6} {s:>4} {mode:10} {wall:12.1f} {cpu:12.1f} {wall / tw:11.2f} {cpu / tc:10.2f}")
