"""Rows of rows.jsonl grouped into configurations (all repetitions of one case), their timer
policy named, medians over repetitions and the markdown cells every section shares. Reads both
the reference benchmark's row schema and knit-bench's (bench/driver/README.md, "Row schema")."""
import json

ROUTES = ("ping", "ssr", "jwt")
FOREIGN_MARK = " \u26a0"
# Configuration kinds. The pool policies first; then auto and the peers knit is compared with.
POOL_POLICIES = ("default_policy", "old_default", "flat50", "no_spin", "other")
PEERS = ("asio", "multi", "peer")
POLICY_NAMES = {"inline": "inline", "default_policy": "default policy",
                "old_default": "old default", "flat50": "flat 50us", "no_spin": "no spin",
                "other": "other", "auto": "auto", "asio": "asio", "multi": "multi", "peer": "peer"}


def _flag(v):
    """Reference rows carry doorbell as a boolean; plans write "0"/"1"; null means unset."""
    if isinstance(v, str):
        return v in ("1", "true")
    return None if v is None else bool(v)


def _text(v):
    return "" if v is None else v if isinstance(v, str) else str(int(v))


def normalize_row(o):
    """A row as the report reads it: every field present, the reference schema's defaults
    filled in (tag "only" is the inline server, rows from before KNIT_HOSTS ran one loop)."""
    missing = [k for k in ("tag", "mode", "idle_cores", "total_rps", "cores", "routes")
               if k not in o]
    if missing or o["mode"] not in ("sat", "rate", "pipelined"):
        raise ValueError("missing " + ", ".join(missing) if missing else
                         'mode: expected "sat", "rate" or "pipelined", got %r' % o["mode"])
    r = dict(o)
    r["threads"] = int(o.get("threads") or 0)
    r["spin"], r["park"] = _text(o.get("spin")), _text(o.get("park"))
    r["doorbell"], r["steal"] = _flag(o.get("doorbell")), _flag(o.get("steal"))
    r["server_mode"] = o.get("server_mode") or ("inline" if o["tag"] == "only" else "pooled")
    r["hosts"], r["fleet"] = int(o.get("hosts") or 1), int(o.get("fleet") or 0)
    r["cost_profile"] = o.get("cost_profile") or ""
    x = o.get("extra_cost_us")
    r["extra_cost_us"] = None if x is None else int(x)
    r["env"] = dict(o.get("env") or {})
    r["rep"] = int(o.get("rep") or 0)
    r["total_rps"] = int(o["total_rps"])
    for k in ("rps_per_core", "cpu_us_per_req"):
        r[k] = None if o.get(k) is None else int(o[k])
    r["gen_cores"] = float(o.get("gen_cores") or 0)
    r["routes"] = {n: dict({"ok": 1.0}, **v) for n, v in o["routes"].items()}
    for k in ("pool_counters", "pool_per_call"):
        r[k] = {n: float(v) for n, v in (o.get(k) or {}).items() if isinstance(v, (int, float))}
    r["cpu_layout"] = o.get("cpu_layout") or {}
    return r


def read_rows(path):
    """rows.jsonl: one JSON object a line, blank lines skipped; a bad line names itself."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                rows += [normalize_row(json.loads(line))] if line.strip() else []
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                raise ValueError("%s:%d: %s" % (path, n, e)) from None
    return rows


def fixed(x, decimals):
    """printf("%.*f"), without the sign of a value that rounds to zero ("-0.00")."""
    s = "%.*f" % (decimals, x)
    return s[1:] if s.startswith("-") and not s.strip("-0.") else s


def shortest(x):
    """Shortest text that reads back as the same number: "5", "0.25", "2815.1"."""
    s = repr(float(x))
    return s[:-2] if s.endswith(".0") else s


def median(v):
    v = sorted(v)
    h = len(v) // 2
    return v[h] if len(v) % 2 else (v[h - 1] + v[h]) / 2


class Stat:
    """Median with min and max over repetitions; n == 0 when no repetition had a value."""

    def __init__(self, values=()):
        v = sorted(x for x in values if x is not None and x == x and abs(x) != float("inf"))
        self.n = len(v)
        self.median, self.min, self.max = (median(v), v[0], v[-1]) if v else (0, 0, 0)

    def __bool__(self):
        return self.n > 0


def cell(s, decimals):
    """"8208" / "2.00 (1.98–2.05)": the median, with min–max when there were repetitions (a
    spread that rounds away is not worth printing)."""
    if not s:
        return "-"
    m, lo, hi = fixed(s.median, decimals), fixed(s.min, decimals), fixed(s.max, decimals)
    return m if s.n == 1 or lo == hi else "%s (%s–%s)" % (m, lo, hi)


def route_value(r, route, field):
    v = r["routes"].get(route)
    return None if v is None else v.get(field)


def classify(r):
    mode = r["server_mode"]
    if mode in ("inline", "auto", "asio", "multi"):
        return mode
    if mode.startswith("peer:"):
        return "peer"
    spin, park, n = r["spin"], r["park"], r["threads"]
    if r["doorbell"] is False or r["steal"] is False or r["env"]:
        return "other"
    if not spin and not park:
        return "default_policy"
    # Reference rows spell the old default "default"; ours spell it out as N*50 and park 1.
    # (The reference flat-50 row at N=1 has spin "50" with park "default": that is flat50.)
    if (spin == "default" and park in ("1", "default")) or (spin == str(n * 50) and park == "1"):
        return "old_default"
    if spin in ("50", "0") and park in ("", "default"):
        return "flat50" if spin == "50" else "no_spin"
    return "other"


def _other_label(r):
    parts = []
    if r["spin"]:
        parts.append("spin %sus" % (r["threads"] * 50 if r["spin"] == "default" else r["spin"]))
    if r["park"]:
        parts.append("park %sms" % ("1" if r["park"] == "default" else r["park"]))
    if r["doorbell"] is False:
        parts.append("no doorbell")
    if r["steal"] is False:
        parts.append("no stealing")
    parts += ["%s=%s" % kv for kv in sorted(r["env"].items())]
    return ", ".join(parts) or "library default"


def _policy_label(p, r, threads):
    n = r["threads"]
    if p == "old_default":
        return "old default (%dus + park 1ms)" % (n * 50) + (
            ", = default policy at N=1" if threads == 1 else "")
    if p == "no_spin":
        return "no spin (= default policy)" if threads >= 2 else "no spin"
    if p == "other":
        return _other_label(r)
    return {"inline": "inline", "default_policy": "default policy (library default)",
            "flat50": "flat 50us", "auto": "auto (inline or pool per route, by measured cost)",
            "asio": "asio thread_pool(%d), results posted to the io_context" % n,
            "multi": "one io_context run by %d threads, every route inline" % n,
            "peer": "external peer"}[p]


class Config:
    """All repetitions of one case. label: "inline", "threads: N", "auto: N", "asio: N",
    "multi: N", "peer: NAME", then ", hosts: H" above one host and ", fleet: N" behind HAProxy."""

    def __init__(self, r):
        self.profile, self.extra_cost_us = r["cost_profile"], r["extra_cost_us"]
        self.mode, self.tag, self.policy = r["mode"], r["tag"], classify(r)
        self.threads = 0 if self.policy in ("inline", "peer") else r["threads"]
        self.hosts, self.fleet = r["hosts"], r["fleet"]
        n = r["threads"]
        self.label = {"inline": "inline", "auto": "auto: %d" % n, "asio": "asio: %d" % n,
                      "multi": "multi: %d" % n,
                      "peer": "peer: " + r["server_mode"][5:]}.get(self.policy, "threads: %d" % n)
        if self.hosts > 1:
            self.label += ", hosts: %d" % self.hosts
        if self.fleet > 0:
            self.label += ", fleet: %d" % self.fleet
        # Stands in for the default policy at its N when no library-default row exists: the
        # reference benchmark's own rows are spin "default" at N=1 and spin "0" above.
        self.stands_for_default = (self.threads == 1 and self.policy == "old_default") or (
            self.threads >= 2 and self.policy == "no_spin")
        self.policy_label = _policy_label(self.policy, r, self.threads)
        self.reps = []

    def stat(self, f):
        return Stat(f(r) for r in self.reps)

    def route(self, route, field):
        return self.stat(lambda r: route_value(r, route, field))

    def routes(self):
        """The routes it was loaded on (union over repetitions), the known three first."""
        seen = {n for r in self.reps for n in r["routes"]}
        return [n for n in ROUTES if n in seen] + sorted(seen - set(ROUTES))

    def flagged(self):
        return any(r.get("foreign_flagged") for r in self.reps)

    def met_rate(self):
        """False when any repetition missed the offered rate on any route."""
        return not any(v.get("rate_met") is False for r in self.reps for v in r["routes"].values())

    def mark(self):
        return FOREIGN_MARK if self.flagged() else ""

    def served_note(self):
        """" (/ping only)" for a configuration loaded on some routes only."""
        routes = self.routes()
        return "" if len(routes) >= 3 or not routes else " (/%s only)" % ", /".join(routes)

    def marked_label(self):
        return self.label + self.served_note() + self.mark()

    def route_threads(self):
        """Threads that run routes: loops plus workers (inline H, pooled / auto / asio N+H,
        multi N); None for an external peer, whose threads knit does not set."""
        return {"inline": self.hosts, "multi": self.threads, "peer": None}.get(
            self.policy, self.threads + self.hosts)


def group_configs(rows):
    """Configurations in first-seen order; rows of repeated cases share one Config."""
    out = {}
    for r in rows:
        key = (r["cost_profile"], r["extra_cost_us"], r["mode"], r["tag"], r["server_mode"],
               r["threads"], r["hosts"], r["fleet"], r["spin"], r["park"], r["doorbell"],
               r["steal"], tuple(sorted(r["env"].items())))
        out.setdefault(key, Config(r)).reps.append(r)
    return list(out.values())


# Scope: (profile, extra_cost_us, mode, hosts, fleet). The tables that predate KNIT_HOSTS and
# fleets (A, B, C, the peers, the cost sweep) are over one host, the server alone.
def scope(profile, mode, extra=None, hosts=1, fleet=0):
    return (profile, extra, mode, hosts, fleet)


def in_scope(c, s):
    return (c.profile, c.extra_cost_us, c.mode, c.hosts, c.fleet) == s


def find(cs, s, policy, threads=None):
    for c in cs:
        if in_scope(c, s) and c.policy == policy and threads in (None, c.threads):
            return c
    return None


def inline_config(cs, s):
    return find(cs, s, "inline")


def default_policy_config(cs, s, n):
    """The default policy at N: a library-default row if any, else the row standing for it."""
    return find(cs, s, "default_policy", n) or next(
        (c for c in cs if in_scope(c, s) and c.threads == n and c.stands_for_default), None)


def of_policy(cs, s, policy):
    """Configurations of one kind in scope, by thread count (first seen first among equals)."""
    return sorted((c for c in cs if in_scope(c, s) and c.policy == policy), key=lambda c: c.threads)


def pool_sizes(cs, *scopes):
    """Sizes of knit's pool (pooled rows of any timer policy) in any of the scopes, ascending."""
    return sorted({c.threads for c in cs for s in scopes
                   if in_scope(c, s) and c.policy in POOL_POLICIES})


def headline(cs, s):
    """The rows of sections A and B: inline, the default policy at each pool size, auto, then
    the peers (asio, multi, external servers)."""
    v = [inline_config(cs, s)] + [default_policy_config(cs, s, n) for n in pool_sizes(cs, s)]
    v += of_policy(cs, s, "auto") + of_policy(cs, s, "asio") + of_policy(cs, s, "multi")
    return [c for c in v if c] + [c for c in cs if in_scope(c, s) and c.policy == "peer"]


def profiles(cs, sweep):
    """Cost profiles in first-seen order (rows without extra_cost_us only, or with). Pipelined
    rows load /plaintext alone, which has no cost: they have a section of their own."""
    return list(dict.fromkeys(c.profile for c in cs if (c.extra_cost_us is not None) == sweep
                              and c.mode != "pipelined"))


def host_counts(cs, profile):
    return sorted({c.hosts for c in cs if c.extra_cost_us is None and c.profile == profile
                   and c.mode != "pipelined"})


def sweep_axes(cs, profile):
    """The extra costs of one profile's sweep and the pool sizes measured at any of them."""
    costs = sorted({c.extra_cost_us for c in cs
                    if c.extra_cost_us is not None and c.profile == profile})
    sizes = pool_sizes(cs, *[scope(profile, m, k) for k in costs for m in ("sat", "rate")])
    return costs, sizes


def model_idle(n):
    """Idle cores of the old default's pool: N * spin / (spin + park), spin N*50us, park 1ms."""
    return n * (n * 50.0) / (n * 50.0 + 1000.0)


def paired(knit, peer, f, combine):
    """combine(knit value, peer value) per repetition number (interleaved runs measure rep r of
    both close in time), over the repetitions both measured."""
    base = {}
    for r in peer.reps:
        base.setdefault(r["rep"], f(r))
    return Stat(combine(f(r), base[r["rep"]]) for r in knit.reps
                if f(r) is not None and base.get(r["rep"]) is not None)


def paired_ratio(knit, peer, f, higher_is_better):
    """knit / peer when higher is better, else peer / knit: above 1 knit is ahead."""
    def ratio(k, p):
        return (k / p if higher_is_better else p / k) if k > 0 and p > 0 else None
    return paired(knit, peer, f, ratio)


def ratio_cell(s):
    """"1.32× (1.20–1.41)": the median ratio with its min–max over repetitions."""
    if not s:
        return "-"
    t = cell(s, 2)
    return t.replace(" (", "\u00d7 (", 1) if " (" in t else t + "\u00d7"


def row(cells):
    return "| " + " | ".join(cells) + " |\n"


def header(cells, right=()):
    rule = "|" + "".join("---:|" if i < len(right) and right[i] else "---|"
                         for i in range(len(cells)))
    return row(cells) + rule + "\n"


def _row_stat(field):
    return lambda c: c.stat(lambda r: r[field])


# A configuration's median (min-max) of one row field: total(c), idle(c), ...
total, idle, cores, rps_core, cpu_us = map(_row_stat, (
    "total_rps", "idle_cores", "cores", "rps_per_core", "cpu_us_per_req"))


def ping_p99(r):
    return route_value(r, "ping", "p99")


def heavy_rps(r):
    """/ssr + /jwt served per second (the hosts sweep's throughput)."""
    ssr, jwt = route_value(r, "ssr", "rps"), route_value(r, "jwt", "rps")
    return None if ssr is None or jwt is None else ssr + jwt
