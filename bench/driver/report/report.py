#!/usr/bin/env python3
"""report.md and charts/*.png from rows.jsonl alone (plus meta.json beside it when present):
the reference tables A, B, C, the peers, pool counters, the hosts sweep, the fleet and the
cost sweep, one table set per cost profile; then the pipelined (TechEmpower plaintext) rows. knit-bench runs it after a run and for
`knit-bench report DIR/rows.jsonl [--no-charts]`; it can be run by hand the same way.
Prints one "warning: ..." line per warning (also listed in the report) and "wrote PATH"."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from charts import render_charts  # noqa: E402
from configs import (fixed, group_configs, header, host_counts, profiles,  # noqa: E402
                     read_rows, row, scope, shortest)
from peers import fleet_section, hosts_section, peers_section  # noqa: E402
from pipelined import pipelined_section  # noqa: E402
from tables import (foreign_load_note, mismatch_notes, pool_counter_section,  # noqa: E402
                    section_a, section_b, section_c, sweep_section)


def text_of(o, key):
    v = (o or {}).get(key)
    if isinstance(v, str):
        return v
    return shortest(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else ""


def run_header(run, index, count):
    machine, layout = run.get("machine") or {}, run.get("cpu_layout") or {}
    md = "Run %d of %d:\n\n" % (index + 1, count) if count > 1 else ""
    finished = text_of(run, "finished")
    fraction = float(text_of(run, "rate_fraction") or "0.7")
    md += header(["", ""]) + "".join(row(r) for r in (
        ["Machine", "%s, %s CPUs, %s" % (text_of(machine, "model"), text_of(machine, "cpus"),
                                         text_of(machine, "kernel"))],
        ["Date", text_of(run, "started") + (" to " + finished if finished else "")],
        ["Command", "`%s`" % text_of(run, "command")],
        ["Plan", "%s, %s cases x %s repetition(s), interleaved" % (
            text_of(run, "plan"), text_of(run, "cases"), text_of(run, "repeat"))],
        ["Durations", "idle %s s, warm-up %s s, window %s s" % (
            text_of(run, "idle_s"), text_of(run, "warmup_s"), text_of(run, "window_s"))],
        ["Load", "closed loop %s connections/route; fixed rate = %s%% of the inline saturating "
                 "total (per route: that / 3)" % (text_of(run, "conns"), fixed(fraction * 100, 0))],
        ["CPU layout", "server CPUs %s, generator CPUs %s" % tuple(
            text_of(layout, k) or "unpinned" for k in ("server_cpus", "gen_cpus"))],
        ["Binaries", "`%s`, `%s`" % (text_of(run, "server"), text_of(run, "load"))],
        ["Status", text_of(run, "status")]))
    return md + "\n"


def render_markdown(rows, meta=None, charts=(), warnings=()):
    cs = group_configs(rows)
    runs = (meta or {}).get("runs")
    runs = [r if isinstance(r, dict) else {} for r in runs] if isinstance(runs, list) else None
    md = "# knit-bench report\n\nRendered from `rows.jsonl` alone (%d rows%s); nothing was " \
         "re-measured.\n\n" % (len(rows), "" if runs is None else
                                ", plus `meta.json` for the run context")
    if runs:
        md += "".join(run_header(r, i, len(runs)) for i, r in enumerate(runs))
    else:
        md += ("No `meta.json` beside the rows: machine, date, command line and CPU layout are "
               "unknown.")
        w = next((s for s in (c.stat(lambda r: r.get("window_s")) for c in cs) if s), None)
        i = next((s for s in (c.stat(lambda r: r.get("idle_s")) for c in cs) if s), None)
        if w or i:
            md += " Durations from the rows: idle %s s, window %s s." % (
                shortest(i.median) if i else "?", shortest(w.median) if w else "?")
        md += "\n\n"
    prof, sweep_prof = profiles(cs, False), profiles(cs, True)
    names = [p or "not recorded" for p in prof] + [
        (p or "not recorded") + " (cost sweep)" for p in sweep_prof if p not in prof]
    md += "Cost profile(s): %s.\n\n" % (", ".join(names) or "none")
    md += ("Columns: *idle cores* is server CPU with no load offered; *server cores* is server "
           "CPU-seconds over the window divided by its length; *CPU-us/req* is server CPU per "
           "request served. Latencies are in ms. The *default policy* is the library default "
           "(spin 50us at one worker, none above); the *old default* spins N*50us and parks "
           "1ms.\n\n")
    if any(len(c.reps) > 1 for c in cs):
        md += "Repeated configurations show the median, with min–max in parentheses.\n\n"
    if any("default" in (r["spin"], r["park"]) or r["tag"] == "only" for r in rows):
        md += ("Some rows use the reference benchmark's schema (see `docs/reference-server.md`): "
               "tag `only` is the inline server; spin `default` is the old default (N*50us, park "
               "1ms), which is also the default policy at N=1; spin `0` is the default policy at "
               "N>=2.\n\n")
    md += "".join("> Warning: %s\n\n" % w for w in warnings)
    md += mismatch_notes(rows) + foreign_load_note(rows)
    for p in prof:
        # The tables below are over one host; a profile measured only with more is in the
        # "Many event loops" section alone.
        if 1 not in host_counts(cs, p):
            continue
        sat, rate = scope(p, "sat"), scope(p, "rate")
        md += "## Cost profile: %s\n\n" % (p or "not recorded (reference benchmark rows)")
        md += section_a(cs, sat) + section_b(cs, rate) + peers_section(cs, sat, rate)
        md += section_c(cs, sat, rate) + pool_counter_section(cs, p)
        mine = [(t, f) for sec, t, f in charts if sec == "profile:" + p]
        md += "### Charts\n\n" if mine else ""
        md += "".join("![%s](%s)\n\n" % tf for tf in mine)
    md += "".join(hosts_section(cs, p, charts) for p in prof)
    md += "".join(fleet_section(cs, p) for p in prof)
    md += pipelined_section(cs)
    return md + "".join(sweep_section(cs, p, charts) for p in sweep_prof)


def write_report(rows_path, with_charts=True):
    """Writes report.md (and charts/) beside rows_path; returns (its path, warnings)."""
    rows = read_rows(rows_path)
    d = os.path.dirname(os.path.abspath(rows_path))
    meta, warnings = None, []
    if os.path.exists(os.path.join(d, "meta.json")):
        try:
            with open(os.path.join(d, "meta.json"), encoding="utf-8") as f:
                meta = json.load(f)
            meta = meta if isinstance(meta, dict) else None
        except ValueError as e:
            warnings.append("meta.json: %s" % e)
    charts = []
    if with_charts:
        charts, chart_warnings = render_charts(group_configs(rows), d)
        warnings += chart_warnings
    out = os.path.join(d, "report.md")
    with open(out, "w", encoding="utf-8") as f:
        f.write(render_markdown(rows, meta, charts, warnings))
    return out, warnings


def main(argv):
    args = [a for a in argv if a != "--no-charts"]
    if len(args) != 1:
        print("usage: report.py DIR/rows.jsonl [--no-charts]", file=sys.stderr)
        return 2
    try:
        out, warnings = write_report(args[0], "--no-charts" not in argv)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("cannot render %s: %s" % (args[0], e), file=sys.stderr)
        return 1
    for w in warnings:
        print("warning: " + w)
    print("wrote " + out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
