"""The pipelined section: TechEmpower's plaintext test as knit-bench runs it (mode "pipelined":
wrk, 16 pipelined GET /plaintext per round trip, closed loop), knit-server's rows beside the
external peers' (nginx), and each knit row's ratios to each peer, paired by repetition."""
from configs import cell, header, paired_ratio, ratio_cell, row

ROUTE = "plaintext"


def responses(r):
    """Successful responses per second (the row's plaintext rps is already successes only)."""
    return (r["routes"].get(ROUTE) or {}).get("rps")


def cpu_us_per_response(r):
    """Server CPU per response in microseconds, unrounded: the row's integer cpu_us_per_req is
    too coarse at one or two microseconds."""
    rps = responses(r)
    return r["cores"] * 1e6 / rps if rps else None


def syscalls_per_response(r):
    return (r.get("cpu") or {}).get("syscalls_per_req")


def route_field(field):
    return lambda r: (r["routes"].get(ROUTE) or {}).get(field)


def depth(cs):
    """The pipelining depth: the last word of wrk's command line (wrk_run.cpp's wrk_argv)."""
    for c in cs:
        for r in c.reps:
            cmd = r.get("load_cmd") or []
            if cmd and str(cmd[-1]).isdigit():
                return int(cmd[-1])
    return None


# (column, value of a row, decimals, higher is better)
MEASURES = (("responses/s", responses, 0, True),
            ("CPU-us/response", cpu_us_per_response, 2, False),
            ("syscalls/response", syscalls_per_response, 3, False))


def pipelined_section(cs):
    ps = [c for c in cs if c.mode == "pipelined"]
    if not ps:
        return ""
    d = depth(ps)
    md = "## Pipelined: TechEmpower plaintext\n\n"
    md += ("wrk with %s pipelined `GET /plaintext` per round trip (`Hello, World!`, text/plain, "
           "with Server and Date), closed loop; the peers answer the same route. *responses/s* "
           "counts successful responses; *CPU-us/response* is server CPU per response; "
           "*syscalls/response* is the server's system calls (perf) per response; *slowest "
           "batch* is the longest from a batch's write to its last response, in ms (wrk's "
           "latency percentiles are wrong when pipelining, so there are none).\n\n"
           % (d if d is not None else "several"))
    md += header(["configuration", "responses/s", "server cores", "CPU-us/response",
                  "syscalls/response", "slowest batch", "ok"],
                 [False, True, True, True, True, True, True])
    for c in ps:
        md += row([c.label + c.mark(), cell(c.stat(responses), 0),
                   cell(c.stat(lambda r: r["cores"]), 2), cell(c.stat(cpu_us_per_response), 2),
                   cell(c.stat(syscalls_per_response), 3),
                   cell(c.stat(route_field("max")), 2), cell(c.stat(route_field("ok")), 2)])
    knit = [c for c in ps if c.policy != "peer"]
    peers = [c for c in ps if c.policy == "peer"]
    if knit and peers:
        md += "\nknit beside each peer, paired by repetition (above 1× knit is ahead):\n\n"
        for k in knit:
            for p in peers:
                cells = ["%s %s" % (name, ratio_cell(paired_ratio(k, p, f, better)))
                         for name, f, _, better in MEASURES]
                md += "- `%s` vs `%s`: %s\n" % (k.label, p.label, ", ".join(cells))
    return md + "\n"

