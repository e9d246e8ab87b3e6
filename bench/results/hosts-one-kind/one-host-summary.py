#!/usr/bin/env python3
"""Medians of one-host.sh's output per build over all its pairs, and each pair's ratio to
BEFORE: one-host-summary.py < one-host-output.txt"""
import re, statistics, sys

rows, section = {}, None
for line in sys.stdin:
    m = re.match(r'== micro pair (\d+) (before|now|mine)', line)
    if m:
        section = m.groups()
        continue
    if not section or not line.startswith('peer/'):
        continue
    pair, side = section
    f = line.split()
    name = f[0].split('/')[1]
    if name == 'round_trip_back_to_back':
        key, value = 'round trip p50 us (lower is better)', float(f[-2])
    elif name == 'burst_64_in_flight':
        rate = f[-1].removesuffix('/s')
        scale = {'k': 1e-3, 'M': 1.0}.get(rate[-1], 1e-6)
        key, value = 'burst 64 M calls/s (higher is better)', float(rate.rstrip('kM')) * scale
    elif name == 'steady_stream_host_cpu':
        key, value = 'steady host CPU us/call (lower is better)', float(f[-1])
    else:
        continue
    rows.setdefault(key, {}).setdefault(pair, {}).setdefault(side, []).append(value)

print('| row | pair | before | now | mine | now/before | mine/before |')
print('|---|---:|---:|---:|---:|---:|---:|')
for key, pairs in rows.items():
    overall = {s: [] for s in ('before', 'now', 'mine')}
    for pair in sorted(pairs, key=int):
        med = {s: statistics.median(v) for s, v in pairs[pair].items()}
        for s, v in pairs[pair].items():
            overall[s] += v
        if len(med) == 3:
            print(f"| {key} | {pair} | {med['before']:.3g} | {med['now']:.3g} | {med['mine']:.3g}"
                  f" | {med['now'] / med['before']:.2f} | {med['mine'] / med['before']:.2f} |")
    med = {s: statistics.median(v) for s, v in overall.items() if v}
    if len(med) == 3:
        print(f"| {key} | all | {med['before']:.3g} | {med['now']:.3g} | {med['mine']:.3g}"
              f" | {med['now'] / med['before']:.2f} | {med['mine'] / med['before']:.2f} |")
