# Summarises a worker-sched run: per tag and mode, median (min-max) over repetitions.
import json, sys, statistics
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
