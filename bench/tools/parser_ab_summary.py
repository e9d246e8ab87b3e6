#!/usr/bin/env python3
"""Per-round ratios new / old of knit-load's rps and CPU per response from the output of
bench/load/parser_ab.sh (rounds interleave old, new, so each pair ran close in time): median
and min-max, one line per file.

  bench/tools/parser_ab_summary.py PARSER_AB_OUTPUT...
"""
import statistics
import sys

if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if len(sys.argv) > 1 else 2)
for path in sys.argv[1:]:
    rows = {}
    for line in open(path):
        f = line.split()
        if len(f) == 5 and f[1] in ("old", "new"):
            rows.setdefault(f[0], {})[f[1]] = (float(f[2]), float(f[3]))
    rps = [r["new"][0] / r["old"][0] for r in rows.values()]
    cpu = [r["new"][1] / r["old"][1] for r in rows.values()]
    old = [r["old"][0] for r in rows.values()]
    new = [r["new"][0] for r in rows.values()]
    print("%s: %d rounds; rps old median %.0f (%.0f-%.0f), new median %.0f (%.0f-%.0f); "
          "new/old rps %.2fx (%.2f-%.2f); CPU-us/response new/old %.2fx (%.2f-%.2f)" % (
              path, len(rows), statistics.median(old), min(old), max(old), statistics.median(new),
              min(new), max(new), statistics.median(rps), min(rps), max(rps),
              statistics.median(cpu), min(cpu), max(cpu)))
