#!/usr/bin/env python3
"""The retry flood (1 worker, /ssr at 2 ms, CONNS connections re-sending at once after each 503)
against several knit-server builds, interleaved; the accepted responses timed by
retry_flood_client.py, the server's own view from knit-stats and (where it has one) /metrics.

  bench/tools/retry_flood_ab.py --out DIR --reps N --seconds S --conns C
        --case LABEL=BINARY[,VAR=value...] (repeatable)

A case's KNIT_PRIME=N is not passed to the server: it sends N /ssr calls one at a time first,
so that admission has a call-time estimate before the flood's first burst.

Server: KNIT_MODE=pooled KNIT_THREADS=1 KNIT_COST_PROFILE=native KNIT_SSR_COST_US=2000,
admission at its defaults (KNIT_MAX_QUEUE_MS=250), on CPU 0; the client on CPU 1. AB_NICE as
in server_process.py. One JSON row per run in DIR/rows.jsonl, the client's JSON and the
server's log in DIR/logs/; one line per run on stdout.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_process as sp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PRIME_BODY = sp.BODIES["ssr"].encode()
SERVER_ENV = {"KNIT_MODE": "pooled", "KNIT_THREADS": "1", "KNIT_COST_PROFILE": "native",
              "KNIT_SSR_COST_US": "2000"}


def ssr_histogram(port):
    """/ssr's latency histogram from /metrics: {le: cumulative count}, or None (no /metrics)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            if r.status != 200:
                return None
            text = r.read().decode()
    except Exception:
        return None
    buckets = {}
    for line in text.splitlines():
        if line.startswith("knit_http_request_duration_seconds_bucket") and 'route="ssr"' in line:
            le = line.split('le="')[1].split('"')[0]
            buckets[le] = float(line.rsplit(" ", 1)[1])
    return buckets or None


def histogram_delta(before, after):
    if not before or not after:
        return None
    return {le: after[le] - before.get(le, 0) for le in after}


def accepted_tail(delta, accepted):
    """How many of the server's /ssr responses took longer than each bound, next to the
    number accepted: every response above 2.5 ms is an accepted one (a 503 is answered on
    the event loop in microseconds; an accepted call runs 2 ms)."""
    if not delta:
        return None
    total = delta["+Inf"]
    return {le: int(total - c) for le, c in delta.items() if le in ("0.1", "0.25", "0.5", "1")}


def one_run(args, case, rep, seq):
    tag = f"{seq:03d}-{case['label']}-r{rep}"
    log_path = os.path.join(args.out, "logs", tag + ".server.log")
    env_case = dict(case)
    env_case["env"] = {**SERVER_ENV, **case["env"]}
    proc, port, log = sp.start_server(env_case, log_path)
    try:
        # --prime N: N calls one at a time before the flood, so that admission has a call-time
        # estimate when the flood's first burst arrives.
        for _ in range(case.get("prime", 0)):
            req = urllib.request.Request(f"http://127.0.0.1:{port}/ssr", data=PRIME_BODY,
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=5) as r:
                r.read()
        stats0 = sp.knit_stats(proc, log_path)
        hist0 = ssr_histogram(port)
        c0, t0 = sp.cpu_ns(proc.pid), time.monotonic()
        out_json = os.path.join(args.out, "logs", tag + ".client.json")
        subprocess.run(sp.NICE + ["taskset", "-c", "1", sys.executable,
                                  os.path.join(HERE, "retry_flood_client.py"), str(port),
                                  str(args.seconds), str(args.conns), out_json],
                       check=True, timeout=args.seconds + 60)
        c1, t1 = sp.cpu_ns(proc.pid), time.monotonic()
        hist1 = ssr_histogram(port)
        stats1 = sp.knit_stats(proc, log_path)
    finally:
        sp.stop_server(proc, log)
    with open(out_json) as f:
        client = json.load(f)
    rejected = None
    if stats0 and stats1:
        rejected = {k: stats1["rejected"][k] - stats0["rejected"].get(k, 0)
                    for k in stats1["rejected"]}
    delta = histogram_delta(hist0, hist1)
    return {"label": case["label"], "rep": rep, "seq": seq, "binary": case["binary"],
            "env": env_case["env"], "client": client, "server_cores": (c1 - c0) / 1e9 / (t1 - t0),
            "rejected": rejected, "ssr_histogram_delta": delta,
            "server_responses_over": accepted_tail(delta, client["codes"].get("200", 0)),
            "pool_end": stats1.get("pool") if stats1 else None, "loadavg": sp.loadavg()}


def ms(percentiles, which):
    """A percentile of the client's, or n/a where it had no response to measure (a run no
    longer than the client's warm-up has none after it)."""
    return "n/a" if percentiles is None else f"{percentiles[which + '_ms']:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--conns", type=int, default=300)
    ap.add_argument("--case", action="append", required=True)
    args = ap.parse_args()
    sp.set_priority_from_env()
    cases = [sp.parse_case(c) for c in args.case]
    for c in cases:  # KNIT_PRIME=N in a case's list: --prime for that case (not a server var)
        c["prime"] = int(c["env"].pop("KNIT_PRIME", "0"))
    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} loadavg {sp.loadavg()}; "
          f"server CPU 0 ({SERVER_ENV}), retry_flood_client.py CPU 1, {args.conns} connections, "
          f"{args.seconds} s per run, {args.reps} reps x {len(cases)} cases, autogroup "
          f"{sp.autogroup()}", flush=True)
    seq = 0
    with open(os.path.join(args.out, "rows.jsonl"), "a") as rows:
        for rep in range(args.reps):
            k = rep % len(cases)
            for case in cases[k:] + cases[:k]:
                row = one_run(args, case, rep, seq)
                seq += 1
                rows.write(json.dumps(row) + "\n")
                rows.flush()
                c = row["client"]
                tot, srv, lag = (c["accepted_read_minus_send"], c["accepted_arrive_minus_send"],
                                 c["accepted_read_minus_arrive"])
                wt, ws = (c["accepted_after_warmup_read_minus_send"],
                          c["accepted_after_warmup_arrive_minus_send"])
                print(f"rep {rep} {case['label']:>10}: codes {c['codes']} errors {c['errors']}, "
                      f"{c['accepted_per_s']:.0f}/s accepted, {c['responses_per_s']:.0f}/s in all; "
                      f"accepted p50/p99/max ms: client {ms(tot, 'p50')}/{ms(tot, 'p99')}/"
                      f"{ms(tot, 'max')}, kernel arrival {ms(srv, 'p50')}/{ms(srv, 'p99')}/"
                      f"{ms(srv, 'max')}, client read lag p99 {ms(lag, 'p99')}; after the first "
                      f"{c['warmup_s']} s: client p99 {ms(wt, 'p99')}, kernel arrival p99 "
                      f"{ms(ws, 'p99')} (n {ws['n'] if ws else 0}); server "
                      f"responses over 0.1/0.25/0.5/1 s: {row['server_responses_over']}; "
                      f"refused by reason {row['rejected']}; "
                      f"server cores {row['server_cores']:.2f}; load {row['loadavg']}", flush=True)
    print(f"# end {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} loadavg {sp.loadavg()}")


if __name__ == "__main__":
    sys.exit(main())
