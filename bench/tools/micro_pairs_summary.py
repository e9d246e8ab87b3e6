#!/usr/bin/env python3
"""Medians of micro_pairs.sh's output: for each row of one peer (knit unless --peer names
another: round trip p50 and p99, burst of 64 in flight, steady-stream host CPU, CPU in the
second after a burst), each pair's median per build and its ratio to the first build, then the
same over all pairs (a markdown table); and the cache-line floor measured before each build,
where the header line gives it (compare a pair only where its floors agree), and the round
trip in units of that floor. Builds are the
labels of the `== micro pair P LABEL` lines, in the order they first appear.

With --vs-peers: one line per process (pair and build) and row, knit's median beside the
best other peer's, and how many times better knit is (> 1: knit wins; the best peer is the
lowest for a row where lower is better, the highest otherwise), as knit-micro's own table.

  bench/tools/micro_pairs_summary.py [--base LABEL] [--peer NAME] < MICRO_PAIRS_OUTPUT
  bench/tools/micro_pairs_summary.py --vs-peers < MICRO_PAIRS_OUTPUT
  bench/tools/micro_pairs_summary.py --by-floor < MICRO_PAIRS_OUTPUT

With --by-floor: the round trip in floors of every repetition, grouped by the band its
build's floor fell in (under 80 ns, 80-200 ns, over 200 ns: the speeds seen on the AMD
guest) and by build: count and median, so builds are compared at one speed of the machine.
"""
import argparse
import re
import statistics
import sys


def num(text):
    """A Google Benchmark counter as printed: 1.5, 2.4k, 1.2M, 122.9u, 3.1m."""
    scale = {'k': 1e3, 'M': 1e6, 'm': 1e-3, 'u': 1e-6, 'n': 1e-9}
    return float(text.rstrip('kMmun')) * scale.get(text[-1], 1)


def value_of(fields):
    """(row name, value) of one knit-micro `peer/...` line, or None for a row not summarised."""
    name = fields[0].split('/')[1]
    if name == 'round_trip_back_to_back':  # its last two counters: p50 and p99, µs
        return [('round trip p50 us (lower is better)', num(fields[-2])),
                ('round trip p99 us (lower is better)', num(fields[-1]))]
    if name == 'burst_64_in_flight':  # items/s, as Google Benchmark prints it (k, M suffix)
        rate = fields[-1].removesuffix('/s')
        scale = {'k': 1e-3, 'M': 1.0}.get(rate[-1], 1e-6)
        return [('burst 64 M calls/s (higher is better)', float(rate.rstrip('kM')) * scale)]
    if name == 'steady_stream_host_cpu':
        # Counters print in name order: [all_other_threads_cpu_us_per_call,] calls,
        # [host_blocks_per_call,] host_cpu_us_per_call (builds before 2026-12-06 lack the
        # first, before 2026-12-07 the third).
        rows = [('steady host CPU us/call (lower is better)', num(fields[-1]))]
        if len(fields) >= 10:
            rows.append(('steady other threads CPU us/call (work + idle)', num(fields[-4])))
            rows.append(('steady host blocks/call (lower is better)', num(fields[-2])))
        elif len(fields) >= 9:
            rows.append(('steady other threads CPU us/call (work + idle)', num(fields[-3])))
        return rows
    if name == 'idle_cpu_after_work':  # cores over the second after a burst: ms of CPU
        return [('CPU ms in the second after a burst (lower is better)', num(fields[-1]) * 1e3)]
    return None


FLOOR = 'cache-line floor ns (the machine, before the build)'
# The round trip in units of the floor printed before its build: comparable across the
# speeds a guest switches between (one whose floor moves between ~100 and ~330 ns).
IN_FLOORS = 'round trip p50 in floors (lower is better)'


def samples(lines):
    """(pair, build label, runtime, row, value) for each value micro_pairs.sh printed, in
    order; the floor on a section's header line comes with runtime None. A section with no
    value still yields (pair, label, None, None, None), so every build is named."""
    section, floor_ns = None, None
    for line in lines:
        m = re.match(r'== micro pair (\d+) (\S+)', line)
        if m:
            section = m.groups()
            floor = re.search(r'floor: ([0-9.]+) ns', line)  # the machine's, just before the build
            floor_ns = float(floor.group(1)) if floor else None
            if floor:
                yield (*section, None, FLOOR, floor_ns)
            else:
                yield (*section, None, None, None)
            continue
        if not section or not line.startswith('peer/'):
            continue
        for key, value in value_of(line.split()) or []:
            yield (*section, line.split('/')[2], key, value)
            if key.startswith('round trip p50') and floor_ns:
                yield (*section, line.split('/')[2], IN_FLOORS, value * 1e3 / floor_ns)


def vs_peers(lines):
    """Per process (pair, build) and row: knit, the best other peer, knit's advantage."""
    cells = {}  # (pair, label) -> row -> runtime -> values
    for pair, label, runtime, key, value in samples(lines):
        if runtime is not None:
            cells.setdefault((pair, label), {}).setdefault(key, {}).setdefault(runtime, []) \
                .append(value)
    if not cells:
        sys.exit('micro_pairs_summary.py: no peer/ lines under a "== micro pair" section')
    print('| pair | build | row | knit | best peer | its median | knit vs best peer |')
    print('|---:|---|---|---:|---|---:|---:|')
    for (pair, label), rows in cells.items():
        for key, by_runtime in rows.items():
            lower = '(lower is better)' in key
            if not lower and '(higher is better)' not in key:
                continue  # a row with no direction (the other threads' CPU) has no "better"
            med = {r: statistics.median(v) for r, v in by_runtime.items() if v}
            peers = {r: v for r, v in med.items() if r != 'knit'}
            if 'knit' not in med or not peers:
                continue
            best = (min if lower else max)(peers, key=peers.get)
            mine, theirs = med['knit'], peers[best]
            if lower:
                ratio = f'{theirs / mine:.2f}x' if mine else '—'
            else:
                ratio = f'{mine / theirs:.2f}x' if theirs else '—'
            print(f'| {pair} | {label} | {key} | {mine:.3g} | {best} | {theirs:.3g} | {ratio} |')


def by_floor(lines, peer):
    """Round trip in floors per (floor band, build): count, median."""
    floors, groups, labels = {}, {}, []
    for pair, label, runtime, key, value in samples(lines):
        if label not in labels:
            labels.append(label)
        if key == FLOOR:
            floors[(pair, label)] = value
        elif key == IN_FLOORS and runtime == peer:
            f = floors[(pair, label)]
            band = 'under 80 ns' if f < 80 else '80-200 ns' if f < 200 else 'over 200 ns'
            groups.setdefault(band, {}).setdefault(label, []).append(value)
    if not groups:
        sys.exit('micro_pairs_summary.py: no round trip under a header with a floor')
    print('| floor band | ' + ' | '.join(f'{b} (n)' for b in labels) + ' |')
    print('|---|' + '---:|' * len(labels))
    for band in ('under 80 ns', '80-200 ns', 'over 200 ns'):
        if band in groups:
            cells = [f'{statistics.median(v):.2f} ({len(v)})' if (v := groups[band].get(b))
                     else '—' for b in labels]
            print(f'| {band} | ' + ' | '.join(cells) + ' |')


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--base', help='the build the ratios are to (default: the first one)')
    ap.add_argument('--peer', default='knit', help='the peer whose rows to summarise (knit)')
    ap.add_argument('--vs-peers', action='store_true',
                    help="per process, knit's median against the best other peer's")
    ap.add_argument('--by-floor', action='store_true',
                    help='the round trip in floors, grouped by the floor band of its build')
    args = ap.parse_args()
    if args.by_floor:
        by_floor(sys.stdin, args.peer)
        return
    if args.vs_peers:
        vs_peers(sys.stdin)
        return
    rows, labels = {}, []
    for pair, label, runtime, key, value in samples(sys.stdin):
        if label not in labels:
            labels.append(label)
        if key is not None and runtime in (None, args.peer):
            rows.setdefault(key, {}).setdefault(pair, {}).setdefault(label, []).append(value)
    if not labels:
        sys.exit('micro_pairs_summary.py: no "== micro pair" section on stdin')
    base = args.base or labels[0]
    if base not in labels:
        sys.exit(f'micro_pairs_summary.py: no build labelled {base}')
    others = [label for label in labels if label != base]
    order = [base] + others
    print('| row | pair | ' + ' | '.join(order) + ' | ' +
          ' | '.join(f'{o}/{base}' for o in others) + ' |')
    print('|---|---:|' + '---:|' * (len(order) + len(others)))

    def line(key, pair, values):
        # A row some builds lack (a counter added later) shows a dash there and no ratio.
        med = {s: statistics.median(v) for s, v in values.items() if v}
        cell = {s: f'{med[s]:.3g}' if s in med else '—' for s in order}
        ratio = {o: f'{med[o] / med[base]:.2f}' if o in med and med.get(base) else '—'
                 for o in others}
        print(f'| {key} | {pair} | ' + ' | '.join(cell[s] for s in order) + ' | ' +
              ' | '.join(ratio[o] for o in others) + ' |')

    for key, pairs in rows.items():
        overall = {s: [] for s in order}
        for pair in sorted(pairs, key=int):
            line(key, pair, pairs[pair])
            for s, v in pairs[pair].items():
                overall[s] += v
        line(key, 'all', overall)


if __name__ == '__main__':
    main()
