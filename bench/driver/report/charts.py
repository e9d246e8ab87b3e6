"""The report's PNG charts, drawn with matplotlib (Debian python3-matplotlib) from the grouped
rows, into DIR/charts/. Each is (section, title, file): where report.md places it ("profile:P",
"sweep:P", "hosts:P"), its caption, its path relative to the report."""
import os
import re

from configs import (POOL_POLICIES, PEERS, ROUTES, POLICY_NAMES, cores, cpu_us,
                     default_policy_config, find, headline, heavy_rps, host_counts, idle,
                     in_scope, inline_config, model_idle, pool_sizes, profiles, scope,
                     sweep_axes, total)


def file_safe(s):
    return re.sub(r"[^A-Za-z0-9]", "_", s) or "none"


def median_of(stat):
    return stat.median if stat else float("nan")  # a gap in the line, as not measured


class Drawer:
    def __init__(self, report_dir, plt):
        self.dir, self.plt, self.charts = report_dir, plt, []
        os.makedirs(os.path.join(report_dir, "charts"), exist_ok=True)

    def panels(self, n):
        fig, axes = self.plt.subplots(n, 1, figsize=(9.6, 5.4 if n == 1 else 7.2), squeeze=False)
        return fig, [a[0] for a in axes]

    def save(self, fig, name, title, section):
        path = "charts/%s.png" % name
        for ax in fig.axes:
            ax.grid(True, alpha=0.4)
        fig.tight_layout()
        fig.savefig(os.path.join(self.dir, path), dpi=100)
        self.plt.close(fig)
        self.charts.append((section, title, path))


def lines(ax, xs, series, xlabel, ylabel, title, styles=None):
    """One line per (name, values) over categorical xs; styles: name -> plot keywords."""
    for name, ys in series:
        ax.plot(range(len(xs)), ys, marker="o", lw=2, label=name, **(styles or {}).get(name, {}))
    ax.set_xticks(range(len(xs)), [str(x) for x in xs])
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small")


def bars(ax, labels, values, ylabel, title):
    ax.bar(range(len(labels)), values, width=0.7, alpha=0.6)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set(ylabel=ylabel, title=title)
    ax.set_ylim(bottom=0)


def profile_charts(cs, profile, d):
    sec, suffix = "profile:" + profile, file_safe(profile or "reference")
    sat, rate = scope(profile, "sat"), scope(profile, "rate")
    # rps per route against pool size, default policy, saturating.
    points = [("inline", inline_config(cs, sat))] + [
        (str(n), default_policy_config(cs, sat, n)) for n in pool_sizes(cs, sat)]
    points = [(x, c) for x, c in points if c]
    if len(points) >= 2:
        fig, (ax,) = d.panels(1)
        series = [("/" + n, [median_of(c.route(n, "rps")) for _, c in points]) for n in ROUTES]
        lines(ax, [x for x, _ in points], series, "pool size", "requests/s",
              "Saturating load: rps per route vs pool size (default policy)")
        d.save(fig, "rps_by_pool_" + suffix,
               "Saturating rps per route vs pool size (default policy)", sec)
    # /ping p99 per configuration, one panel per load mode.
    modes = [(s, [c for c in cs if in_scope(c, s)]) for s in (sat, rate)]
    modes = [(s, v) for s, v in modes if v]
    if modes:
        fig, axes = d.panels(len(modes))
        for ax, (s, v) in zip(axes, modes):
            mode = "saturating" if s[2] == "sat" else "fixed rate"
            bars(ax, [c.tag for c in v], [median_of(c.route("ping", "p99")) for c in v], "ms",
                 "/ping p99 per configuration, " + mode)
        d.save(fig, "ping_p99_" + suffix, "/ping p99 per configuration", sec)
    # knit and the peers: saturating total rps and fixed-rate server cores, side by side.
    if any(c.policy in PEERS for c in cs if in_scope(c, sat) or in_scope(c, rate)):
        panels = [(v, f, y, t) for v, f, y, t in (
            ([c for c in headline(cs, sat) if len(c.routes()) == 3], total, "requests/s",
             "Saturating total rps (median)"),
            ([c for c in headline(cs, rate) if len(c.routes()) == 3], cores, "cores",
             "Server cores at the fixed rate (same work, median)")) if v]
        if panels:
            fig, axes = d.panels(len(panels))
            for ax, (v, f, y, t) in zip(axes, panels):
                bars(ax, [c.label for c in v], [median_of(f(c)) for c in v], y, t)
            d.save(fig, "peers_" + suffix,
                   "knit and the peers: saturating rps, fixed-rate cores", sec)
    # Idle cores and CPU-us/request against N, one line per policy (saturating).
    sizes = pool_sizes(cs, sat)
    for stem, title, ylabel, metric, with_model in (
            ("idle_by_n", "Idle cores vs pool size, per timer policy", "cores with no load",
             idle, True),
            ("cpu_per_req_by_n", "CPU-us per request vs pool size (saturating)", "CPU-us / request",
             cpu_us, False)):
        if not sizes:
            continue
        series = {}
        for n in sizes:
            for name, c in (("default policy", default_policy_config(cs, sat, n)),
                            ("old default (N*50us, park 1ms)", find(cs, sat, "old_default", n)),
                            ("flat 50us", find(cs, sat, "flat50", n)),
                            ("no spin", find(cs, sat, "no_spin", n))):
                if c and metric(c) and not (name == "no spin" and c.stands_for_default):
                    series.setdefault(name, []).append((n, metric(c).median))
        # auto and the asio / multi peers at their N, beside knit's pool.
        for p in ("auto", "asio", "multi"):
            for c in cs:
                if in_scope(c, sat) and c.policy == p and metric(c):
                    series.setdefault(POLICY_NAMES[p], []).append((c.threads, metric(c).median))
        inl = inline_config(cs, sat)
        if inl and not with_model and metric(inl):
            series["inline"] = [(sizes[0], metric(inl).median), (sizes[-1], metric(inl).median)]
        if not series:
            continue
        fig, (ax,) = d.panels(1)
        for name, pts in series.items():
            ax.plot([n for n, _ in pts], [v for _, v in pts], marker="o", lw=2, label=name)
        if with_model:
            ax.plot(sizes, [model_idle(n) for n in sizes], "--", lw=2,
                    label="model N*spin/(spin+park), old default")
        ax.set_xticks(sizes)
        ax.set(xlabel="pool size N", ylabel=ylabel, title=title)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize="small")
        d.save(fig, stem + "_" + suffix, title, sec)


def sweep_charts(cs, profile, d):
    costs, sizes = sweep_axes(cs, profile)
    if not costs:
        return
    fig, axes = d.panels(2)
    for ax, mode, f, ylabel, title in (
            (axes[0], "sat", total, "requests/s", "Saturating total rps"),
            (axes[1], "rate", lambda c: c.route("ping", "p99"), "ms", "/ping p99 at fixed rate")):
        def at(pick):
            return [median_of(f(c)) if c else float("nan")
                    for c in (pick(scope(profile, mode, k)) for k in costs)]
        series = [("inline", at(lambda s: inline_config(cs, s)))] + [
            ("threads: %d" % n, at(lambda s, n=n: default_policy_config(cs, s, n))) for n in sizes]
        lines(ax, costs, series, "extra CPU per /ssr and /jwt call (us)", ylabel, title)
    d.save(fig, "cost_sweep_" + file_safe(profile or "reference"),
           "Cost sweep: where pooling starts to pay", "sweep:" + profile)


def hosts_charts(cs, profile, d):
    """Heavy rps and /ping p99 against H, saturating: inline black, knit solid, asio dashed in
    knit's colour at the same worker count, so the pair at one W reads as one colour."""
    hosts = host_counts(cs, profile)
    if len(hosts) < 2:
        return
    workers = sorted({c.threads for c in cs if c.extra_cost_us is None and c.profile == profile and
                      c.mode == "sat" and (c.policy == "asio" or c.policy in POOL_POLICIES)})
    styles = {"inline": {"color": "black"}}
    for i, w in enumerate(workers):
        styles["knit W=%d" % w] = {"color": "C%d" % i}
        styles["asio W=%d" % w] = {"color": "C%d" % i, "linestyle": "--"}
    fig, axes = d.panels(2)
    for ax, f, ylabel, title in (
            (axes[0], lambda c: c.stat(heavy_rps), "requests/s",
             "Saturating heavy rps (/ssr + /jwt)"),
            (axes[1], lambda c: c.route("ping", "p99"), "ms", "/ping p99, saturating")):
        def at(pick):
            return [median_of(f(c)) if c else float("nan")
                    for c in (pick(scope(profile, "sat", hosts=h)) for h in hosts)]
        series = [("inline", at(lambda s: inline_config(cs, s)))]
        series += [("knit W=%d" % w, at(lambda s, w=w: default_policy_config(cs, s, w)))
                   for w in workers]
        series += [("asio W=%d" % w, at(lambda s, w=w: find(cs, s, "asio", w))) for w in workers]
        lines(ax, hosts, series, "hosts (event loops)", ylabel, title, styles)
    d.save(fig, "hosts_" + file_safe(profile or "reference"),
           "Many event loops: heavy rps and /ping p99 by hosts", "hosts:" + profile)


def render_charts(cs, report_dir):
    """(charts, warnings). Without matplotlib the report goes on without charts, and says so."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], ["charts skipped: matplotlib not found (install python3-matplotlib)"]
    d = Drawer(report_dir, plt)
    for p in profiles(cs, False):
        profile_charts(cs, p, d)
        hosts_charts(cs, p, d)
    for p in profiles(cs, True):
        sweep_charts(cs, p, d)
    return d.charts, []
