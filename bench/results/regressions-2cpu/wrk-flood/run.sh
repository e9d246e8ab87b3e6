#!/usr/bin/env bash
# wrk (a third-party load generator) as the retry flood: 300 connections re-send POST /ssr
# after each answer, 503 or 200; 1 worker, /ssr at 2 ms; server on CPU 0, wrk on CPU 1.
set -uo pipefail
for rep in 1 2; do
for b in main=/tmp/knit-server-main2 574c365=/work/peer-574c365/knit-server; do
  name=${b%%=*}; bin=${b#*=}
  port=$((20000 + RANDOM % 20000))
  PORT=$port KNIT_MODE=pooled KNIT_THREADS=1 KNIT_COST_PROFILE=native KNIT_SSR_COST_US=2000 \
    JWT_SECRET=x taskset -c 0 "$bin" >/dev/null 2>/tmp/wrk-srv.err & pid=$!
  for i in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/ping" && break; sleep 0.1; done
  out=$(taskset -c 1 wrk -t1 -c300 -d8s --timeout 5s -s ssr.lua "http://127.0.0.1:$port/ssr" 2>&1 | grep -E "requests|Non-2xx|Requests/sec")
  m=$(curl -s "http://127.0.0.1:$port/metrics" | grep -E '^knit_admission_refusals_total\{reason="queue_wait"\}|^knit_admission_refusals_total\{reason="queue_delay"\}' | tr '\n' ' ')
  ping=$(curl -s -o /dev/null -w '%{http_code} %{time_total}s' "http://127.0.0.1:$port/ping")
  kill -TERM $pid; wait $pid; rc=$?
  echo "rep $rep $name: $(echo $out | tr '\n' ' ') | $m| /ping after: $ping | exit $rc"
done; done
