#!/usr/bin/env bash
# Several knit-micro builds interleaved in one run, for ratios on a noisy machine: each pair
# runs every build once, in the order given, and a pair is repeated PAIRS times; each build is
# pinned to CPUS (knit-micro pins its host and its worker to one CPU each inside that) and
# runs the benchmark rows FILTER selects (knit-micro repeats each row 3 times). Before each
# build it prints `== micro pair P LABEL (BIN) load: ...`, then knit-micro's peer/ lines;
# bench/tools/micro_pairs_summary.py turns that into medians and ratios to the first build.
# The header line ends with the machine's cache-line round trip, measured just before.
#
#   bench/tools/micro_pairs.sh [-n PAIRS] [-f FILTER] [-c CPUS] LABEL=KNIT_MICRO...
#     defaults: 3 pairs; CPUs 0-1; FILTER the knit peer rows of one host's cost:
#     peer/(round_trip_back_to_back|burst_64_in_flight|steady_stream_host_cpu)/knit
#   e.g. bench/tools/micro_pairs.sh before=/tmp/knit-micro-old after=build/bin/knit-micro \
#          > out.txt && bench/tools/micro_pairs_summary.py < out.txt
set -uo pipefail
pairs=3
filter='peer/(round_trip_back_to_back|burst_64_in_flight|steady_stream_host_cpu)/knit'
cpus=0-1
usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
while getopts "n:f:c:h" opt; do
  case $opt in
    n) pairs=$OPTARG ;;
    f) filter=$OPTARG ;;
    c) cpus=$OPTARG ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { usage >&2; exit 2; }
for build in "$@"; do
  case $build in
    ?*=?*) ;;
    *) echo "micro_pairs.sh: '$build' is not LABEL=KNIT_MICRO" >&2; exit 2 ;;
  esac
done
echo "== $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg); nproc $(nproc)"
lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node0)'
for pair in $(seq 1 "$pairs"); do
  for build in "$@"; do
    label=${build%%=*} bin=${build#*=}
    # The machine's own floor right before each build's rows: this VM's two vCPUs move
    # between placements whose cache-line round trip differs ~4x (~110 ns against ~470 ns),
    # and every runtime's hand-off moves with it: compare builds within a pair whose floors
    # agree.
    floor=$(taskset -c "$cpus" "$bin" --benchmark_filter='^floor_cache_line_ping_pong' \
              2>/dev/null | awk '/^floor_cache_line_ping_pong/ {print $2}')
    echo "== micro pair $pair $label ($bin) load: $(cut -d' ' -f1-3 /proc/loadavg) floor: ${floor:-?} ns"
    taskset -c "$cpus" "$bin" --benchmark_filter="$filter" 2>/dev/null | grep -E '^peer/'
  done
done
echo "== $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
