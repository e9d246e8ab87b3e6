#!/usr/bin/env python3
"""knit-server's /metrics read by the real Prometheus tools (Debian package prometheus).

usage: prometheus_check.py promtool|scrape <path to knit-server>

promtool: start knit-server, send every route some traffic (200, 400, 404), fetch /metrics
  and run `promtool check metrics` on it: no error and no lint problem allowed.
scrape: start knit-server and a Prometheus server scraping it every second (its own config
  and TSDB in a temporary directory, its web port a free one on 127.0.0.1), send a steady
  known load (GET /ping at 100/s and POST /jwt at 10/s, one keep-alive connection each,
  paced on the clock) for 12 s, then ask Prometheus's HTTP API (/api/v1/query) for rate() of
  knit_http_requests_total and histogram_quantile() over
  knit_http_request_duration_seconds and check them against what was sent (see
  check_rates and check_quantiles for the bounds and why they cannot flake).

Exit 0: passed; 1: failed; 77: skipped (the tool is not on PATH; ctest's SKIP_RETURN_CODE).
No child outlives the script: each is started with PR_SET_PDEATHSIG=SIGKILL (it dies with
this process, even if this one is SIGKILLed by ctest's timeout) and killed by PID in a
finally block; SIGTERM and SIGINT unwind through that block.
"""
import ctypes
import http.client
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

SKIP = 77
PR_SET_PDEATHSIG = 1
JWT_BODY = b'{"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900}'
SSR_BODY = b'{"name":"Ari","plan":"pro","bio":"Building on Knitting","projects":17}'


class Failed(Exception):
    pass


def die_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def deadline_loop(seconds, what):
    """Yields until `seconds` pass, then raises Failed(what): every wait here is bounded."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        yield
        time.sleep(0.1)
    raise Failed(f"timed out after {seconds} s: {what}")


class children:
    """Processes this script started, killed by PID (never by name) on the way out."""

    def __init__(self):
        self.procs = []

    def start(self, argv, **kw):
        p = subprocess.Popen(argv, preexec_fn=die_with_parent, **kw)
        self.procs.append(p)
        return p

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


def start_knit(kids, server, work):
    out = open(os.path.join(work, "knit.out"), "w+")
    env = dict(os.environ, PORT="0", HOST="127.0.0.1", JWT_SECRET="prometheus-check",
               KNIT_THREADS="1")
    p = kids.start([server], stdout=out, stderr=subprocess.STDOUT, env=env)
    for _ in deadline_loop(15, "knit-server's 'listening on' line"):
        if p.poll() is not None:
            out.seek(0)
            raise Failed(f"knit-server exited {p.returncode}: {out.read()}")
        out.seek(0)
        for line in out.read().splitlines():
            if line.startswith("listening on http://127.0.0.1:"):
                return int(line.rsplit(":", 1)[1])


def request(conn, method, path, body=None):
    headers = {"content-type": "application/json"} if body is not None else {}
    conn.request(method, path, body=body, headers=headers)
    res = conn.getresponse()
    res.read()
    return res.status


def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", path)
        res = c.getresponse()
        return res.status, res.read().decode()
    finally:
        c.close()


def promtool(server):
    tool = shutil.which("promtool")
    if tool is None:
        print("SKIP: promtool is not on PATH (Debian package prometheus; ./knit deps installs it)")
        return SKIP
    kids = children()
    work = tempfile.mkdtemp(prefix="knit-promtool.")
    try:
        port = start_knit(kids, server, work)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        sent = [("GET", "/ping", None, 200), ("POST", "/ssr", SSR_BODY, 200),
                ("POST", "/jwt", JWT_BODY, 200), ("POST", "/jwt", b"not json", 400),
                ("GET", "/nope", None, 404), ("GET", "/livez", None, 200),
                ("GET", "/readyz", None, 200), ("GET", "/metrics", None, 200)]
        for method, path, body, want in sent * 3:
            got = request(c, method, path, body)
            if got != want:
                raise Failed(f"{method} {path}: {got}, expected {want}")
        c.close()
        status, page = get(port, "/metrics")
        if status != 200:
            raise Failed(f"/metrics answered {status}")
        r = subprocess.run([tool, "check", "metrics"], input=page, capture_output=True,
                           text=True, timeout=30)
        said = (r.stdout + r.stderr).strip()
        print(f"promtool check metrics: exit {r.returncode}, {len(page)} bytes, "
              f"{page.count(chr(10))} lines")
        if r.returncode != 0 or said:
            raise Failed(f"promtool check metrics exit {r.returncode}:\n{said}\n--- page:\n{page}")
        print("promtool: clean (no error, no lint problem)")
        return 0
    finally:
        kids.stop_all()
        shutil.rmtree(work, ignore_errors=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class prometheus_api:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def query(self, expr, at=None):
        """The instant vector `expr` at time `at` (now if None), as [(labels, value)]."""
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        url = f"{self.base}/api/v1/query?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as res:
            body = json.load(res)
        if body.get("status") != "success":
            raise Failed(f"query {expr}: {body}")
        data = body["data"]
        if data["resultType"] == "matrix":
            return [(r["metric"], [(float(t), float(v)) for t, v in r["values"]])
                    for r in data["result"]]
        return [(r["metric"], float(r["value"][1])) for r in data["result"]]

    def one(self, expr, at=None):
        got = self.query(expr, at)
        if len(got) != 1:
            raise Failed(f"query {expr} at {at}: {len(got)} series, expected 1: {got}")
        return got[0][1]

    def ready(self):
        try:
            with urllib.request.urlopen(f"{self.base}/-/ready", timeout=2) as res:
                return res.status == 200
        except OSError:
            return False


def start_prometheus(kids, work, knit_port):
    config = os.path.join(work, "prometheus.yml")
    with open(config, "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: knit
    static_configs:
      - targets: ['127.0.0.1:{knit_port}']
""")
    for attempt in range(3):  # a free port can be taken between the probe and the bind
        port = free_port()
        log = open(os.path.join(work, f"prometheus-{attempt}.log"), "w+")
        p = kids.start(["prometheus", f"--config.file={config}",
                        f"--storage.tsdb.path={os.path.join(work, f'tsdb-{attempt}')}",
                        f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                       stdout=log, stderr=subprocess.STDOUT)
        api = prometheus_api(port)
        for _ in deadline_loop(30, "Prometheus's /-/ready"):
            if p.poll() is not None:
                break
            if api.ready():
                return api
        log.seek(0)
        print(f"prometheus exited {p.returncode} (attempt {attempt}): {log.read()[-2000:]}")
    raise Failed("prometheus did not start")


class paced_client(threading.Thread):
    """One keep-alive connection sending `method path` at `rate` per second for `seconds`,
    each request sent at start + i / rate (or at once when late). Records each request's
    send and completion times (wall clock, as Prometheus stamps its samples)."""

    def __init__(self, port, method, path, body, rate, seconds, start):
        super().__init__(daemon=True)
        self.port, self.method, self.path, self.body = port, method, path, body
        self.rate, self.count, self.start_at = rate, int(rate * seconds), start
        self.sent, self.done, self.latency, self.error = [], [], [], None

    def run(self):
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            for i in range(self.count):
                wait = self.start_at + i / self.rate - time.time()
                if wait > 0:
                    time.sleep(wait)
                t0, m0 = time.time(), time.monotonic()
                status = request(c, self.method, self.path, self.body)
                m1, t1 = time.monotonic(), time.time()
                if status != 200:
                    raise Failed(f"{self.method} {self.path}: {status}")
                self.sent.append(t0)
                self.done.append(t1)
                self.latency.append(m1 - m0)
            c.close()
        except Exception as e:  # noqa: BLE001: reported by the main thread
            self.error = e


def parse_buckets(page, route):
    """le -> cumulative count of knit_http_request_duration_seconds for `route`, from a page."""
    out = {}
    prefix = f'knit_http_request_duration_seconds_bucket{{route="{route}",le="'
    for line in page.splitlines():
        if line.startswith(prefix):
            le, value = line[len(prefix):].split('"} ')
            out[math.inf if le == "+Inf" else float(le)] = float(value)
    return dict(sorted(out.items()))


def bucket_of_rank(buckets, rank):
    """(lower, upper) bounds of the bucket holding the rank-th smallest observation."""
    lower = 0.0
    for le, cumulative in buckets.items():
        if cumulative >= rank:
            return lower, le
        lower = le
    raise Failed(f"rank {rank} beyond the histogram {buckets}")


def quantile_of(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(math.ceil(q * len(s))) - 1)]


def whole_run_window(api, t_load):
    """Seconds back from now to just before the last sample scraped before the load began:
    a window that holds the whole run, from a sample at the warm-up value."""
    series = api.query('knit_http_requests_total{code="200"}[120s]', t_load)
    stamps = [max(t for t, _ in samples if t <= t_load) for _, samples in series if samples]
    if len(stamps) < 2:
        raise Failed(f"no sample of the /ping and /jwt counters before the load: {series}")
    return int(math.ceil(time.time() - min(stamps))) + 1


def check_rates(api, clients, t_load, t_end):
    ping, jwt = clients
    failures = []
    # 1. The whole run in one window. The window opens just before the last sample scraped
    # before the load (the counters at their warm-up value) and closes after Prometheus has
    # scraped the final value, so the increase between its first and last samples is exactly
    # what was sent. rate() extrapolates that increase from the samples' span to the window's
    # edges: by at most 1.1 scrape intervals at each end (Prometheus' rule), so rate x window
    # lies between the count sent and that count x window / span; we allow 25% (the span is
    # >= 13 s of a window at most ~2 s longer, plus at most 2.2 s of extrapolation: <= 17%).
    window = whole_run_window(api, t_load)
    now = time.time()
    for client, route in ((ping, "ping"), (jwt, "jwt")):
        n = len(client.sent)
        r = api.one(f'rate(knit_http_requests_total{{route="{route}",code="200"}}[{window}s])',
                    now)
        ok = n <= r * window + 1e-6 and r * window <= 1.25 * n
        print(f"rate over the run: {route}: {r:.2f}/s x {window} s = {r * window:.1f}, "
              f"sent {n}: {'ok' if ok else 'FAIL'}")
        if not ok:
            failures.append(f"{route}: rate x window {r * window:.1f} not in [{n}, {1.25 * n}]")
    # 2. The steady rate, mid-load: rate() over the 6 s ending at mid-load against what the
    # client sent in that window, with the window widened by 1 s on each side for the
    # samples' timing: a sample stamped t holds a count read between t and t + 1 s (the
    # scrape timeout), which is at least every request completed by t and at most every
    # request sent by t + 1 s. Extrapolation as above (x 1.25 up, / 1.25 down).
    width = 6
    mid = t_load + (t_end - t_load) / 2
    for client, route in ((ping, "ping"), (jwt, "jwt")):
        r = api.one(f'rate(knit_http_requests_total{{route="{route}",code="200"}}[{width}s])',
                    mid)
        low = sum(1 for t in client.done if mid - width + 1 <= t <= mid - 1) / width / 1.25
        high = sum(1 for t in client.sent if mid - width - 1 <= t <= mid + 1) / width * 1.25
        ok = low <= r <= high
        print(f"steady rate at mid-load: {route}: {r:.2f}/s, bounds from what was sent "
              f"[{low:.2f}, {high:.2f}] (sent at {client.rate}/s): {'ok' if ok else 'FAIL'}")
        if not ok:
            failures.append(f"{route}: mid-load rate {r:.2f} not in [{low:.2f}, {high:.2f}]")
    return failures


def check_quantiles(api, knit_port, ping, t_load):
    # Prometheus's quantile over the run must sit inside the bucket that holds that quantile
    # in knit's own histogram (read from /metrics directly: the same counts, so this checks
    # the scrape and the le labels), and at or below the first bound above the quantile the
    # client measured: each request's server-side time (read whole -> written) lies inside
    # its client-side time (sent -> answer read), and histogram_quantile interpolates inside
    # a bucket, never past its upper bound.
    failures = []
    status, page = get(knit_port, "/metrics")
    if status != 200:
        return [f"/metrics answered {status}"]
    buckets = parse_buckets(page, "ping")
    n = buckets[math.inf]
    bounds = [le for le in buckets if le != math.inf]
    window = whole_run_window(api, t_load)
    now = time.time()
    for q in (0.5, 0.9, 0.99):
        got = api.one("histogram_quantile(%s, rate(knit_http_request_duration_seconds_bucket"
                      '{route="ping"}[%ds]))' % (q, window), now)
        # The window's increase holds the n - 1 load pings, knit's counts the warm-up ping
        # too: the load's rank-r observation is knit's rank r or r + 1.
        lo, _ = bucket_of_rank(buckets, q * (n - 1))
        _, hi = bucket_of_rank(buckets, q * (n - 1) + 1)
        client_q = quantile_of(ping.latency, q)
        ceiling = min([b for b in bounds if b >= client_q], default=math.inf)
        ok = lo <= got <= hi and got <= ceiling
        print(f"histogram_quantile({q}) /ping: {got * 1e6:.1f} µs; knit's bucket "
              f"({lo * 1e6:g}, {hi * 1e6:g}] µs; client-side {client_q * 1e6:.0f} µs "
              f"(ceiling {ceiling * 1e6:g} µs): {'ok' if ok else 'FAIL'}")
        if not ok:
            failures.append(f"quantile {q}: {got} outside ({lo}, {hi}] or above {ceiling}")
    return failures


def scrape(server):
    if shutil.which("prometheus") is None:
        print("SKIP: prometheus is not on PATH (Debian package prometheus; ./knit deps installs it)")
        return SKIP
    kids = children()
    work = tempfile.mkdtemp(prefix="knit-prometheus.")
    try:
        knit_port = start_knit(kids, server, work)
        # One request per route first, so the request counters' series exist at their warm-up
        # value (1) before the load: the window's first samples are then a known base.
        c = http.client.HTTPConnection("127.0.0.1", knit_port, timeout=10)
        request(c, "GET", "/ping")
        request(c, "POST", "/jwt", JWT_BODY)
        c.close()
        api = start_prometheus(kids, work, knit_port)
        warm = 'count_over_time(knit_http_requests_total{route="ping",code="200"}[30s])'
        for _ in deadline_loop(20, "two scrapes of knit-server before the load"):
            got = api.query(warm)
            if got and got[0][1] >= 2:
                break
        load_seconds = 12
        t_load = time.time() + 0.2
        clients = (paced_client(knit_port, "GET", "/ping", None, 100, load_seconds, t_load),
                   paced_client(knit_port, "POST", "/jwt", JWT_BODY, 10, load_seconds, t_load))
        for cl in clients:
            cl.start()
        for cl in clients:
            cl.join(timeout=60)
            if cl.is_alive():
                raise Failed("a load client did not finish in 60 s")
            if cl.error:
                raise Failed(f"load client: {cl.error}")
        t_end = time.time()
        ping, jwt = clients
        print(f"sent {len(ping.sent)} /ping and {len(jwt.sent)} /jwt in {t_end - t_load:.1f} s")
        # Until Prometheus holds the final counts (scraped after the last answer), then one
        # scrape more, so the whole-run window ends on a flat stretch.
        final = 'knit_http_requests_total{route="ping",code="200"}'
        for _ in deadline_loop(15, "Prometheus scraping the final count"):
            got = api.query(final)
            if got and got[0][1] == len(ping.sent) + 1:
                break
        time.sleep(1.2)
        failures = check_rates(api, clients, t_load, t_end)
        failures += check_quantiles(api, knit_port, ping, t_load)
        if failures:
            raise Failed("; ".join(failures))
        print("prometheus: rate() and histogram_quantile() match the load sent")
        return 0
    finally:
        kids.stop_all()
        shutil.rmtree(work, ignore_errors=True)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("promtool", "scrape"):
        print(__doc__, file=sys.stderr)
        return 2

    def unwind(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, unwind)
    signal.signal(signal.SIGINT, unwind)
    try:
        return (promtool if sys.argv[1] == "promtool" else scrape)(sys.argv[2])
    except Failed as e:
        print(f"FAIL: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
