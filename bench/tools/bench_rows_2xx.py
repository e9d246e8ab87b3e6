#!/usr/bin/env python3
"""A knit-bench run's rows.jsonl as one markdown table: per configuration (tag) and load (mode,
e.g. sat / rate), the median (min-max) over repetitions of /ping rps and p99, the 2xx rps of
/ssr and /jwt (rps x the 2xx share: under saturation admission answers 503, which raw request
counts would hide), server cores, and how many windows knit-bench flagged for foreign load.
Needs a plan whose routes are named ping, ssr and jwt (bench/plans/).

  bench/tools/bench_rows_2xx.py ROWS_JSONL
"""
import json, sys, statistics
if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if len(sys.argv) == 2 else 2)
rows=[json.loads(l) for l in open(sys.argv[1])]
order=[]; by={}
for r in rows:
    k=(r['mode'],r['tag'])
    if k not in by: by[k]=[]; order.append(k)
    by[k].append(r)
def cell(vals,fmt):
    m=statistics.median(vals); return (fmt%m)+" ("+(fmt%min(vals))+"–"+(fmt%max(vals))+")"
print("| load | worker | /ping rps | /ping p99 ms | /ssr 2xx rps | /jwt 2xx rps | server cores | flagged |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for k in order:
    rs=by[k]
    f=sum(1 for r in rs if r.get('foreign_flagged'))
    print("| %s | %s | %s | %s | %s | %s | %s | %d/%d |"%(k[0],k[1],
      cell([r['routes']['ping']['rps'] for r in rs],'%.0f'),
      cell([r['routes']['ping']['p99'] for r in rs],'%.2f'),
      cell([r['routes']['ssr']['rps']*r['routes']['ssr']['ok'] for r in rs],'%.0f'),
      cell([r['routes']['jwt']['rps']*r['routes']['jwt']['ok'] for r in rs],'%.0f'),
      cell([r['cores'] for r in rs],'%.2f'), f, len(rs)))
