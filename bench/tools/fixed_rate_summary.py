#!/usr/bin/env python3
"""The seed's fixed-rate table from a server_ab.py rows.jsonl (fixed_rate_table.sh): per case,
medians over its repetitions of the total rate, the server's cores and CPU-us per response,
and per route the rate answered 2xx, p50 and p99 (ms) and the share answered 2xx.

  fixed_rate_summary.py ROWS_JSONL
"""
import json
import statistics
import sys


def main():
    rows = [json.loads(line) for line in open(sys.argv[1])]
    routes = list(rows[0]["routes"])
    head = "| case | runs | total rps | server cores | CPU-us/resp |"
    rule = "|---|---|---|---|---|"
    for r in routes:
        head += f" /{r} rps | p50 | p99 | 2xx |"
        rule += "---|---|---|---|"
    print(head)
    print(rule)
    for label in dict.fromkeys(r["label"] for r in rows):
        mine = [r for r in rows if r["label"] == label]

        def med(f):
            return statistics.median(f(r) for r in mine)
        line = (f"| {label} | {len(mine)} | {med(lambda r: r['rps']):.0f} | "
                f"{med(lambda r: r['server_cores']):.2f} | "
                f"{med(lambda r: r['cpu_us_per_resp']):.1f} |")
        for name in routes:
            line += (f" {med(lambda r: r['routes'][name]['ok'] / r['window_s']):.0f} |"
                     f" {med(lambda r: r['routes'][name]['p50_ms']):.2f} |"
                     f" {med(lambda r: r['routes'][name]['p99_ms']):.2f} |"
                     f" {med(lambda r: r['routes'][name]['ok'] / max(r['routes'][name]['responses'], 1)):.3f} |")
        print(line)


if __name__ == "__main__":
    main()
