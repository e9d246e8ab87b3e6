#!/usr/bin/env python3
"""Ratios from a server_ab.py rows.jsonl: each case's medians (rps, CPU-us per response, server
cores; for KNIT_MODE=auto, the share of heavy calls on the pool per run), then per repetition
case B over case A (same repetition, so the same spell of machine load) for rps and CPU-us per
response, with their median.

  bench/tools/server_ab_ratios.py ROWS_JSONL [A_LABEL:B_LABEL ...]
"""
import argparse
import json
import statistics


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rows", help="rows.jsonl written by server_ab.py")
    ap.add_argument("pairs", nargs="*", help="A_LABEL:B_LABEL, ratios B / A per repetition")
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(args.rows)]
    by = {(r["label"], r["rep"]): r for r in rows}
    labels = sorted({r["label"] for r in rows})
    print("case: median rps, median CPU-us/resp, median server cores (reps)")
    for label in labels:
        rs = [r for r in rows if r["label"] == label]
        line = (f"  {label}: {statistics.median(r['rps'] for r in rs):.0f} rps, "
                f"{statistics.median(r['cpu_us_per_resp'] for r in rs):.2f} CPU-us/resp, "
                f"{statistics.median(r['server_cores'] for r in rs):.2f} cores ({len(rs)})")
        autos = [r["knit_stats"]["auto"] for r in rs if r.get("knit_stats") and
                 r["knit_stats"].get("auto")]
        if autos:
            shares = []
            for a in autos:
                pooled = sum(a[k]["pooled"] for k in ("ssr", "jwt"))
                total = pooled + sum(a[k]["inline"] for k in ("ssr", "jwt"))
                shares.append(pooled / max(total, 1))
            line += " heavy calls on the pool: " + ", ".join(f"{s:.0%}" for s in shares)
        print(line)
    for pair in args.pairs:
        a, b = pair.split(":")
        rps, cpu = [], []
        for rep in sorted({r["rep"] for r in rows}):
            if (a, rep) in by and (b, rep) in by:
                rps.append(by[(b, rep)]["rps"] / by[(a, rep)]["rps"])
                cpu.append(by[(b, rep)]["cpu_us_per_resp"] / by[(a, rep)]["cpu_us_per_resp"])
        if not rps:
            continue
        print(f"{b} / {a}: rps {' '.join(f'{x:.2f}' for x in rps)} (median "
              f"{statistics.median(rps):.2f}); CPU-us/resp {' '.join(f'{x:.2f}' for x in cpu)} "
              f"(median {statistics.median(cpu):.2f})")


if __name__ == "__main__":
    main()
