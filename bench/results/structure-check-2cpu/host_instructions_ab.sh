#!/bin/bash
# Host-thread instructions per request, callgrind, baseline vs new knit-server (pooled, 1 worker).
set -u
B=/tmp/meas/default14/bodies
run() { # name bin mode port
  local name=$1 bin=$2 mode=$3 port=$4
  rm -f /tmp/cg/$name.out*
  KNIT_MODE=$mode KNIT_THREADS=1 KNIT_COST_PROFILE=bun PORT=$port valgrind --tool=callgrind --separate-threads=yes \
     --callgrind-out-file=/tmp/cg/$name.out $bin > /tmp/cg/$name.srv.log 2>&1 &
  local pid=$!
  for i in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:$port/ping && break; sleep 0.3; done
  /work/main/build/bin/knit-load --port $port --duration 10 --json /tmp/cg/$name.load.json \
     --route ping:GET:/ping:4:600 --route ssr:POST:/ssr:4:600:$B/ssr.json --route jwt:POST:/jwt:4:600:$B/jwt.json >/dev/null 2>&1
  kill -TERM $pid; wait $pid
  local req=$(python3 -c "import json;d=json.load(open('/tmp/cg/$name.load.json'));print(sum(r['summary']['requests'] for r in d['routes'].values()))")
  for f in /tmp/cg/$name.out*; do
    ir=$(grep -m1 '^summary:' $f | awk '{print $2}'); [ -z "$ir" ] && ir=$(grep -m1 '^totals:' $f | awk '{print $2}')
    echo "$name $(basename $f) requests=$req Ir=$ir Ir/req=$((ir / (req>0?req:1)))"
  done
}
run old-t1 /work/baseline/knit-server pooled 4101
run new-t1 /work/main/build/bin/knit-server pooled 4102
run old-a1 /work/baseline/knit-server asio 4103
run new-a1 /work/main/build/bin/knit-server asio 4104
