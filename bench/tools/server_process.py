"""One knit-server under a benchmark: start it pinned to a CPU on a free loopback port, read its
CPU time and knit-stats, stop it. Shared by server_ab.py, retry_flood_ab.py and cheap_burst.py
(a module, not a command: `import server_process`).

A case is LABEL=BINARY[,VAR=value...]: a label for the report, the knit-server binary, and the
environment it runs with (parse_case). Every process is started here and stopped by its PID.

AB_NICE=-10 in the environment (set_priority_from_env) gives the calling session's scheduler
autogroup that nice value (root only; /proc/self/autogroup). With autogroups on
(sched_autogroup_enabled), a per-process nice works only inside a session, and a machine busy
with other sessions' builds left the server 0.02-0.5 of its CPU, varying from run to run: rps
then compared shares, not servers. Where autogroups are off, a plain nice for both server and
client. The autogroup is the whole session's, so the old value is put back at exit.
"""
import atexit
import json
import os
import signal
import socket
import subprocess
import time

# Prefix of every command started here (["nice", "-n", N] when AB_NICE applies per process).
NICE = []

# The reference request bodies of the /ssr and /jwt routes (the bench plans' bodies).
BODIES = {
    "ssr": '{"name":"Ari","plan":"pro","bio":"Building on Knitting","projects":17}',
    "jwt": '{"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900}',
}


def set_priority_from_env():
    """Applies AB_NICE (see the module's comment); a no-op without it."""
    nice = os.environ.get("AB_NICE")
    if not nice:
        return
    try:
        with open("/proc/self/autogroup") as f:
            old = f.read().split()[-1]
        with open("/proc/self/autogroup", "w") as f:
            f.write(nice)
        atexit.register(lambda: open("/proc/self/autogroup", "w").write(old))
    except OSError:
        NICE[:] = ["nice", "-n", nice]


def autogroup():
    """This session's autogroup line, for a run's header."""
    try:
        with open("/proc/self/autogroup") as f:
            return f.read().strip()
    except OSError:
        return "n/a"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_ns(pid):
    """CPU time of every thread of PID so far (/proc/PID/task/*/schedstat), ns."""
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
    """LABEL=BINARY[,VAR=value...] -> {"label", "binary", "env"}."""
    label, rest = text.split("=", 1)
    parts = rest.split(",")
    env = dict(p.split("=", 1) for p in parts[1:])
    return {"label": label, "binary": parts[0], "env": env}


def start_server(case, log_path, cpu="0"):
    """Starts the case's server on CPU `cpu` (taskset), its output to log_path; waits for its
    "listening on" line (10 s at most). Returns (process, port, open log file)."""
    port = free_port()
    env = {"PATH": os.environ["PATH"], "HOST": "127.0.0.1", "PORT": str(port), "JWT_SECRET": "x"}
    env.update(case["env"])
    log = open(log_path, "w")
    proc = subprocess.Popen(NICE + ["taskset", "-c", cpu, case["binary"]], env=env, stdout=log,
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
    """Sends SIGUSR1 and returns the knit-stats line it prints, parsed (None after 5 s)."""
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
