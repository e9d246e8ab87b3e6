#!/usr/bin/env bash
# Runs knit-load and wrk back to back on one URL (closed loop, same connections, same CPUs) and
# fails when knit-load's requests/s is more than 10% off wrk's.
#
# usage: validate_vs_wrk.sh URL CONNS DURATION_S CPULIST [THREADS]
#   URL         http://host:port/path (plain HTTP, GET)
#   CONNS       connections for both tools
#   DURATION_S  whole seconds per run
#   CPULIST     taskset -c list both tools are pinned to, e.g. "1" or "0,1"
#   THREADS     event-loop threads for both tools (default 1; wrk needs THREADS <= CONNS)
# env: KNIT_LOAD (default: <repo>/build/bin/knit-load), WRK (default: wrk),
#      TOLERANCE (default 0.10), REPEAT (default 1: pairs run alternately, medians compared)
set -euo pipefail

if [[ $# -lt 4 ]]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
url=$1 conns=$2 duration=$3 cpus=$4 threads=${5:-1}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
knit_load=${KNIT_LOAD:-$here/../../build/bin/knit-load}
wrk=${WRK:-wrk}
tolerance=${TOLERANCE:-0.10}
repeat=${REPEAT:-1}

[[ $duration =~ ^[0-9]+$ ]] || { echo "DURATION_S must be whole seconds (wrk's -d)" >&2; exit 2; }
[[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "REPEAT must be a positive integer" >&2; exit 2; }
[[ -x $knit_load ]] || { echo "knit-load not found at $knit_load (set KNIT_LOAD)" >&2; exit 2; }
command -v "$wrk" >/dev/null || { echo "wrk not found" >&2; exit 2; }

# Split http://host[:port][/path] for knit-load's flags.
rest=${url#http://}
[[ $rest != "$url" ]] || { echo "URL must start with http://" >&2; exit 2; }
hostport=${rest%%/*}
if [[ $rest == */* ]]; then path=/${rest#*/}; else path=/; fi
if [[ $hostport == *:* ]]; then host=${hostport%:*} port=${hostport##*:}; else host=$hostport port=80; fi
host=${host#[}; host=${host%]}

json_field() {  # json_field NAME JSON: first numeric value of "NAME", as a plain decimal
  grep -o "\"$1\":[-0-9.eE+]*" <<<"$2" | head -1 | cut -d: -f2 | awk '{printf "%.2f", $1}'
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "== $url: -c $conns, ${duration}s, $threads thread(s), cpus $cpus, $repeat pair(s)"
knit_all=() wrk_all=()
for ((i = 1; i <= repeat; i++)); do
  knit_json=$(taskset -c "$cpus" "$knit_load" --host "$host" --port "$port" --duration "$duration" \
    --threads "$threads" --json - --route "v:GET:$path:$conns" 2>/dev/null)
  knit_rps=$(json_field requestsPerSec "$knit_json")
  [[ -n $knit_rps ]] || { echo "could not read knit-load's result: $knit_json" >&2; exit 1; }
  echo "knit-load: $knit_rps req/s ($(json_field errors "$knit_json" | cut -d. -f1) errors," \
    "generator $(json_field gen_cores "$knit_json") cores)"
  knit_all+=("$knit_rps")
  sleep 1  # let the server drain the closed connections before the next tool connects

  wrk_out=$(taskset -c "$cpus" "$wrk" -t "$threads" -c "$conns" -d "${duration}s" "$url")
  wrk_rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$wrk_out")
  [[ -n $wrk_rps ]] || { echo "could not read wrk's result:" >&2; echo "$wrk_out" >&2; exit 1; }
  echo "wrk:       $wrk_rps req/s $(grep -E 'Socket errors|Non-2xx' <<<"$wrk_out" | tr '\n' ' ')"
  wrk_all+=("$wrk_rps")
  ((i < repeat)) && sleep 1
done

knit_med=$(printf '%s\n' "${knit_all[@]}" | median)
wrk_med=$(printf '%s\n' "${wrk_all[@]}" | median)
awk -v k="$knit_med" -v w="$wrk_med" -v tol="$tolerance" -v n="$repeat" 'BEGIN {
  if (w <= 0) { print "wrk reported no requests"; exit 1 }
  r = k / w
  if (n > 1) printf "medians: knit-load %.2f, wrk %.2f req/s\n", k, w
  printf "ratio knit-load/wrk: %.3f (tolerance +-%.0f%%)\n", r, tol * 100
  if (r < 1 - tol || r > 1 + tol) { print "FAIL: knit-load is more than the tolerance off wrk"; exit 1 }
  print "OK"
}'
