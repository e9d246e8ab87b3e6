#!/usr/bin/env python3
"""A retry flood on one route, timing each accepted response three ways (the client that
retry_flood_ab.py runs; on its own against any server on 127.0.0.1).

  bench/tools/retry_flood_client.py PORT SECONDS CONNS OUT_JSON [PATH]

CONNS keep-alive connections each send POST PATH (default /ssr, the reference /ssr body) and,
as soon as the whole response is in, send the next one: a 503 is retried at once, with no
pause (the shape "every refused client re-sends at once"). For each response it records:
  send    the moment the request was written (CLOCK_REALTIME, just before send());
  arrive  the kernel's receive timestamp of the response's first bytes (SO_TIMESTAMPNS on
          the socket: when they reached this socket, before this process read them);
  read    the moment this process read them.
So for the accepted (200) responses:
  arrive - send  the server's time (read, queue, run, write) plus loopback, none of it the
                 client's own;
  read - arrive  the client's own delay in reading what had already arrived (one Python
                 thread serving CONNS sockets);
  read - send    what a client-side latency figure (knit-load, wrk) reports.
The same two figures again for the requests sent after the first FLOOD_WARMUP_S (default 1) s.
Bounded: it stops sending after SECONDS and waits at most 10 s for responses in flight.
"""
import json
import os
import selectors
import socket
import struct
import sys
import time

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
WARMUP_S = float(os.environ.get("FLOOD_WARMUP_S", "1"))
BODY = b'{"name":"Ari","plan":"pro","bio":"Building on Knitting","projects":17}'


def request(path):
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(BODY)}\r\n\r\n").encode() + BODY


def percentiles(values):
    if not values:
        return None
    v = sorted(values)

    def q(p):
        return v[min(len(v) - 1, int(p * len(v)))] / 1e6

    return {"n": len(v), "p50_ms": q(0.50), "p90_ms": q(0.90), "p99_ms": q(0.99),
            "max_ms": v[-1] / 1e6}


class conn:
    def __init__(self, port, req):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.s.setblocking(False)
        self.req = req
        self.buf = b""
        self.sent_ns = 0
        self.arrive_ns = 0
        self.read_ns = 0
        self.busy = False

    def send(self):
        self.buf = b""
        self.arrive_ns = 0
        self.sent_ns = time.time_ns()
        self.s.sendall(self.req)  # 190 bytes: fits the socket buffer
        self.busy = True

    def on_readable(self):
        """Returns (status, sent, arrive, read) once a whole response is in, else None."""
        data, anc, _, _ = self.s.recvmsg(65536, socket.CMSG_SPACE(16))
        now = time.time_ns()
        if not data:
            raise ConnectionError("closed by the server")
        if not self.buf:
            self.read_ns = now
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", payload[:16])
                    self.arrive_ns = sec * 1_000_000_000 + nsec
            if not self.arrive_ns:
                self.arrive_ns = now
        self.buf += data
        head_end = self.buf.find(b"\r\n\r\n")
        if head_end < 0:
            return None
        head = self.buf[:head_end].decode("latin-1").split("\r\n")
        length = 0
        for line in head[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if len(self.buf) < head_end + 4 + length:
            return None
        if len(self.buf) > head_end + 4 + length:
            raise ValueError("more bytes than one response")
        self.busy = False
        return int(head[0].split()[1]), self.sent_ns, self.arrive_ns, self.read_ns


def main():
    if len(sys.argv) not in (5, 6) or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2
    port, seconds, n = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    out_path = sys.argv[4]
    path = sys.argv[5] if len(sys.argv) > 5 else "/ssr"
    req = request(path)
    sel = selectors.DefaultSelector()
    conns = [conn(port, req) for _ in range(n)]
    for c in conns:
        sel.register(c.s, selectors.EVENT_READ, c)
    codes = {}
    ok_server, ok_client_lag, ok_total = [], [], []
    # The same for the requests sent after the first WARMUP_S seconds: the first burst (CONNS
    # calls at once, before any call has come back to give admission an estimate) apart.
    warm_server, warm_total = [], []
    warm_from_ns = time.time_ns() + int(WARMUP_S * 1e9)
    t0_ns = time.time_ns()
    by_quarter = {}  # accepted (arrive - send) by the quarter second of the run they were sent in
    refused_total = []
    errors = 0
    start = time.monotonic()
    stop_at = start + seconds
    for c in conns:
        c.send()
    in_flight = len(conns)
    while True:
        now = time.monotonic()
        if now >= stop_at and in_flight == 0:
            break
        if now >= stop_at + 10:
            break
        for key, _ in sel.select(timeout=0.5):
            c = key.data
            try:
                done = c.on_readable()
            except (ConnectionError, ValueError, OSError):
                errors += 1
                sel.unregister(c.s)
                c.s.close()
                c.busy = False
                conns.remove(c)
                in_flight -= 1
                continue
            if done is None:
                continue
            status, sent, arrive, read = done
            codes[status] = codes.get(status, 0) + 1
            if status == 200:
                ok_server.append(arrive - sent)
                ok_client_lag.append(read - arrive)
                ok_total.append(read - sent)
                by_quarter.setdefault((sent - t0_ns) // 250_000_000, []).append(arrive - sent)
                if sent >= warm_from_ns:
                    warm_server.append(arrive - sent)
                    warm_total.append(read - sent)
            else:
                refused_total.append(read - sent)
            if time.monotonic() < stop_at:
                c.send()
            else:
                in_flight -= 1
    elapsed = time.monotonic() - start
    result = {
        "conns": n, "seconds": seconds, "elapsed_s": elapsed, "path": path, "codes": codes,
        "errors": errors, "responses_per_s": sum(codes.values()) / elapsed,
        "accepted_per_s": codes.get(200, 0) / elapsed,
        "accepted_read_minus_send": percentiles(ok_total),
        "accepted_arrive_minus_send": percentiles(ok_server),
        "accepted_read_minus_arrive": percentiles(ok_client_lag),
        "refused_read_minus_send": percentiles(refused_total),
        "warmup_s": WARMUP_S,
        "accepted_arrive_minus_send_by_quarter_second_sent": {
            f"{q / 4:.2f}": percentiles(v) for q, v in sorted(by_quarter.items()) if q < 12},
        "accepted_after_warmup_read_minus_send": percentiles(warm_total),
        "accepted_after_warmup_arrive_minus_send": percentiles(warm_server),
    }
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)
    for c in conns:
        c.s.close()


if __name__ == "__main__":
    sys.exit(main())
