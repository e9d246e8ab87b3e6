#!/usr/bin/env python3
"""knit-bench end to end against the real knit-server and knit-load (driver_test uses fakes).

usage: real_server_test.py KNIT_BENCH KNIT_SERVER KNIT_LOAD          exit 0 pass, 1 fail

Runs a two-case plan (inline and pooled with one worker, saturating, bun profile; 1 s windows,
about 4 s in all) through `knit-bench run` and checks what it wrote, never how fast:
  - knit-bench exits 0 with one row per case, in plan order;
  - each row names its case (tag, mode, server_mode) and the server agrees (reported_mode,
    reported_hosts);
  - every route (ping, ssr, jwt) has rps > 0 and a success rate of 1.0, and the server's own
    count of the window's requests (server_requests, from knit-stats) is at least the
    successes knit-load counted, per route;
  - knit-load's JSON for each window has 0 errors, 0 timeouts and 0 non-2xx responses;
  - the pooled row's heavy calls went through the pool (pool_counters: calls completed > 0),
    the inline row has no pool;
  - meta.json and report.md are written.

The binaries are copied into a scratch directory first: knit-bench refuses to start while a
process runs from its --server or --load path (a stray from a crashed run), and under
`ctest -j` the server tests run build/bin/knit-server at the same time. The copies are the
same programs. The port is one the kernel hands out for a bind to port 0.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

# Admission control off in the pooled case (KNIT_MAX_QUEUE_MS=0, which also lifts the
# not-started deadline): a worker descheduled on a busy machine must not turn a heavy
# request into a 503, since this test wants every answer a 200.
PLAN = [
    {"tag": "inline", "mode": "sat", "server_mode": "inline", "cost_profile": "bun"},
    {"tag": "t1", "mode": "sat", "server_mode": "pooled", "threads": 1, "cost_profile": "bun",
     "env": {"KNIT_MAX_QUEUE_MS": "0"}},
]
ROUTES = ("ping", "ssr", "jwt")

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_summaries(out, row_number, case):
    """knit-load's per-route summaries of the case's measured window."""
    name = "%03d-%s-%s-%s-r0.load.json" % (row_number, case["tag"], case["mode"],
                                           case["cost_profile"])
    path = os.path.join(out, "logs", name)
    if not os.path.exists(path):
        check(False, "knit-load's JSON %s exists" % path)
        return {}
    with open(path) as f:
        doc = json.load(f)
    return {route: r["summary"] for route, r in doc.get("routes", {}).items()}


def check_row(row, case, summaries):
    name = case["tag"]
    for key in ("tag", "mode", "server_mode"):
        check(row.get(key) == case[key], "%s: %s is %r" % (name, key, case[key]))
    check(row.get("reported_mode") == case["server_mode"],
          "%s: knit-stats reports mode %r (got %r)" % (name, case["server_mode"],
                                                       row.get("reported_mode")))
    check(row.get("reported_hosts") == 1, "%s: knit-stats reports 1 host" % name)
    check(row.get("total_rps", 0) > 0, "%s: total_rps %s > 0" % (name, row.get("total_rps")))
    routes = row.get("routes", {})
    served = row.get("server_requests") or {}
    for route in ROUTES:
        r = routes.get(route)
        if r is None:
            check(False, "%s: route %s in the row" % (name, route))
            continue
        check(r.get("rps", 0) > 0, "%s: %s rps %s > 0" % (name, route, r.get("rps")))
        check(r.get("ok") == 1.0, "%s: %s success rate %s == 1.0" % (name, route, r.get("ok")))
        s = summaries.get(route, {})
        for field in ("errors", "timeouts", "non2xx"):
            check(s.get(field) == 0,
                  "%s: %s knit-load %s %s == 0" % (name, route, field, s.get(field)))
        successes = s.get("successes", 0)
        check(successes > 0, "%s: %s knit-load successes %s > 0" % (name, route, successes))
        check(served.get(route, 0) >= successes,
              "%s: %s server counted %s >= knit-load's %s successes" %
              (name, route, served.get(route), successes))
    pool = row.get("pool_counters")
    if case["server_mode"] == "pooled":
        completed = (pool or {}).get("calls_completed", 0)
        check(completed > 0, "%s: pool calls_completed %s > 0" % (name, completed))
    else:
        check(not pool, "%s: no pool counters (inline)" % name)


def main():
    if len(sys.argv) != 4:
        print(__doc__.split("\n\n")[1])
        return 2
    bench, server, load = sys.argv[1:4]
    scratch = tempfile.mkdtemp(prefix="knit-bench-real-")
    keep = False
    try:
        for exe in (server, load):
            shutil.copy2(exe, scratch)
        plan_path = os.path.join(scratch, "plan.json")
        with open(plan_path, "w") as f:
            json.dump(PLAN, f)
        out = os.path.join(scratch, "out")
        cmd = [bench, "run", "--plan", plan_path, "--out", out, "--repeat", "1",
               "--idle", "0.2", "--warmup", "0.3", "--duration", "1", "--conns", "2",
               "--server", os.path.join(scratch, os.path.basename(server)),
               "--load", os.path.join(scratch, os.path.basename(load)),
               "--port", str(free_port()), "--lock", os.path.join(scratch, "lock"),
               "--no-charts", "--foreign-retries", "0"]
        print("$ " + " ".join(cmd), flush=True)
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=60)
        print(run.stdout)
        check(run.returncode == 0, "knit-bench exited %d (0 expected)" % run.returncode)

        rows_path = os.path.join(out, "rows.jsonl")
        rows = []
        if os.path.exists(rows_path):
            with open(rows_path) as f:
                rows = [json.loads(line) for line in f if line.strip()]
        check(len(rows) == len(PLAN), "%d rows for %d cases" % (len(rows), len(PLAN)))
        for number, (row, case) in enumerate(zip(rows, PLAN), start=1):
            check_row(row, case, load_summaries(out, number, case))
        for name in ("meta.json", "report.md"):
            path = os.path.join(out, name)
            check(os.path.exists(path) and os.path.getsize(path) > 0, name + " written")
        keep = bool(failures)
    finally:
        if keep:
            print("kept for inspection: " + scratch)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        print("real_server_test: %d check(s) failed" % len(failures))
        return 1
    print("real_server_test: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
