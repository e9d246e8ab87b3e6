#!/usr/bin/env python3
"""Interleaved A/B runs of knit-server builds under knit-load, for ratios on a noisy machine.

  ab.py --out DIR --reps N --window S [--warmup S] [--load knit-load]
        --case LABEL=BINARY[,VAR=value...] (repeatable)
        --route NAME:METHOD:PATH:CONNS[:RATE[:ssr|jwt]] (repeatable; the last field names a body)

Each repetition runs every case once, in an order rotated by one per repetition (case i goes
first in repetition i), so a slow spell on the machine does not land on one case only. Each
run: a fresh server on CPU 0 (taskset), `--warmup` s of the same load (not counted), then a
`--window` s knit-load run on CPU 1 with the server's CPU time (/proc/PID/task/*/schedstat)
read around it, then one SIGUSR1 knit-stats line and SIGTERM. One JSON row per run goes to
DIR/rows.jsonl, the load's JSON and the server's log to DIR/logs/. Loopback only, a free port
per run; every process is started here and stopped by its PID.
"""
import argparse
import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import time

# AB_NICE=-10 gives this run's scheduler autogroup (its session: the server and knit-load) that
# nice value (root only; /proc/self/autogroup). With autogroups on (sched_autogroup_enabled),
# a per-process nice works only inside a session, and a machine busy with other sessions'
# builds left the server 0.02-0.5 of its CPU, varying from run to run: rps then compared shares,
# not servers. Stock Linux: a plain nice value for both, when autogroups are off.
# The autogroup is the whole session's, so the old value is put back at exit.
NICE = []
if os.environ.get("AB_NICE"):
    try:
        with open("/proc/self/autogroup") as f:
            _old_nice = f.read().split()[-1]
        with open("/proc/self/autogroup", "w") as f:
            f.write(os.environ["AB_NICE"])
        atexit.register(lambda: open("/proc/self/autogroup", "w").write(_old_nice))
    except OSError:
        NICE = ["nice", "-n", os.environ["AB_NICE"]]

BODIES = {
    "ssr": '{"name":"Ari","plan":"pro","bio":"Building on Knitting","projects":17}',
    "jwt": '{"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900}',
}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_ns(pid):
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # a thread that ended between listdir and open
    return total


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def parse_case(text):
    label, rest = text.split("=", 1)
    parts = rest.split(",")
    env = dict(p.split("=", 1) for p in parts[1:])
    return {"label": label, "binary": parts[0], "env": env}


def route_args(routes, bodies_dir):
    out = []
    for r in routes:
        f = r.split(":")
        if len(f) == 6:
            path = os.path.join(bodies_dir, f[5] + ".json")
            f[5] = path
        out += ["--route", ":".join(f)]
    return out


def start_server(case, log_path):
    port = free_port()
    env = {"PATH": os.environ["PATH"], "HOST": "127.0.0.1", "PORT": str(port), "JWT_SECRET": "x"}
    env.update(case["env"])
    log = open(log_path, "w")
    proc = subprocess.Popen(NICE + ["taskset", "-c", "0", case["binary"]], env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(log_path) as f:
            if any(line.startswith("listening on") for line in f):
                return proc, port, log
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise SystemExit(f"server {case['label']} did not start; log: {open(log_path).read()}")


def stop_server(proc, log):
    """SIGTERM (the server's drain), then SIGKILL if it is not gone in 15 s; closes its log."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()


def knit_stats(proc, log_path):
    with open(log_path) as f:
        before = sum(1 for line in f if line.startswith("knit-stats"))
    proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with open(log_path) as f:
            lines = [line for line in f if line.startswith("knit-stats")]
        if len(lines) > before:
            try:
                return json.loads(lines[-1][len("knit-stats "):])
            except ValueError:
                pass  # the line is being written
        time.sleep(0.05)
    return None


def run_load(args, port, duration, json_path, routes):
    cmd = NICE + ["taskset", "-c", "1", args.load, "--port", str(port), "--duration", str(duration),
           "--json", json_path] + routes
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   timeout=duration + 60)
    with open(json_path) as f:
        return json.load(f)


def one_run(args, case, rep, seq, routes):
    tag = f"{seq:03d}-{case['label']}-r{rep}"
    log_path = os.path.join(args.out, "logs", tag + ".server.log")
    proc, port, log = start_server(case, log_path)
    try:
        if args.warmup > 0:
            run_load(args, port, args.warmup, os.path.join(args.out, "logs", tag + ".warm.json"),
                     routes)
        t0, c0 = time.monotonic(), cpu_ns(proc.pid)
        load = run_load(args, port, args.window, os.path.join(args.out, "logs", tag + ".load.json"),
                        routes)
        t1, c1 = time.monotonic(), cpu_ns(proc.pid)
        stats = knit_stats(proc, log_path)
    finally:
        stop_server(proc, log)
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
           "knit_stats": stats, "loadavg": loadavg()}
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--window", type=float, default=4)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--load", default="/work/peer-58ff45c/knit-load")
    ap.add_argument("--case", action="append", required=True)
    ap.add_argument("--route", action="append", required=True)
    args = ap.parse_args()
    cases = [parse_case(c) for c in args.case]
    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    bodies = os.path.join(args.out, "logs", "bodies")
    os.makedirs(bodies, exist_ok=True)
    for name, body in BODIES.items():
        with open(os.path.join(bodies, name + ".json"), "w") as f:
            f.write(body)
    routes = route_args(args.route, bodies)
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} loadavg {loadavg()}; "
          f"server CPU 0, knit-load CPU 1; {args.reps} reps x {len(cases)} cases, "
          f"warm-up {args.warmup} s, window {args.window} s, "
          f"autogroup {open('/proc/self/autogroup').read().strip()}, nice {NICE[2:] or 0}",
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
    print(f"# end {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} loadavg {loadavg()}")


if __name__ == "__main__":
    sys.exit(main())
