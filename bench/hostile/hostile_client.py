#!/usr/bin/env python3
"""Hostile and probing HTTP/1.1 clients for bench/hostile/*.sh (loopback only, every loop bounded).

  hostile_client.py unending PORT SHAPE MAX_BYTES   send one chunked /ssr whose next line never
                                                     ends; stop when the server answers or closes
  hostile_client.py amplify PORT N                   N connections each POST a 64 KiB /ssr name of
                                                     apostrophes, read the page, then stay open
                                                     (idle) until stdin closes
  hostile_client.py slow PORT N HEADER_BYTES         N connections each send HEADER_BYTES of an
                                                     unfinished header, then 1 byte/s until stdin
                                                     closes or the server drops them
  hostile_client.py probe PORT SECONDS END_FILE      one keep-alive /ssr every 10 ms and one /ping
                                                     every 100 ms on another connection; prints
                                                     JSON: accepted latency percentiles, 503s with
                                                     Retry-After, /ping latencies, and recovery:
                                                     the flood has ended once END_FILE exists
  hostile_client.py stall PORT N                     N connections each POST a 64 KiB /ssr name of
                                                     apostrophes and never read the page; prints
                                                     JSON once all are sent, then, when stdin
                                                     closes, how many the server has reset
Each prints one JSON line on stdout (stall: two).
"""
import json
import select
import socket
import sys
import time

HOST = "127.0.0.1"


def connect(port, timeout=10.0):
    s = socket.create_connection((HOST, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_response(s, buf=b""):
    """One response with Content-Length. Returns (status, headers, body, rest) or None on close."""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = s.recv(max(65536, length - len(rest)))
        if not chunk:
            return None
        rest += chunk
    return status, headers, rest[:length], rest[length:]


def request(method, path, body=b""):
    req = f"{method} {path} HTTP/1.1\r\nHost: {HOST}\r\n"
    if body:
        req += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return req.encode() + b"\r\n" + body


SHAPES = {
    "extension": (b"1;", b"a"),        # a chunk extension that never ends
    "trailer": (b"0\r\nX: ", b"a"),    # a trailer field that never ends
    "zeros": (b"", b"0"),              # a chunk-size line of endless 0 digits
}


def unending(port, shape, max_bytes):
    start, fill = SHAPES[shape]
    s = connect(port)
    s.setblocking(False)
    head = (b"POST /ssr HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n" + start)
    piece = fill * 4096
    sent = 0
    got = b""
    outcome = "sent everything, no answer"
    t0 = time.monotonic()
    pending = head
    while sent < max_bytes and time.monotonic() - t0 < 35:
        r, w, _ = select.select([s], [s], [], 1.0)
        if r:
            try:
                data = s.recv(65536)
            except ConnectionResetError:
                outcome = "reset"
                break
            if not data:
                outcome = "closed"
                break
            got += data
            if b"\r\n\r\n" in got:
                outcome = "answered"
                break
        if w:
            if not pending:
                pending = piece
            try:
                n = s.send(pending)
            except (BrokenPipeError, ConnectionResetError):
                outcome = "reset while sending"
                break
            sent += n
            pending = pending[n:]
    # Read whatever answer there is (the server may answer just after our last send).
    s.setblocking(True)
    s.settimeout(5)
    try:
        while b"\r\n\r\n" not in got:
            data = s.recv(65536)
            if not data:
                break
            got += data
    except (socket.timeout, ConnectionResetError, OSError):
        pass
    status = got.split(b"\r\n", 1)[0].decode("latin-1") if got else ""
    print(json.dumps({"shape": shape, "client_sent_bytes": sent, "outcome": outcome,
                      "status_line": status, "seconds": round(time.monotonic() - t0, 3)}))


def wait_stdin_closed(limit_s):
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        r, _, _ = select.select([sys.stdin], [], [], 0.5)
        if r and not sys.stdin.buffer.read1(4096):
            return


def amplify(port, n):
    body = b'{"name":"' + b"'" * (64 * 1024 - 12) + b'"}'
    conns = []
    page_bytes = 0
    for _ in range(n):
        s = connect(port, 30)
        s.sendall(request("POST", "/ssr", body))
        res = read_response(s)
        if res and res[0] == 200:
            page_bytes += len(res[2])
        conns.append(s)
    print(json.dumps({"connections": len(conns), "page_bytes_each": page_bytes // max(n, 1)}),
          flush=True)
    wait_stdin_closed(120)
    for s in conns:
        s.close()


def stall(port, n):
    body = b'{"name":"' + b"'" * (64 * 1024 - 12) + b'"}'
    req = request("POST", "/ssr", body)
    conns = []
    refused = 0
    start = time.monotonic()
    for _ in range(n):
        try:
            s = connect(port, 30)
            s.sendall(req)
            conns.append(s)
        except OSError:
            refused += 1
    print(json.dumps({"stalled": len(conns), "refused": refused,
                      "send_s": round(time.monotonic() - start, 2)}), flush=True)
    wait_stdin_closed(600)
    # Without reading a byte: poll with no events reports only POLLERR / POLLHUP, i.e. a
    # connection the server has reset (a graceful close's FIN would wait behind the page).
    reset = 0
    poller = select.poll()
    for s in conns:
        poller.register(s.fileno(), 0)
    failed = {fd for fd, _ in poller.poll(0)}
    for s in conns:
        if s.fileno() in failed:
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            reset += err == 104  # ECONNRESET
    print(json.dumps({"reset_by_server": reset, "not_failed": len(conns) - len(failed)}),
          flush=True)
    for s in conns:
        s.close()


def slow(port, n, header_bytes):
    conns = []
    head = b"POST /ssr HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"p" * max(header_bytes - 48, 0)
    refused = 0
    for _ in range(n):
        try:
            s = connect(port)
            s.sendall(head)
            conns.append(s)
        except OSError:
            refused += 1
    print(json.dumps({"slow_connections": len(conns), "refused": refused}), flush=True)
    end = time.monotonic() + 120
    while time.monotonic() < end:
        r, _, _ = select.select([sys.stdin], [], [], 1.0)
        if r and not sys.stdin.buffer.read1(4096):
            break
        for s in list(conns):
            try:
                s.send(b"p")
            except OSError:
                conns.remove(s)
    for s in conns:
        s.close()


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def probe(port, seconds, end_file):
    import os
    ssr = connect(port, 15)
    ping = connect(port, 15)
    ssr_body = b'{"name":"probe","plan":"pro"}'
    t0 = time.monotonic()
    accepted, rejected_with_retry, rejected_without = [], 0, 0
    ping_ms, ping_fail = [], 0
    first_ok_after_end = None
    after_end = []
    next_ping = t0
    flood_end_s = None
    while time.monotonic() - t0 < seconds:
        now = time.monotonic()
        if flood_end_s is None and os.path.exists(end_file):
            flood_end_s = now - t0
        if now >= next_ping:
            next_ping += 0.1
            a = time.monotonic()
            try:
                ping.sendall(request("GET", "/ping"))
                res = read_response(ping)
                if res and res[0] == 200:
                    ping_ms.append((time.monotonic() - a) * 1e3)
                else:
                    ping_fail += 1
            except OSError:
                ping_fail += 1
                ping = connect(port, 15)
        a = time.monotonic()
        try:
            ssr.sendall(request("POST", "/ssr", ssr_body))
            res = read_response(ssr)
        except OSError:
            res = None
        b = time.monotonic()
        if res is None:
            ssr = connect(port, 15)
        elif res[0] == 200:
            accepted.append((b - a) * 1e3)
            if flood_end_s is not None and a - t0 >= flood_end_s:
                after_end.append((b - a) * 1e3)
                if first_ok_after_end is None:
                    first_ok_after_end = b - t0 - flood_end_s
        elif res[0] == 503:
            if res[1].get("retry-after") == "1":
                rejected_with_retry += 1
            else:
                rejected_without += 1
        time.sleep(max(0.0, 0.01 - (time.monotonic() - a)))
    print(json.dumps({
        "probe_ssr_accepted": len(accepted),
        "probe_ssr_accepted_p50_ms": percentile(accepted, 0.50),
        "probe_ssr_accepted_p99_ms": percentile(accepted, 0.99),
        "probe_ssr_503_with_retry_after": rejected_with_retry,
        "probe_ssr_503_without_retry_after": rejected_without,
        "probe_ping_ok": len(ping_ms), "probe_ping_failed": ping_fail,
        "probe_ping_p99_ms": percentile(ping_ms, 0.99),
        "probe_ping_max_ms": max(ping_ms) if ping_ms else None,
        "recovery_first_200_after_flood_end_s": first_ok_after_end,
        "after_flood_ssr_p99_ms": percentile(after_end, 0.99),
    }))


def main():
    cmd = sys.argv[1]
    port = int(sys.argv[2])
    if cmd == "unending":
        unending(port, sys.argv[3], int(sys.argv[4]))
    elif cmd == "amplify":
        amplify(port, int(sys.argv[3]))
    elif cmd == "slow":
        slow(port, int(sys.argv[3]), int(sys.argv[4]))
    elif cmd == "stall":
        stall(port, int(sys.argv[3]))
    elif cmd == "probe":
        probe(port, float(sys.argv[3]), sys.argv[4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
