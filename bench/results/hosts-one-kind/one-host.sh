#!/usr/bin/env bash
# One host's cost, three builds interleaved in one run: knit-micro's knit peer rows
# (back-to-back round trip, burst of 64 in flight, steady-stream host CPU; 3 repetitions
# each) for BEFORE (58ff45c: host 0's single-producer done rings), NOW (574c365: host 0 a
# host_state like any other) and MINE, in turn, PAIRS times, pinned to CPUs 0-1 as run.sh
# is (knit-micro pins its host and its worker to one CPU each inside that). Then the medians
# and MINE/BEFORE, NOW/BEFORE (one-host-summary.py).
#   one-host.sh MINE [BEFORE] [NOW] [PAIRS]    (defaults: the peer binaries, 3 pairs)
set -uo pipefail
mine=${1:?usage: one-host.sh MINE [BEFORE] [NOW] [PAIRS]}
before=${2:-/work/peer-58ff45c/knit-micro}
now=${3:-/work/peer-574c365/knit-micro}
pairs=${4:-3}
rows='peer/(round_trip_back_to_back|burst_64_in_flight|steady_stream_host_cpu)/knit'
echo "== $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg); nproc $(nproc)"
lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node0)'
for pair in $(seq 1 "$pairs"); do
  for side in before now mine; do
    case $side in before) bin=$before ;; now) bin=$now ;; mine) bin=$mine ;; esac
    echo "== micro pair $pair $side ($bin) load: $(cut -d' ' -f1-3 /proc/loadavg)"
    taskset -c 0-1 "$bin" --benchmark_filter="$rows" 2>/dev/null | grep -E '^peer/'
  done
done
echo "== $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
