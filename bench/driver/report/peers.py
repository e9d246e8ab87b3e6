"""The sections of report.md that compare knit with other configurations as paired ratios:
"knit vs the peers" (each knit row against the best in-process peer with as many route
threads; external servers such as nginx apart, as a reference), "Many event loops" (the hosts
sweep: knit against inline and asio at each hosts x workers point) and "Behind HAProxy" (the
server alone against N instances behind the balancer)."""
from configs import (FOREIGN_MARK, cell, cores, cpu_us, default_policy_config, find, fixed,
                     header, heavy_rps, host_counts, idle, in_scope, inline_config,
                     paired, paired_ratio, ping_p99, pool_sizes, ratio_cell, row, scope, total,
                     PEERS)


class Metric:
    """One measure of a comparison. needs_all_routes: totals and CPU are the same work only
    when all three routes ran; needs_rate_met: at a fixed rate only a configuration that
    achieved the offered rate did the same work."""

    def __init__(self, name, mode, higher_is_better, needs_all_routes, needs_rate_met, value,
                 decimals=2):
        self.name, self.mode, self.higher_is_better = name, mode, higher_is_better
        self.needs_all_routes, self.needs_rate_met = needs_all_routes, needs_rate_met
        self.value, self.decimals = value, decimals

    def serves(self, c):
        routes = c.routes()
        return len(routes) == 3 if self.needs_all_routes else "ping" in routes

    def usable(self, c):
        return c is not None and self.serves(c) and not (self.needs_rate_met and not c.met_rate())

    def ratio(self, knit, peer):
        return paired_ratio(knit, peer, self.value, self.higher_is_better)

    def better(self, a, b):
        return a > b if self.higher_is_better else a < b


def cpu_per_req(r):
    return r["cpu_us_per_req"]


def syscalls_per_req(r):
    """perf's system calls over the window per response (knit-bench's syscall_counter); None
    where perf was absent or could not count: the cell says "-"."""
    return (r.get("cpu") or {}).get("syscalls_per_req")


PEER_METRICS = [
    Metric("total rps, saturating", "sat", True, True, False, lambda r: r["total_rps"]),
    Metric("/ping p99, saturating", "sat", False, False, False, ping_p99),
    Metric("/ping p99, fixed rate", "rate", False, False, True, ping_p99),
    Metric("server cores, fixed rate", "rate", False, True, True, lambda r: r["cores"]),
    Metric("CPU-us/req, fixed rate", "rate", False, True, True, cpu_per_req),
]
# An external peer's own figures on the routes it served, next to knit's: not the same work,
# so no measure needs all routes.
EXTERNAL_MEASURES = [
    Metric("/ping rps, saturating", "sat", True, False, False,
           lambda r: (r["routes"].get("ping") or {}).get("rps"), 0),
    Metric("/ping p99 ms, saturating", "sat", False, False, False, ping_p99),
    Metric("/ping p99 ms, fixed rate", "rate", False, False, True, ping_p99),
    Metric("CPU-us/req, fixed rate", "rate", False, False, True, cpu_per_req, 0),
    Metric("syscalls/req, saturating", "sat", False, False, False, syscalls_per_req),
]


def best_of(configs, m):
    """The configuration with the best median on m, first among ties, and that median."""
    best, best_v = None, None
    for c in configs:
        v = c.stat(m.value) if c else None
        if v and (best is None or m.better(v.median, best_v)):
            best, best_v = c, v.median
    return best, best_v


def knit_slots(cs, sat, rate):
    """knit's rows as they appear in both load modes: (label, scope -> configuration)."""
    slots = [("inline", lambda s: inline_config(cs, s))]
    slots += [("threads: %d" % n, lambda s, n=n: default_policy_config(cs, s, n))
              for n in pool_sizes(cs, sat, rate)]
    autos = sorted({c.threads for c in cs
                    if (in_scope(c, sat) or in_scope(c, rate)) and c.policy == "auto"})
    return slots + [("auto: %d" % n, lambda s, n=n: find(cs, s, "auto", n)) for n in autos]


def compare(cs, s, knit, m):
    """knit's cell against the best in-process peer (asio, multi: what a C++ user would write
    instead) with as many route threads; (text, ratio, best peer's label, knit's median,
    the peer's median)."""
    if not knit or not m.serves(knit):
        return "-", None, None, None, None
    if m.needs_rate_met and not knit.met_rate():
        return "- (rate not achieved)", None, None, None, None
    peers = [c for c in cs if in_scope(c, s) and c.policy in ("asio", "multi") and m.usable(c)
             and c.route_threads() == knit.route_threads()]
    best, best_v = best_of(peers, m)
    ratio = m.ratio(knit, best) if best else None
    if not ratio:
        return "-", None, None, None, None
    label = best.label + best.served_note()
    text = ratio_cell(ratio) + " vs " + label + (", peer wins" if ratio.median < 1 else "")
    text += FOREIGN_MARK if knit.flagged() or best.flagged() else ""
    return text, ratio, label, knit.stat(m.value).median, best_v


def external_table(cs, sat, rate, ext, slots):
    """Each external peer's figures next to knit's best row per measure, and one line per peer
    with knit's ratio to it (the main table's direction)."""
    table, summary = "", []
    for e in ext:
        peer_cells, knit_cells, ratios = [e.label + e.served_note()], ["knit, best row"], []
        for m in EXTERNAL_MEASURES:
            s = sat if m.mode == "sat" else rate
            p = next((c for c in cs if in_scope(c, s) and c.policy == "peer"
                      and c.label == e.label), None)
            pv = p.stat(m.value) if m.usable(p) else None
            peer_cells.append(cell(pv, m.decimals) + (p.mark() if pv is not None else ""))
            k, _ = best_of([c for c in (f(s) for _, f in slots) if m.usable(c)], m)
            kv = k.stat(m.value) if k else None
            knit_cells.append("`%s`: %s" % (k.label, cell(kv, m.decimals)) if kv else "-")
            if pv and kv:
                ratios.append(m.name + " " + ratio_cell(m.ratio(k, p)))
        table += row(peer_cells) + row(knit_cells)
        if ratios:
            summary.append("`%s`%s against knit's best row: %s" % (e.label, e.served_note(),
                                                                    "; ".join(ratios)))
    md = ("#### External peers: a reference, not a like-for-like peer\n\nA server outside knit's "
          "process model (its own processes and event loop), loaded on the routes it serves with "
          "the same connections or rate per route. Its figures are a floor for what the machine "
          "allows on those routes, not an alternative a C++ user would write, so they are kept "
          "out of the comparison above. knit's cell is its best row on that measure (the row "
          "named); knit's CPU per request is over all three routes, the peer's over the routes it "
          "served.\n\n")
    return md + header(["server"] + [m.name for m in EXTERNAL_MEASURES]) + table + "\n", summary


def peers_section(cs, sat, rate):
    both = [c for c in cs if in_scope(c, sat) or in_scope(c, rate)]
    if not any(c.policy in PEERS for c in both):
        return ""
    md = ("### knit vs the peers\n\nEach cell is knit's ratio to the best in-process peer "
          "(`asio: N`, `multi: N`: the alternatives a C++ user would write) on that measure "
          "among those with as many threads running routes (event loop + workers: inline 1, "
          "`threads: N`, `auto: N` and `asio: N` N+1, `multi: N` N). External peers are reported "
          "apart, below. Higher-is-better measures are knit / peer, lower-is-better ones peer / "
          "knit, so **above 1× knit is ahead, below 1× the peer wins**. Median over repetitions "
          "paired by repetition number (interleaved, so measured close in time), min–max in "
          "parentheses; the best peer is the one with the best median.\n\n")
    slots = knit_slots(cs, sat, rate)
    table, wins, latencies = "", [], []
    for label, f in slots:
        cells, any_ratio = [label], False
        for m in PEER_METRICS:
            text, ratio, best, k_med, p_med = compare(cs, sat if m.mode == "sat" else rate,
                                                      f(sat if m.mode == "sat" else rate), m)
            cells.append(text)
            any_ratio = any_ratio or bool(ratio)
            if ratio and ratio.median < 1:
                wins.append("`%s` on %s: %s vs %s" % (label, m.name, ratio_cell(ratio), best))
            if ratio and m.name == "/ping p99, fixed rate":
                latencies.append("`%s` %s ms vs `%s` %s ms" % (label, fixed(k_med, 2), best,
                                                              fixed(p_med, 2)))
        table += row(cells) if any_ratio else ""
    if not table:
        md += "No knit configuration has a comparable in-process peer in this profile.\n\n"
    else:
        md += header(["knit"] + [m.name for m in PEER_METRICS]) + table + "\n"
        if latencies:  # a ratio of these medians can differ from the median of the ratios
            md += ("/ping p99 at the fixed rate, medians over repetitions: %s.\n\n"
                   % "; ".join(latencies))
        md += ("Where an in-process peer wins:\n\n" + "".join("- %s\n" % w for w in wins) + "\n"
               if wins else "No in-process peer beats knit on these measures here.\n\n")
    ext = []  # external peers, one per label, first seen first
    for c in both:
        if c.policy == "peer" and all(e.label != c.label for e in ext):
            ext.append(c)
    if ext:
        ext_md, summary = external_table(cs, sat, rate, ext, slots)
        md += "".join("External peers, a reference (table below): %s (below 1× the external "
                      "server is ahead).\n\n" % line for line in summary) + ext_md
    # What the ratios above do not say.
    missed = ["`%s`" % c.label for c in cs if in_scope(c, rate) and not c.met_rate()]
    notes = ""
    if missed:
        notes += ("- Left out of the fixed-rate columns because some repetition did not achieve "
                  "the offered rate (it did less work, so its cores, CPU and latency would flatter "
                  "it): %s.\n" % ", ".join(missed))
    for e in ext:
        if e.served_note():
            notes += ("- `%s` serves %s only: it was loaded on that alone, with the same "
                      "connections or rate per route; its totals are not the same work as knit's "
                      "three routes.\n" % (e.label, e.served_note()[2:-6]))
    if ext:
        notes += ("- External peers print no `knit-stats` line: their rows carry no pool counters "
                  "(`null`); their CPU is the sum over every process they started.\n")
    if any(c.flagged() for c in both):
        notes += ("-%s marks a figure or ratio resting on a window that stayed over the "
                  "foreign-load limit (either side); read it as uncertain.\n" % FOREIGN_MARK)
    return md + (notes + "\n" if notes else "")


def sweep_measures(mode):
    """The hosts sweep's measures: (metric, compared with inline at H (else asio at H, W),
    goal). The goals the many-loops design is held to, saturating: /ping p99 at most half the
    inline servers', heavy rps at least 0.9x and CPU per request at most 1.0x asio's; as ratios
    above 1x = knit ahead: >= 2, >= 0.9, >= 1."""
    rate, sat = mode == "rate", mode == "sat"
    heavy = Metric("heavy rps", mode, True, True, rate, heavy_rps)
    p99 = Metric("/ping p99", mode, False, False, rate, ping_p99)
    cpu = Metric("CPU-us/req", mode, False, True, rate, cpu_per_req)
    return [(heavy, True, 0), (p99, True, 2.0 if sat else 0), (heavy, False, 0.9 if sat else 0),
            (p99, False, 0), (cpu, False, 1.0 if sat else 0)]


def generator_bound(shown):
    """Rows whose generator used 90% or more of its CPUs: their throughput may be its limit."""
    def cpu_count(text):  # "0-3,6" is 5 CPUs; None when it is no CPU list
        try:
            return sum(int(b) - int(a) + 1 for a, _, b in
                       (p.partition("-") if "-" in p else (p, "", p) for p in text.split(",")))
        except (ValueError, AttributeError):
            return None

    def bound(r):
        n = cpu_count(r["cpu_layout"].get("gen_cpus"))
        return bool(n) and r["gen_cores"] >= 0.9 * n
    return list(dict.fromkeys("`%s`" % c.label for c in shown if any(bound(r) for r in c.reps)))


def hosts_mode_tables(cs, profile, mode):
    shown, figures, ratios, missed = [], "", "", []
    measures = sweep_measures(mode)

    def figures_row(c, h, w):
        shown.append(c)
        return row([str(h), w, c.label + c.mark(), cell(c.stat(heavy_rps), 0),
                    cell(c.route("ping", "p99"), 2), cell(cpu_us(c), 0), cell(idle(c), 3),
                    cell(cores(c), 2), cell(c.stat(lambda r: r["gen_cores"]), 2)])
    for h in host_counts(cs, profile):
        s = scope(profile, mode, hosts=h)
        inl = inline_config(cs, s)
        figures += figures_row(inl, h, "-") if inl else ""
        workers = sorted(set(pool_sizes(cs, s)) | {c.threads for c in cs if in_scope(c, s)
                                                   and c.policy in ("asio", "auto")})
        for w in workers:
            asio = find(cs, s, "asio", w)
            for k in [c for c in (default_policy_config(cs, s, w), find(cs, s, "auto", w)) if c]:
                figures += figures_row(k, h, str(w))
                cells = [k.label + k.mark()]
                for m, vs_inline, goal in measures:
                    peer = inl if vs_inline else asio
                    done = peer and (not m.needs_rate_met or (k.met_rate() and peer.met_rate()))
                    r = m.ratio(k, peer) if done else None
                    flagged = r and (k.flagged() or peer.flagged())
                    cells.append(ratio_cell(r) + (FOREIGN_MARK if flagged else ""))
                    if r and goal > 0 and r.median < goal and k.policy != "auto":
                        missed.append("`%s` %s vs `%s`: %s (goal %s\u00d7)" % (
                            k.label, m.name, peer.label, ratio_cell(r), fixed(goal, 1)))
                ratios += row(cells)
            figures += figures_row(asio, h, str(w)) if asio else ""
    if not figures:
        return ""
    md = "### %s\n\n" % ("Saturating" if mode == "sat" else "Fixed rate")
    md += header(["hosts", "workers", "configuration", "heavy rps", "/ping p99 ms", "CPU-us/req",
                  "idle cores", "server cores", "gen cores"]) + figures + "\n"
    if ratios:
        head = ["knit"] + ["%s vs %s%s" % (m.name, "inline" if vs else "asio",
                                           " (goal \u2265 %s\u00d7)" % fixed(g, 1) if g > 0 else "")
                           for m, vs, g in measures]
        md += ("knit against the peers at its point (inline with as many hosts; asio with as many "
               "hosts and workers):\n\n" + header(head) + ratios + "\n")
        if mode == "sat":
            md += ("Below the goal:\n\n" + "".join("- %s\n" % m for m in missed) + "\n" if missed
                   else "Every knit row (default policy) meets the goals here.\n\n")
    bound = generator_bound(shown)
    if bound:
        md += ("- The generator used 90% or more of its CPUs in %s: their throughput may be the "
               "generator's limit, not the server's.\n\n" % ", ".join(bound))
    return md


def hosts_section(cs, profile, charts):
    hosts = host_counts(cs, profile)
    if not hosts or hosts[-1] <= 1:
        return ""
    md = ("## Many event loops%s\n\nH hosts (`KNIT_HOSTS`): H event-loop threads, each with its "
          "own io_context and `SO_REUSEPORT` listener on the port, a connection on one loop for "
          "life. At each (H, W): knit's pool of W workers shared by the H loops (`threads: W, "
          "hosts: H`), H loop-per-core servers running every route on their loop (`inline, hosts: "
          "H`), and H loops sharing one `asio::thread_pool(W)`, each result posted back to the "
          "loop that asked (`asio: W, hosts: H`). *heavy rps* is /ssr + /jwt served per second; "
          "*gen cores* the load generator's CPU. Ratios are knit / peer for heavy rps and peer / "
          "knit for /ping p99 and CPU-us/req, so **above 1\u00d7 knit is ahead**; median over "
          "repetitions paired by repetition number, min\u2013max in parentheses.\n\n"
          % (" (cost profile %s)" % profile if profile else ""))
    md += hosts_mode_tables(cs, profile, "sat") + hosts_mode_tables(cs, profile, "rate")
    return md + "".join("![%s](%s)\n\n" % (t, f) for sec, t, f in charts
                        if sec == "hosts:" + profile)


def signed_cell(s, decimals):
    """"+12 (+10–+14)": a signed difference with its spread over the pairs."""
    if not s:
        return "—"
    def sign(x):
        return ("+" if x >= 0 else "") + fixed(x, decimals)
    if s.n == 1:
        return sign(s.median)
    return "%s (%s–%s)" % (sign(s.median), sign(s.min), sign(s.max))


def fleet_section(cs, profile):
    md = ""
    for mode in ("sat", "rate"):
        fleets = [c for c in cs if c.fleet > 0 and c.profile == profile and
                  c.extra_cost_us is None and c.mode == mode]
        if not fleets:
            continue
        if not md:
            md = ("## Behind HAProxy (cost profile %s)\n\nThe same knit-server configuration "
                  "alone and as N instances behind HAProxy (`deploy/fleet.sh run N`), under the "
                  "same load through one port. *cores* and *CPU-us/req* of a fleet are the "
                  "instances and HAProxy together (their process tree); the balancer's cost per "
                  "request is the difference from the server alone, paired by repetition (median, "
                  "min–max).\n\n"
                  % (profile or "not recorded"))

        def alone_of(f):  # same scope, policy, threads and hosts, no balancer
            return next((c for c in cs if c.fleet == 0 and (c.profile, c.extra_cost_us, c.mode,
                         c.policy, c.threads, c.hosts, c.policy_label) == (
                             f.profile, f.extra_cost_us, f.mode, f.policy, f.threads, f.hosts,
                             f.policy_label)), None)

        def figures(c, instances):
            return row([c.label + c.mark(), instances, cell(total(c), 0),
                        cell(c.route("ping", "p99"), 2), cell(cores(c), 2), cell(cpu_us(c), 0)])
        md += "### %s\n\n" % ("Saturating" if mode == "sat" else "Fixed rate")
        md += header(["configuration", "instances", "total rps", "/ping p99 ms", "cores",
                      "CPU-us/req"], [0, 1, 1, 1, 1, 1])
        shown = []
        for f in fleets:
            a = alone_of(f)
            if a and a not in shown:
                md += figures(a, "alone")
                shown.append(a)
            md += figures(f, "%d + HAProxy" % f.fleet)
        md += "\n" + header(["configuration", "vs", "CPU-us/req added", "/ping p99 ms added",
                             "total rps ratio"], [0, 0, 1, 1, 1])

        def diff(f, a, v):
            return paired(f, a, v, lambda x, y: x - y)
        for f in fleets:
            a = alone_of(f)
            if not a:
                continue
            rps, base = diff(f, a, lambda r: r["total_rps"]), total(a)
            ratio = (fixed((base.median + rps.median) / base.median, 2) + "×"
                     if rps and base and base.median > 0 else "—")
            md += row([f.label + f.mark(), a.label + " alone",
                       signed_cell(diff(f, a, cpu_per_req), 0),
                       signed_cell(diff(f, a, ping_p99), 2), ratio])
        md += "\n"
    return md

