#!/usr/bin/env python3
"""p50 per row of knit-process-bench, this build against the peer's, over their runs.

usage: round_trip_summary.py DIR   (DIR holds round-trip-this-runN.txt, round-trip-peer-runN.txt)
"""
import glob, re, statistics, sys

def rows(path):
    out = {}
    for line in open(path):
        m = re.match(r"(.+?)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", line.strip())
        if m:
            out[(m.group(1).strip(), int(m.group(2)))] = (float(m.group(3)), float(m.group(6)))
    return out

d = sys.argv[1]
runs = {who: [rows(p) for p in sorted(glob.glob(f"{d}/round-trip-{who}-run*.txt"))]
        for who in ("this", "peer")}
print(f"{'row':46s} {'bytes':>6s}  p50 us this (runs) | peer (runs)   median this/peer"
      "   host cpu us this | peer (median)")
for key in runs["this"][0]:
    t = [r[key][0] for r in runs["this"] if key in r]
    p = [r[key][0] for r in runs["peer"] if key in r]
    tc = statistics.median(r[key][1] for r in runs["this"] if key in r)
    pc = statistics.median(r[key][1] for r in runs["peer"] if key in r)
    ratio = statistics.median(t) / statistics.median(p)
    print(f"{key[0]:46s} {key[1]:6d}  {' / '.join(f'{x:.1f}' for x in t):>20s} | "
          f"{' / '.join(f'{x:.1f}' for x in p):20s} {ratio:6.2f}   {tc:6.2f} | {pc:6.2f}")
