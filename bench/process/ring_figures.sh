#!/usr/bin/env bash
# The process workers' figures (the ring: each host calls its children through shared
# memory, no worker thread between) against a thread worker, and optionally a peer build,
# interleaved in one run: read the ratios.
# Writes into OUT (default bench/results/process-ring):
#   hop.txt           knit-process-hop ring | thread (+ the peer's ring, given PEER_DIR), one
#                     call at a time, 0 B and 64 KiB, spin 0 and 20 us, REPS rounds interleaved
#   hop-strace-*.txt  system calls per call (strace -f -c, spin 0, 2,000 calls)
#   bench.txt         knit-process-bench (round trip, burst, 64 KiB): this build (+ the peer's)
#   server/           knit-bench of bench/process/ring_plan.json (knit-server pooled, one
#                     worker: thread, process, process without sandbox; saturating and fixed
#                     rate; server on CPU 0, knit-load on CPU 1), summarised in
#                     server-summary.txt
#   machine.txt       load average before and after each part
#
#   bench/process/ring_figures.sh [PEER_DIR] [OUT]
#     PEER_DIR: a directory with a peer build's knit-process-hop (with the ring mode) and
#     knit-process-bench; "" (the default) runs this build alone.
# Environment: BIN (this build's binaries, build/bin; also the server part's, through
# server_plan.sh); PARTS=hop,bench,server (default all); REPS (3); CALLS (5000, hop); ITER
# (5000, knit-process-bench); WINDOW_S (the plan's window, 8; the issue asks 30); the server
# part drives this build's knit-bench (bench/process/server_plan.sh), the peer is only in
# the hop and bench parts.
set -euo pipefail
cd "$(dirname "$0")/../.."
PEER=${1:-}
OUT=${2:-bench/results/process-ring}
BIN=${BIN:-build/bin}
PARTS=${PARTS:-hop,bench,server}
REPS=${REPS:-3}
CALLS=${CALLS:-5000}
ITER=${ITER:-5000}
WINDOW_S=${WINDOW_S:-8}
part() { case ",$PARTS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
mkdir -p "$OUT"
machine() { echo "# $1 $(date -u +%FT%TZ) load average $(cut -d' ' -f1-3 /proc/loadavg)"; }
echo "# $(git rev-parse --short HEAD) ($(git status --porcelain | wc -l) files changed)," \
  "peer ${PEER:-none}" >>"$OUT/machine.txt"

if part hop; then
  {
    machine "hop before"
    for rep in $(seq "$REPS"); do
      for spin in 0 20; do
        for bytes in 0 65536; do
          if [ -n "$PEER" ]; then
            "$PEER/knit-process-hop" ring "$CALLS" $bytes $spin | sed 's/^ring  /peer-ring/'
          fi
          for mode in ring thread; do
            "$BIN/knit-process-hop" $mode "$CALLS" $bytes $spin
          done
        done
      done
    done
    machine "hop after"
  } >"$OUT/hop.txt" 2>&1
  if command -v strace >/dev/null; then
    for mode in ring thread; do
      strace -f -c -o "$OUT/hop-strace-$mode.txt" "$BIN/knit-process-hop" $mode 2000 0 0 \
        >"$OUT/hop-strace-$mode.out" 2>&1 || true
    done
  fi
  machine "hop done" >>"$OUT/machine.txt"
fi

if part bench; then
  {
    machine "bench before"
    for rep in $(seq "$REPS"); do
      if [ -n "$PEER" ]; then
        echo "## rep $rep: peer"
        "$PEER/knit-process-bench" "$ITER"
      fi
      echo "## rep $rep: this build"
      "$BIN/knit-process-bench" "$ITER"
    done
    machine "bench after"
  } >"$OUT/bench.txt" 2>&1
fi

if part server; then
  machine "server before" >>"$OUT/machine.txt"
  bench/process/server_plan.sh bench/process/ring_plan.json "$OUT" "$WINDOW_S" "$REPS"
  python3 - "$OUT/server/rows.jsonl" >"$OUT/server-summary.txt" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault((r["tag"], r["mode"]), {})[r["rep"]] = r
def heavy(r): return r["routes"]["ssr"]["rps"] + r["routes"]["jwt"]["rps"]
print("case                 mode  rep  heavy_rps  cpu_us_per_req  ssr_p99_ms  server_cores")
for (tag, mode), reps in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    for rep, r in sorted(reps.items()):
        print(f"{tag:20s} {mode:5s} {rep:3d} {heavy(r):10.0f} {r['cpu_us_per_req']:15.1f} "
              f"{r['routes']['ssr']['p99']:11.2f} {r['cores']:13.2f}")
def ratio(a, b, f):
    per = [f(by[a][k]) / f(by[b][k]) for k in sorted(by.get(a, {})) if k in by.get(b, {})]
    return (statistics.median(per), per) if per else (float("nan"), [])
print()
for label, a, b, f in [
    ("saturating heavy rps, ring / thread", ("ring-t1", "sat"), ("thread-t1", "sat"), heavy),
    ("saturating heavy rps per server core, ring / thread", ("ring-t1", "sat"),
     ("thread-t1", "sat"), lambda r: heavy(r) / r["cores"]),
    ("fixed-rate CPU-us/req, ring / thread", ("ring-t1", "rate"), ("thread-t1", "rate"),
     lambda r: r["cpu_us_per_req"]),
    ("fixed-rate CPU-us/req, ring sandbox strict / off", ("ring-t1", "rate"),
     ("ring-nosandbox-t1", "rate"), lambda r: r["cpu_us_per_req"]),
]:
    med, per = ratio(a, b, f)
    print(f"{label}: median {med:.3f} (per repetition {' / '.join(f'{x:.3f}' for x in per)})")
PY
  machine "server after" >>"$OUT/machine.txt"
fi
