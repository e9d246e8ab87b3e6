#!/usr/bin/env python3
"""Medians per pair from run.sh's output (run-output.txt): summarize.py < run-output.txt"""
import re, statistics, sys

def num(text):
    scale = {'k': 1e3, 'M': 1e6}.get(text[-1], 1)
    return float(text.rstrip('kM')) * scale


section, rows = None, {}
for line in sys.stdin:
    m = re.match(r'== (micro|share|victim) pair (\d) (before|after)', line)
    if m:
        section = m.groups()
        continue
    if not section:
        continue
    kind, pair, side = section
    f = line.split()
    if kind == 'micro' and line.startswith('peer/'):
        name = f[0].split('/')[1]
        if name == 'round_trip_back_to_back':
            rows.setdefault((kind, name + ' p50_us', pair, side), []).append(num(f[-2]))
            rows.setdefault((kind, name + ' p99_us', pair, side), []).append(num(f[-1]))
        elif name == 'steady_stream_host_cpu':
            rows.setdefault((kind, name + ' host_cpu_us_per_call', pair, side), []).append(num(f[-1]))
        elif name == 'burst_64_in_flight':
            rows.setdefault((kind, name + ' ns_per_call', pair, side), []).append(num(f[1]))
    elif kind == 'share' and line.startswith('host '):
        rows.setdefault((kind, 'host %s share' % f[1], pair, side), []).append(num(f[-1]))
    elif kind == 'victim' and line.startswith('victim '):
        rows.setdefault((kind, 'victim p50_us', pair, side), []).append(float(f[4]))
        rows.setdefault((kind, 'victim p99_us', pair, side), []).append(float(f[6].rstrip(';')))
        rows.setdefault((kind, 'victim calls', pair, side), []).append(float(f[2].rstrip(';')))

names = sorted({(k, n) for k, n, _, _ in rows}, key=lambda x: ('micro share victim'.index(x[0]), x[1]))
print('| what | pair | before | after | after/before |')
print('|---|---:|---:|---:|---:|')
for kind, name in names:
    for pair in sorted({p for k, n, p, _ in rows if (k, n) == (kind, name)}):
        b = statistics.median(rows[(kind, name, pair, 'before')])
        a = statistics.median(rows[(kind, name, pair, 'after')])
        print('| %s | %s | %.3g | %.3g | %.2f |' % (name, pair, b, a, a / b if b else 0))
