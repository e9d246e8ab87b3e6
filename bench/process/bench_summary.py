#!/usr/bin/env python3
"""Medians over ring_figures.sh's bench.txt: each knit-process-bench row's p50 and host CPU
per call for this build and, when ring_figures.sh was given one, the peer build."""
import re, statistics, sys
rows, who = {}, None
for line in open(sys.argv[1]):
    m = re.match(r"## rep \d+: (.*)", line)
    if m:
        who = m[1].split(" (")[0]
        continue
    m = re.match(r"(process .*?|thread .*?)\s{2,}(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
    if m and who:
        rows.setdefault((m[1].strip(), m[2]), {}).setdefault(who, []).append((float(m[3]), float(m[6])))
names = ["this build", "peer"]
print(f"{'row':48} {'bytes':>6}  " + "  ".join(f"{n[:17]:>17}" for n in names) + "   (p50 us / host cpu us, medians)")
for (row, b), d in rows.items():
    cells = []
    for n in names:
        v = d.get(n, [])
        cells.append(f"{statistics.median(x[0] for x in v):8.1f}/{statistics.median(x[1] for x in v):<8.2f}" if v else " " * 17)
    print(f"{row:48} {b:>6}  " + "  ".join(cells))
