#!/usr/bin/env python3
"""Interleaved A/B runs of knit-server builds (or settings) under knit-load, for ratios on a
noisy machine.

  bench/tools/server_ab.py --out DIR --reps N --window S [--warmup S] [--load KNIT_LOAD]
        --case LABEL=BINARY[,VAR=value...] (repeatable: a build and its environment)
        --route NAME:METHOD:PATH:CONNS[:RATE[:ssr|jwt]] (repeatable; knit-load's --route, the
                last field naming a reference body instead of a file)

Each repetition runs every case once, in an order rotated by one per repetition (case i goes
first in repetition i), so a slow spell on the machine does not land on one case only. Each
run: a fresh server on CPU 0 (taskset), `--warmup` s of the same load (not counted), then a
`--window` s knit-load run on CPU 1 with the server's CPU time (/proc/PID/task/*/schedstat)
read around it, then one SIGUSR1 knit-stats line and SIGTERM. One JSON row per run goes to
DIR/rows.jsonl (rps, 2xx/s, server cores, CPU-us per response, per-route p50/p99, knit-stats),
the load's JSON and the server's log to DIR/logs/. Loopback only, a free port per run.
AB_NICE=-10 (root) gives the run the CPU first on a shared machine (server_process.py).
Ratios per repetition: bench/tools/server_ab_ratios.py DIR/rows.jsonl A:B.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_process as sp  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def route_args(routes, bodies_dir):
    out = []
    for r in routes:
        f = r.split(":")
        if len(f) == 6:
            path = os.path.join(bodies_dir, f[5] + ".json")
            f[5] = path
        out += ["--route", ":".join(f)]
    return out


def run_load(args, port, duration, json_path, routes):
    cmd = sp.NICE + ["taskset", "-c", "1", args.load, "--port", str(port), "--duration",
                     str(duration), "--json", json_path] + routes
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   timeout=duration + 60)
    with open(json_path) as f:
        return json.load(f)


def one_run(args, case, rep, seq, routes):
    tag = f"{seq:03d}-{case['label']}-r{rep}"
    log_path = os.path.join(args.out, "logs", tag + ".server.log")
    proc, port, log = sp.start_server(case, log_path)
    try:
        if args.warmup > 0:
            run_load(args, port, args.warmup, os.path.join(args.out, "logs", tag + ".warm.json"),
                     routes)
        t0, c0 = time.monotonic(), sp.cpu_ns(proc.pid)
        load = run_load(args, port, args.window, os.path.join(args.out, "logs", tag + ".load.json"),
                        routes)
        t1, c1 = time.monotonic(), sp.cpu_ns(proc.pid)
        stats = sp.knit_stats(proc, log_path)
    finally:
        sp.stop_server(proc, log)
    per_route = {}
    total_ok = 0
    total = 0
    for name, r in load["routes"].items():
        codes = r["statusCodeDistribution"]
        ok = sum(v for k, v in codes.items() if k.startswith("2"))
        n = sum(codes.values())
        total_ok += ok
        total += n
        per_route[name] = {"responses": n, "ok": ok, "codes": codes,
                           "p50_ms": r["latencyPercentiles"]["p50"] * 1e3,
                           "p99_ms": r["latencyPercentiles"]["p99"] * 1e3}
    dur = load["duration_s"]
    row = {"label": case["label"], "rep": rep, "seq": seq, "binary": case["binary"],
           "env": case["env"], "window_s": dur, "rps": total / dur, "ok_rps": total_ok / dur,
           "server_cores": (c1 - c0) / 1e9 / (t1 - t0),
           "cpu_us_per_resp": (c1 - c0) / 1e3 / max(total, 1), "routes": per_route,
           "knit_stats": stats, "loadavg": sp.loadavg()}
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--window", type=float, default=4)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--load", default=os.path.join(REPO, "build", "bin", "knit-load"),
                    help="the knit-load binary (default: this tree's build/bin/knit-load)")
    ap.add_argument("--case", action="append", required=True)
    ap.add_argument("--route", action="append", required=True)
    args = ap.parse_args()
    sp.set_priority_from_env()
    cases = [sp.parse_case(c) for c in args.case]
    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    bodies = os.path.join(args.out, "logs", "bodies")
    os.makedirs(bodies, exist_ok=True)
    for name, body in sp.BODIES.items():
        with open(os.path.join(bodies, name + ".json"), "w") as f:
            f.write(body)
    routes = route_args(args.route, bodies)
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} loadavg {sp.loadavg()}; "
          f"server CPU 0, knit-load CPU 1; {args.reps} reps x {len(cases)} cases, "
          f"warm-up {args.warmup} s, window {args.window} s, "
          f"autogroup {sp.autogroup()}, nice {sp.NICE[2:] or 0}",
          flush=True)
    seq = 0
    with open(os.path.join(args.out, "rows.jsonl"), "a") as rows:
        for rep in range(args.reps):
            k = rep % len(cases)
            for case in cases[k:] + cases[:k]:
                row = one_run(args, case, rep, seq, routes)
                seq += 1
                rows.write(json.dumps(row) + "\n")
                rows.flush()
                extra = ""
                if row["knit_stats"] and "auto" in row["knit_stats"]:
                    extra = " auto " + json.dumps(row["knit_stats"]["auto"])
                print(f"rep {rep} {case['label']:>14}: {row['rps']:9.0f} rps "
                      f"({row['ok_rps']:8.0f} 2xx/s), {row['server_cores']:.2f} server cores, "
                      f"{row['cpu_us_per_resp']:.2f} CPU-us/resp, load {row['loadavg']}{extra}",
                      flush=True)
    print(f"# end {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} loadavg {sp.loadavg()}")


if __name__ == "__main__":
    sys.exit(main())
