#!/usr/bin/env python3
"""Medians per case of a heavy-share run (heavy_share.sh): /ping p99, heavy responses/s, and the heavy
routes' share of the server's CPU, estimated as ssr/s x ssr cost + jwt/s x jwt cost (the costs
from the server's banner line "cost profile: bun (ssr N us, jwt M us)"), over one CPU.

  heavy_share_summary.py OUT   (OUT holds heavy_share.sh's a-*/, b-*/, c-*/ directories)
"""
import glob
import json
import os
import re
import statistics
import sys


def costs(log_dir):
    for path in sorted(glob.glob(os.path.join(log_dir, "*.server.log"))):
        with open(path, errors="replace") as f:
            m = re.search(r"cost profile: \S+ \(ssr (\d+) us, jwt (\d+) us\)", f.read())
        if m:
            return int(m.group(1)), int(m.group(2))
    return None


def main():
    out = sys.argv[1]
    for part in sorted(glob.glob(os.path.join(out, "[abc]-*"))):
        rows = [json.loads(line) for line in open(os.path.join(part, "rows.jsonl"))]
        cost = costs(os.path.join(part, "logs"))
        print(f"{os.path.basename(part)} (medians of {len(rows)} runs; costs {cost} us)")
        for label in dict.fromkeys(r["label"] for r in rows):
            mine = [r for r in rows if r["label"] == label]
            p99 = statistics.median(r["routes"]["ping"]["p99_ms"] for r in mine)
            ping = statistics.median(r["routes"]["ping"]["ok"] / r["window_s"] for r in mine)
            line = f"  {label:>8}: /ping {ping:7.0f}/s p99 {p99:6.2f} ms"
            if "ssr" in mine[0]["routes"]:
                heavy = [(r["routes"]["ssr"]["ok"] + r["routes"]["jwt"]["ok"]) / r["window_s"]
                         for r in mine]
                line += f", heavy {statistics.median(heavy):6.0f}/s"
                if cost:
                    share = [100 * (r["routes"]["ssr"]["ok"] * cost[0] +
                                    r["routes"]["jwt"]["ok"] * cost[1]) / 1e6 / r["window_s"]
                             for r in mine]
                    line += f", heavy CPU share {statistics.median(share):4.1f}%"
            line += f", server cores {statistics.median(r['server_cores'] for r in mine):.2f}"
            print(line)


if __name__ == "__main__":
    main()
