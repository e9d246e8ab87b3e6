#!/usr/bin/env bash
# hosts_sweep.sh: the hosts sweep (bench/plans/hosts-sweep.json: H in {1,2,4,8} hosts x W in
# {1,2,4,8} workers, knit against inline with H hosts and asio with H hosts and W threads)
# on this machine, into bench/results/hosts-sweep-<ncpu>cpu/, and prints where.
#
# usage: bench/hosts_sweep.sh [--small] [BUILD_DIR] [-- knit-bench run options...]
#   --small     the shrunken grid (hosts-sweep-small.json: H in {1,2} x W = 1, about 2 min on
#               2 CPUs); results in bench/results/hosts-sweep-small-<ncpu>cpu/
#   BUILD_DIR   where knit-bench, knit-server and knit-load were built (default: build)
#
# Layout: the server on CPUs 0..N/2-1, the generator (knit-load) on N/2..N-1, never shared
# (the plan's separate_cpus makes knit-bench refuse overlapping sets). Halves rather than
# knit-bench's default quarter: at H = 8, W = 8 the server runs 16 threads that should all
# find work, and the generator must keep 8 event loops saturated without being the limit;
# every row records the generator's cores (gen_cores) and the report names rows where it
# used 90% of its CPUs. On 2 CPUs that is server 0, generator 1, as every other table here.
# The sweep needs a knit-server that reads KNIT_HOSTS; rows of one that does not are kept
# and the report warns (knit-stats lists fewer hosts than asked).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

plan=hosts-sweep
build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --small) plan=hosts-sweep-small; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "hosts_sweep.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done

bench="$build/bin/knit-bench"
for bin in knit-bench knit-server knit-load; do
  [ -x "$build/bin/$bin" ] || {
    echo "hosts_sweep.sh: $build/bin/$bin is missing: build it first" \
         "(cmake --build $build --target knit-bench knit-server knit-load)" >&2
    exit 2
  }
done

ncpu=$(nproc)
if [ "$ncpu" -lt 2 ]; then
  echo "hosts_sweep.sh: needs at least 2 CPUs (the generator runs on CPUs of its own)" >&2
  exit 2
fi
half=$((ncpu / 2))
server_cpus="0-$((half - 1))"
gen_cpus="$half-$((ncpu - 1))"
[ "$half" -eq 1 ] && server_cpus=0
[ "$half" -eq $((ncpu - 1)) ] && gen_cpus=$half

out="bench/results/${plan}-${ncpu}cpu"
if [ -e "$out/rows.jsonl" ]; then
  echo "hosts_sweep.sh: $out/rows.jsonl exists; move it away (or pass -- --append)" >&2
  case " $* " in *" --append "*) ;; *) exit 2 ;; esac
fi

echo "hosts_sweep.sh: $plan on $ncpu CPUs: server CPUs $server_cpus, generator CPUs $gen_cpus"
"$bench" plan "--$plan" > /dev/null  # prints the plan's time estimate
status=0
"$bench" run --plan "bench/plans/$plan.json" --out "$out" \
  --server-cpus "$server_cpus" --gen-cpus "$gen_cpus" "$@" || status=$?
echo "hosts_sweep.sh: rows $out/rows.jsonl, report $out/report.md, charts $out/charts/" \
     "(knit-bench exit $status)"
exit "$status"
