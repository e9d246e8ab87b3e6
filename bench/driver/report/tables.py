"""The sections of report.md shaped like the reference benchmark's tables (A: saturating
throughput and latency, B: fixed-rate latency, C: what the timer policy is worth), the pool
counters, the cost sweep, and the notes (foreign load, rows whose server ran another mode or
another number of hosts)."""
from configs import (FOREIGN_MARK, ROUTES, cell, cores, cpu_us, default_policy_config, find,
                     fixed, header, headline, idle, in_scope, inline_config, model_idle,
                     pool_sizes, rps_core, row, scope, sweep_axes, total, POLICY_NAMES,
                     POOL_POLICIES)


def pct_change(base, value):
    """"+119%": Python's round, ties to even, as the reference harness printed."""
    return "-" if base == 0 else "%+d%%" % round((value / base - 1.0) * 100.0)


def ratio_text(old, new, higher_is_better):
    """"4.0x", "5.2x less", "39x less", "1.3x more"."""
    if old <= 0 or new <= 0:
        return "-"
    def fmt(x):
        return fixed(x, 0 if x >= 10 else 1)
    x = new / old if higher_is_better else old / new
    if higher_is_better:
        return fmt(x) + "x" if x >= 1 else fmt(1 / x) + "x less"
    return fmt(x) + "x less" if x >= 1 else fmt(1 / x) + "x more"


def foreign_load_note(rows):
    measured = [r for r in rows if r.get("foreign_cores") is not None]
    if not measured:
        return ""
    reran = sum(1 for r in measured if (r.get("foreign_reruns") or 0) > 0)
    flagged = [r for r in measured if r.get("foreign_flagged")]
    s = ("Foreign load: each window recorded the CPU the machine spent outside the server, the "
         "load generator and the driver (`foreign_cores`, from `/proc/stat`); at most %s cores "
         "over %d window(s)" % (fixed(max(r["foreign_cores"] for r in measured), 2), len(measured)))
    if reran:
        s += "; %d case(s) were measured again because another job was using the machine" % reran
    if not flagged:
        return s + ". No window stayed over the limit.\n\n"
    names = ["%s %s%s rep %d (%s cores foreign)" % (
        r["tag"], r["mode"], "" if r["extra_cost_us"] is None else
        " extra %dus" % r["extra_cost_us"], r["rep"] + 1, fixed(r["foreign_cores"], 2))
        for r in flagged]
    return s + (".\n\n>%s %d window(s) stayed over the limit after their reruns; figures resting "
                "on them are marked%s and may be low: %s.\n\n"
                % (FOREIGN_MARK, len(flagged), FOREIGN_MARK, "; ".join(names)))


def mismatch_notes(rows):
    """Warnings for rows whose knit-stats line reported another mode, or listed another number
    of hosts, than the row is named for (peers print no knit-stats: they reported nothing)."""
    modes = [("`%s` %s asked for %s, knit-stats said %s"
              % (r["tag"], r["mode"], r["server_mode"], r["reported_mode"]))
             for r in rows if r.get("reported_mode") not in (None, r["server_mode"])]
    hosts = [("`%s` %s asked for %d, knit-stats listed %d"
              % (r["tag"], r["mode"], r["hosts"], r.get("reported_hosts") or 1))
             for r in rows
             if r.get("reported_mode") and (r.get("reported_hosts") or 1) != r["hosts"]]
    s = ""
    if modes:
        s += ("> Warning: the server ran another mode than some rows are named for, so those "
              "rows measure the reported mode: %s.\n\n" % "; ".join(dict.fromkeys(modes)))
    if hosts:
        s += ("> Warning: the server ran another number of hosts (event loops) than some rows "
              "are named for, so those rows measure what it ran: %s.\n\n"
              % "; ".join(dict.fromkeys(hosts)))
    return s


def lat_pair(c, route):
    return cell(c.route(route, "p50"), 2) + " / " + cell(c.route(route, "p99"), 2)


def section_a(cs, sat):
    rows = headline(cs, sat)
    md = "### A. Saturating load - throughput\n\n"
    if not rows:
        return md + "No saturating rows for this profile.\n\n"
    conns = rows[0].stat(lambda r: r.get("conns"))
    md += ("Closed loop, %s, all three routes at once. Rows are the inline server and the "
           "default policy at each pool size, then knit's auto mode and the peers (asio, multi, "
           "external servers) where measured.\n\n"
           % (fixed(conns.median, 0) + " connections per route" if conns
              else "connections per route not recorded"))
    base = inline_config(cs, sat)
    base_total = total(base) if base else None
    md += header(["pool", "/ping", "/ssr", "/jwt", "total rps", "vs inline", "idle cores",
                  "server cores", "rps/core", "CPU-us/req"])
    for c in rows:
        t = total(c)
        same = c is not base and base_total and t and len(c.routes()) == 3
        md += row([c.marked_label()] + [cell(c.route(n, "rps"), 0) for n in ROUTES] +
                  [cell(t, 0), pct_change(base_total.median, t.median) if same else "-",
                   cell(idle(c), 3), cell(cores(c), 2), cell(rps_core(c), 0), cell(cpu_us(c), 0)])
    md += "\nLatency under the same saturating load (p50 / p99, ms):\n\n"
    md += header(["pool", "/ping", "/ssr", "/jwt"])
    md += "".join(row([c.marked_label()] + [lat_pair(c, n) for n in ROUTES]) for c in rows)
    if any(c.route("ping", "p999") for c in rows):
        md += ("\nDeeper percentiles (p90 / p99.9 / max, ms). Short single windows cannot "
               "support p99.9; read it with the repetition spread:\n\n")
        md += header(["pool", "/ping", "/ssr", "/jwt"])
        for c in rows:
            md += row([c.marked_label()] + [" / ".join(cell(c.route(n, k), 2) for k in
                                                       ("p90", "p999", "max")) for n in ROUTES])
    return md + "\n"


def section_b(cs, rate):
    rows = headline(cs, rate)
    md = "### B. Fixed rate - latency\n\n"
    if not rows:
        return md + "No fixed-rate rows for this profile.\n\n"
    # Offered rate: recorded in our rows; the reference rows only show what was achieved.
    offered = rows[0].stat(lambda r: r.get("rate_per_route"))
    if offered:
        md += ("Offered %s rps per route (%s total), a share of the inline saturating total "
               "measured earlier in the same run, so every configuration does the same work and "
               "only latency varies." % (cell(offered, 0), fixed(3 * offered.median, 0)))
    elif inline_config(cs, rate):
        md += ("Offered rate not recorded in these rows; the inline server achieved %s rps in "
               "total." % fixed(total(inline_config(cs, rate)).median, 0))
    results = [(c, n, v) for c in rows for r in c.reps for n, v in sorted(r["routes"].items())]
    met_info = any(isinstance(v.get("rate_met"), bool) for _, _, v in results)
    missed = sorted({"%s /%s" % (c.label, n) for c, n, v in results if v.get("rate_met") is False})
    failed = sorted({"%s /%s (%s%%)" % (c.label, n, fixed(v["ok"] * 100, 2))
                     for c, n, v in results if v["ok"] < 1.0})
    if met_info:
        md += (" **Rate not achieved:** %s; latency there is not comparable" % ", ".join(missed)
               if missed else " Every configuration achieved the offered rate")
    if failed:
        md += ". **Errors:** %s.\n\n" % ", ".join(failed)
    else:
        md += (", with a 100% success rate.\n\n" if met_info
               else " Every configuration had a 100% success rate.\n\n")
    for n in ROUTES:
        md += "**/%s**%s\n\n" % (n, " (never touches the pool)" if n == "ping" else "")
        md += header(["config", "p50", "p99", "server cores", "idle cores", "CPU-us/req"])
        for c in rows:
            if c.route(n, "p50"):  # a peer that does not serve this route has no row
                md += row([c.marked_label(), cell(c.route(n, "p50"), 2), cell(c.route(n, "p99"), 2),
                           cell(cores(c), 2), cell(idle(c), 3), cell(cpu_us(c), 0)])
        md += "\n"
    return md


def section_c(cs, sat, rate):
    md = "### C. What the timer policy is worth\n\n"
    sizes = pool_sizes(cs, sat, rate)
    if not sizes:
        return md + "No pooled rows for this profile.\n\n"

    def policy(s, n, p):
        return default_policy_config(cs, s, n) if p == "default_policy" else find(cs, s, p, n)

    def pick(n, p):  # idle cores from the saturating rows (as the reference), else fixed rate
        return policy(sat, n, p) or policy(rate, n, p)

    def idle_cell(c):
        return cell(idle(c), 3) if c else "-"
    md += ("Idle cores: CPU used with the server started and no load offered. The old default "
           "spins N*50us and then parks 1ms, so the model predicts N * spin / (spin + park) "
           "cores.\n\n")
    md += header(["N", "idle cores, old default", "model", "idle cores, default policy"], [1] * 4)
    for n in sizes:
        md += row([str(n), idle_cell(pick(n, "old_default")), fixed(model_idle(n), 3),
                   idle_cell(pick(n, "default_policy"))])
    md += "\n"
    olds = [(n, find(cs, sat, "old_default", n)) for n in sizes if find(cs, sat, "old_default", n)]
    if olds:
        md += "How much of the loaded CPU under the old default is idle spin (saturating):\n\n"
        md += header(["N", "loaded cores, old default", "idle cores", "useful (loaded - idle)"],
                     [1] * 4)
        for n, c in olds:
            l, i = cores(c), idle(c)
            md += row([str(n), cell(l, 2), cell(i, 3),
                       fixed(l.median - i.median, 2) if l and i else "-"])
        md += "\n"
    md += ("#### The full CPU picture\n\nEvery pool size against every policy measured. "
           "**Bold** marks the default policy (the row used in sections A and B).\n\n")
    rank = {"old_default": 0, "flat50": 1, "no_spin": 2, "default_policy": 3}
    for s in (sat, rate):
        v = sorted((c for c in cs if in_scope(c, s) and c.policy in POOL_POLICIES),
                   key=lambda c: (c.threads, rank.get(c.policy, 4)))
        if not v:
            continue
        is_sat = s[2] == "sat"
        md += ("Saturating load:\n\n" if is_sat
               else "Fixed rate, so every row does the same work:\n\n")
        last = ["rps/core", "CPU-us/req"] if is_sat else ["CPU-us/req", "/ssr p99"]
        md += header(["N", "policy", "idle cores", "server cores"] + last, [1, 0, 1, 1, 1, 1])
        last_n = None
        for c in v:
            bold = c is default_policy_config(cs, s, c.threads)

            def b(x):
                return "**%s**" % x if bold and x != "-" else x
            tail = ([cell(rps_core(c), 0), cell(cpu_us(c), 0)] if is_sat
                    else [cell(cpu_us(c), 0), cell(c.route("ssr", "p99"), 2)])
            n = "" if c.threads == last_n else str(c.threads)
            md += row([n, b(c.policy_label) + c.mark()] +
                      [b(x) for x in [cell(idle(c), 3), cell(cores(c), 2)] + tail])
            last_n = c.threads
        md += "\n"
    # Before / after: the old default against the default policy at each size where both ran.
    ba = ""
    for n in reversed(sizes):
        o_sat, s_sat = find(cs, sat, "old_default", n), default_policy_config(cs, sat, n)
        o_rate, s_rate = find(cs, rate, "old_default", n), default_policy_config(cs, rate, n)
        lines = []
        if o_sat and s_sat and o_sat is not s_sat:
            lines.append(("rps/core, saturating", rps_core(o_sat), rps_core(s_sat), 0, "", True))
        if o_rate and s_rate and o_rate is not s_rate:
            lines.append(("CPU-us/request, fixed rate", cpu_us(o_rate), cpu_us(s_rate), 0, "",
                          False))
            lines.append(("/ssr p99, fixed rate", o_rate.route("ssr", "p99"),
                          s_rate.route("ssr", "p99"), 2, "ms", None))
        o_i, s_i = (o_sat, s_sat) if o_sat else (o_rate, s_rate)
        if o_i and s_i and o_i is not s_i:
            lines.append(("idle cores", idle(o_i), idle(s_i), 3, "", False))
        for what, a, b, dec, unit, higher in lines:
            if a and b:
                change = (pct_change(a.median, b.median) if higher is None
                          else ratio_text(a.median, b.median, higher))
                ba += row(["`threads: %d` %s" % (n, what), cell(a, dec) + unit, cell(b, dec) + unit,
                           change])
    if ba:
        md += ("#### Before and after\n\nSame machine, same workload; only the timer policy "
               "differs.\n\n")
        md += header(["", "old default", "default policy", "change"], [0, 1, 1, 0]) + ba + "\n"
    return md


# The counters that explain a pool's cost first; anything new the server adds follows.
COUNTER_ORDER = ("host_wakes", "completion_batches", "completion_signals", "peer_wakes",
                 "wakes_doorbell", "wakes_timeout", "parks", "spin_hits", "calls_stolen",
                 "calls_run", "calls_completed")
# Stuck calls are rare events: per call they would print as 0.000, so they get their own
# columns as counts over the window (retired_running: threads still in a stuck task at its
# end), shown only when some row has one.
STUCK = ("calls_stuck", "workers_replaced", "retired_running")


def pool_counter_section(cs, profile):
    v = [c for c in cs if c.profile == profile and c.extra_cost_us is None and c.policy != "inline"
         and any(r["pool_per_call"] for r in c.reps)]
    md = "### Pool counters\n\n"
    if not v:
        return md + ("No pool counters in these rows (inline only, reference benchmark rows, or "
                     "a server without SIGUSR1 stats).\n\n")
    reps = [r for c in v for r in c.reps]
    keys = {k for r in reps for k in r["pool_per_call"]} - set(STUCK)
    stuck = [k for k in STUCK if any(r["pool_counters"].get(k) for r in reps)]
    zero = [k for k in STUCK if k not in stuck and any(k in r["pool_counters"] for r in reps)]
    cols = [k for k in COUNTER_ORDER if k in keys] + sorted(keys - set(COUNTER_ORDER))
    # Counters that stayed at zero everywhere (rejections, timeouts...) only widen the table.
    zero += [k for k in cols if not any(r["pool_per_call"].get(k) for r in reps)]
    cols = [k for k in cols if k not in zero]
    md += ("Counter deltas over the measured window, divided by pooled calls "
           "(`calls_submitted`). Full deltas are in each row's `pool_counters`.")
    if stuck:
        md += (" Stuck calls (`KNIT_STUCK_MS`) and the workers that replaced them are counts over "
               "the window, not per call; `retired_running` is the number of threads still in a "
               "stuck task at its end.")
    if zero:
        md += " Zero in every row, so not shown: %s." % ", ".join("`%s`" % k for k in zero)
    md += "\n\n" + header(["config", "policy", "mode", "pooled calls"] +
                          [k + "/call" for k in cols] + stuck)
    for c in v:
        md += row([c.marked_label(), c.policy_label, c.mode,
                   cell(c.stat(lambda r: r["pool_counters"].get("calls_submitted")), 0)] +
                  [cell(c.stat(lambda r, k=k: r["pool_per_call"].get(k)), 3) for k in cols] +
                  [cell(c.stat(lambda r, k=k: r["pool_counters"].get(k)), 0) for k in stuck])
    return md + "\n"


def crossover(costs, wins, what):
    """The smallest cost from which the best pool beats inline at every larger measured cost."""
    known = [c for c in costs if wins[c] is not None]
    if not known:
        return "- %s: not enough data.\n" % what
    if not wins[known[-1]]:
        return ("- %s: pooling did not pay at the largest measured cost (%d us); no crossover in "
                "range.\n" % (what, known[-1]))
    i = len(known)
    while i > 0 and wins[known[i - 1]]:
        i -= 1
    if i == 0:
        return "- %s: pooling pays at every measured cost, already at %d us.\n" % (what, known[0])
    return ("- %s: pooling starts to pay between %d and %d us of extra CPU per heavy call (and "
            "keeps paying above).\n" % (what, known[i - 1], known[i]))


def sweep_section(cs, profile, charts):
    costs, sizes = sweep_axes(cs, profile)
    md = ("## Cost sweep%s\n\nExtra CPU added to every /ssr and /jwt call (`KNIT_SSR_COST_US`, "
          "`KNIT_JWT_COST_US`): where does moving the heavy routes off the event loop start to "
          "pay? Pools use the default policy; the crossover below compares them with inline, and "
          "auto and the asio peer are shown beside them.\n\n"
          % (" (cost profile %s)" % profile if profile else ""))
    # knit's auto mode and the peers (asio, multi) at each thread count measured in the sweep.
    others = list(dict.fromkeys((c.policy, c.threads) for c in cs if c.extra_cost_us is not None
                                and c.profile == profile and c.policy in ("auto", "asio", "multi")))
    head = (["extra us/call", "inline"] + ["threads: %d" % n for n in sizes] +
            ["%s: %d" % (POLICY_NAMES[p], n) for p, n in others])

    def marked(c, f, dec):
        return cell(f(c), dec) + c.mark() if c else "-"
    rps_wins, p99_wins = {}, {}
    md += "Saturating total rps:\n\n" + header(head + ["best pool vs inline"])
    for cost in costs:
        s = scope(profile, "sat", cost)
        base = total(inline_config(cs, s)) if inline_config(cs, s) else None
        pools = [default_policy_config(cs, s, n) for n in sizes]
        best = max((total(c).median for c in pools if c and total(c)), default=None)
        md += row([str(cost), marked(inline_config(cs, s), total, 0)] +
                  [marked(c, total, 0) for c in pools] +
                  [marked(find(cs, s, p, n), total, 0) for p, n in others] +
                  [pct_change(base.median, best) if base and best is not None else "-"])
        rps_wins[cost] = best > base.median if base and best is not None else None
    md += "\n/ping p99 at fixed rate (ms):\n\n"
    md += header(head[:1] + ["offered rps/route"] + head[1:])

    def p99(c):
        return c.route("ping", "p99")
    for cost in costs:
        s = scope(profile, "rate", cost)
        i = inline_config(cs, s)
        base = p99(i) if i else None
        pools = [default_policy_config(cs, s, n) for n in sizes]
        best = min((p99(c).median for c in pools if c and p99(c)), default=None)
        md += row([str(cost), cell(i.stat(lambda r: r.get("rate_per_route")), 0) if i else "-",
                   cell(base, 2) if i else "-"] + [cell(p99(c), 2) if c else "-" for c in pools] +
                  [marked(find(cs, s, p, n), p99, 2) for p, n in others])
        p99_wins[cost] = best < base.median if base and best is not None else None
    md += ("\nCrossover (best pool size against inline):\n\n" +
           crossover(costs, rps_wins, "Total rps, saturating") +
           crossover(costs, p99_wins, "/ping p99, fixed rate") + "\n")
    return md + "".join("![%s](%s)\n\n" % (t, f) for sec, t, f in charts
                        if sec == "sweep:" + profile)

