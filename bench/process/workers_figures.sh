#!/usr/bin/env bash
# The process workers' figures, thread against process workers and this build against a
# peer build, each A/B pair interleaved in one run (the machine may be shared: read the
# ratios, not the absolute numbers). Writes into OUT (default bench/results/process-workers):
#   server/          knit-bench run of bench/process/workers_plan.json (knit-server pooled,
#                    one worker, thread vs process workers, sandbox strict vs off; server on
#                    CPU 0, knit-load on CPU 1), summarised in server-summary.txt
#   round-trip-*.txt knit-process-bench 20000, this build and the peer's, alternating x3
#   recovery-*.txt   knit-process-recovery: kills under load (this build, the peer's), and
#                    idle kills (this build: the first call on a replacement that is up)
#   hop.txt, hop-strace-*.txt  knit-process-hop: CPU, sleeps and system calls per call, hop
#                    by hop (ring and thread)
#   machine.txt      CPUs, core layout, load average before and after
#
#   bench/process/workers_figures.sh [PEER_DIR] [OUT]
#     PEER_DIR: a directory with the peer's knit-process-bench and knit-process-recovery,
#     and the knit-bench that drives the server with this build's knit-load (default
#     /work/peer-58ff45c; the harness is the same in both builds).
# Takes about 7 minutes on 2 CPUs. BIN: this build's binaries (default build/bin).
# PARTS=server,round-trip,recovery,hop (the default: all) runs only the parts named.
set -euo pipefail
cd "$(dirname "$0")/../.."
PEER=${1:-/work/peer-58ff45c}
OUT=${2:-bench/results/process-workers}
BIN=${BIN:-build/bin}
PARTS=${PARTS:-server,round-trip,recovery,hop}
part() { case ",$PARTS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
for b in "$BIN/knit-server" "$BIN/knit-load" "$BIN/knit-process-bench" "$BIN/knit-process-recovery" \
  "$PEER/knit-process-bench" "$PEER/knit-process-recovery" "$PEER/knit-bench"; do
  [ -x "$b" ] || { echo "workers_figures.sh: $b is missing" >&2; exit 2; }
done
mkdir -p "$OUT"
machine() {
  echo "# $1 $(date -u +%FT%TZ) load average $(cut -d' ' -f1-3 /proc/loadavg)"
}
{
  echo "# $(git rev-parse --short HEAD) ($(git status --porcelain | wc -l) files changed), peer $PEER"
  machine before
  echo "nproc: $(nproc)"
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node'
  lscpu -e=CPU,CORE,SOCKET,NODE
} >>"$OUT/machine.txt"

# 1. knit-server, thread vs process workers (about 3 minutes).
if part server; then
rm -rf "$OUT/server"
"$PEER/knit-bench" run --plan bench/process/workers_plan.json --server "$BIN/knit-server" \
  --load "$BIN/knit-load" --server-cpus 0 --gen-cpus 1 --foreign-retries 0 --no-charts \
  --out "$OUT/server" >"$OUT/server-run.log" 2>&1 || { tail -20 "$OUT/server-run.log" >&2; exit 1; }
python3 - "$OUT/server/rows.jsonl" >"$OUT/server-summary.txt" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault((r["tag"], r["mode"]), {})[r["rep"]] = r
def heavy(r): return r["routes"]["ssr"]["rps"] + r["routes"]["jwt"]["rps"]
def ok(r): return min(v["ok"] for v in r["routes"].values())
print("case                          mode  rep  heavy_rps  total_rps  cpu_us_per_req  ssr_p99_ms  ok"
      "     server_cores  foreign_cores")
for (tag, mode), reps in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    for rep, r in sorted(reps.items()):
        print(f"{tag:29s} {mode:5s} {rep:3d} {heavy(r):10.0f} {r['total_rps']:10.0f} "
              f"{r['cpu_us_per_req']:15.1f} {r['routes']['ssr']['p99']:11.2f} {ok(r):.3f} "
              f"{r['cores']:16.2f} {r.get('foreign_cores', 0):14.2f}")
def ratios(a, b, f):
    out = [f(by[a][k]) / f(by[b][k]) for k in sorted(by[a]) if k in by[b]]
    return out, statistics.median(out)
print()
for label, a, b, f in [
    ("saturating heavy rps, process / thread", ("process-t1", "sat"), ("thread-t1", "sat"), heavy),
    # The server shares CPU 0 with whatever else runs: per core of CPU it got, too.
    ("saturating heavy rps per server core, process / thread", ("process-t1", "sat"),
     ("thread-t1", "sat"), lambda r: heavy(r) / r["cores"]),
    ("fixed-rate CPU-us/req, process / thread", ("process-t1", "rate"), ("thread-t1", "rate"),
     lambda r: r["cpu_us_per_req"]),
    ("fixed-rate CPU-us/req, sandbox strict / off", ("process-t1", "rate"),
     ("process-t1-sandbox-off", "rate"), lambda r: r["cpu_us_per_req"]),
]:
    per, med = ratios(a, b, f)
    print(f"{label}: median {med:.3f} (per repetition {' / '.join(f'{x:.3f}' for x in per)})")
PY
fi

# 2. knit-process-bench, this build and the peer's, alternating.
part round-trip && for i in 1 2 3; do
  for who in this peer; do
    exe=$BIN/knit-process-bench; [ $who = peer ] && exe=$PEER/knit-process-bench
    { machine "$exe"; "$exe" 20000; } >"$OUT/round-trip-$who-run$i.txt" 2>&1
  done
done
part round-trip && python3 bench/process/round_trip_summary.py "$OUT" >"$OUT/round-trip-summary.txt"

# 3. Recovery: kills under load, this build and the peer's, then idle kills (this build).
if part recovery; then
for who in this peer; do
  exe=$BIN/knit-process-recovery; [ $who = peer ] && exe=$PEER/knit-process-recovery
  { machine "$exe"; "$exe" --kills 100; } >"$OUT/recovery-under-load-$who.txt" 2>&1 || true
done
{ machine "$BIN/knit-process-recovery --idle-kills"; "$BIN/knit-process-recovery" --kills 100 --idle-kills; } \
  >"$OUT/recovery-idle-kills-this.txt" 2>&1 || true
fi
# 4. The hop: one call at a time from the calling thread to the child through its ring
# (ring) against a thread task (thread); spin 0 (every wait a sleep) and the default 20 µs;
# then the system calls per call under strace -f -c.
if part hop; then
{
  machine knit-process-hop
  for spin in 0 20; do
    for bytes in 0 65536; do
      for mode in ring thread; do "$BIN/knit-process-hop" $mode 10000 $bytes $spin; done
    done
  done
} >"$OUT/hop.txt" 2>&1
if command -v strace >/dev/null; then
  for mode in ring thread; do
    strace -f -c -o "$OUT/hop-strace-$mode.txt" "$BIN/knit-process-hop" $mode 2000 0 0 \
      >"$OUT/hop-strace-$mode.out" 2>&1 || true
  done
fi
fi
machine after >>"$OUT/machine.txt"
echo "workers_figures.sh: done; $OUT"
