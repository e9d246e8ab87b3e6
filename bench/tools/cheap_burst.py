#!/usr/bin/env python3
"""A real burst of cheap calls on a cold server: CONNS connections each send one POST /ssr at
once (1 worker, /ssr at COST_US), and the answers are counted by status. What the queue-wait
deadline must not do is refuse them (a cap on the calls ahead of a cold server would answer
503 to all but one). Builds interleaved, each server fresh (cold) for every burst.

  bench/tools/cheap_burst.py --reps N --conns C --cost-us U [--logs DIR]
        --case LABEL=BINARY[,VAR=value...] (repeatable)

Server on CPU 0, this client on CPU 1 (AB_NICE as in server_process.py). One line per burst:
the answers by status, when the last came, the server's refusals by reason (knit-stats).
"""
import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_process as sp  # noqa: E402


def burst(port, conns):
    body = sp.BODIES["ssr"].encode()
    req = (b"POST /ssr HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    socks = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(conns)]
    t0 = time.monotonic()
    for s in socks:  # all requests in the kernel before the first answer is read
        s.sendall(req)
    codes, slowest = {}, 0.0
    for s in socks:
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        code = data.split(b" ", 2)[1].decode() if data else "closed"
        codes[code] = codes.get(code, 0) + 1
        slowest = max(slowest, time.monotonic() - t0)
        s.close()
    return codes, slowest


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--conns", type=int, default=300)
    ap.add_argument("--cost-us", default="50")
    ap.add_argument("--case", action="append", required=True)
    ap.add_argument("--logs", default="/tmp/cheap_burst_logs")
    args = ap.parse_args()
    sp.set_priority_from_env()
    os.makedirs(args.logs, exist_ok=True)
    cases = [sp.parse_case(c) for c in args.case]
    env = {"KNIT_MODE": "pooled", "KNIT_THREADS": "1", "KNIT_COST_PROFILE": "native",
           "KNIT_SSR_COST_US": args.cost_us}
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} loadavg {sp.loadavg()}; "
          f"server CPU 0 ({env}), client CPU 1, {args.conns} connections x 1 request, "
          f"{args.reps} reps x {len(cases)} cases", flush=True)
    for rep in range(args.reps):
        k = rep % len(cases)
        for case in cases[k:] + cases[:k]:
            c = dict(case)
            c["env"] = {**env, **case["env"]}
            log_path = os.path.join(args.logs, f"{case['label']}-r{rep}.log")
            proc, port, log = sp.start_server(c, log_path)
            try:
                codes, slowest = burst(port, args.conns)
                stats = sp.knit_stats(proc, log_path)
            finally:
                sp.stop_server(proc, log)
            rejected = stats["rejected"] if stats else None
            print(f"rep {rep} {case['label']:>10}: codes {codes}, last answer after "
                  f"{slowest * 1000:.0f} ms; refused by reason {rejected}", flush=True)
    print(f"# end {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} loadavg {sp.loadavg()}")


if __name__ == "__main__":
    sys.exit(main())
