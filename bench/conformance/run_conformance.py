#!/usr/bin/env python3
"""Sends every case of the llhttp request corpus to knit-server and to nginx over a socket and
writes the table case | llhttp | knit | nginx, with the counts.

    bench/conformance/run_conformance.py build/bin/knit-server [--nginx /usr/sbin/nginx]
        [--data tests/server/conformance/llhttp_requests.json] [--out bench/results/conformance]

Each case gets a fresh connection: the case's bytes (sent_hex, else raw_hex), and when llhttp
calls them invalid or sends data after `Connection: close` a canary `GET /metrics` after them;
then the client half-closes (shutdown SHUT_WR) and reads until the server closes (3 s at
most). Recorded: the status of every response, whether the server closed, and whether the
canary was answered (its response: knit's /metrics page, nginx's `location = /metrics`).

nginx (1.22 here) runs as this user from a temporary prefix with a temporary configuration on a
free 127.0.0.1 port: `location = /metrics` answers "canary", every other path is proxied to a
second server block that answers "ok" (200 for any method, so that a 4xx/5xx is always nginx
refusing the bytes; the proxy makes nginx read the whole body first). It is stopped at the end,
whatever happens. knit-server runs with its defaults (KNIT_MODE=inline) on a free port.
"""
import argparse
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
CANARY = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def parse_responses(data, head_first=False):
    """(statuses, bodies) of the complete responses in `data` (Content-Length framed, as both
    servers answer these requests); a trailing fragment is ignored."""
    statuses, bodies = [], []
    while data:
        end = data.find(b"\r\n\r\n")
        if end < 0 or not data.startswith(b"HTTP/1."):
            break
        head = data[:end].decode("latin-1")
        lines = head.split("\r\n")
        status = int(lines[0].split(" ")[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if head_first:  # the answer to a HEAD request has no body
            length, head_first = 0, False
        body = data[end + 4:end + 4 + length]
        data = data[end + 4 + length:]
        if status == 100:
            continue
        statuses.append(status)
        bodies.append(body)
    return statuses, bodies


def exchange(port, payload, timeout=3.0):
    """Sends `payload`, half-closes, reads to the server's close. (bytes, closed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    received, closed = b"", False
    try:
        try:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server closed first: what it sent is still readable
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            received += chunk
    finally:
        s.close()
    return received, closed


def outcome(port, case, canary_marker):
    sent = bytes.fromhex(case.get("sent_hex", case["raw_hex"]))
    with_canary = case["llhttp"] in ("invalid", "closed")
    data, closed = exchange(port, sent + (CANARY if with_canary else b""))
    statuses, bodies = parse_responses(data, head_first=sent.startswith(b"HEAD "))
    return {"statuses": statuses, "closed": closed,
            "canary_answered": any(canary_marker(b) for b in bodies)}


def is_refusal(server, status):
    # knit answers 404 for a path it has no route for: an answer, not a refusal. nginx is
    # configured to answer 200 everywhere.
    return status >= 400 and not (server == "knit" and status == 404)


def klass(server, out):
    """refused | answered N | silent: what the server made of the case."""
    if out is None:
        return None
    s = out["statuses"]
    if s and is_refusal(server, s[-1]):
        return "refused" if out["closed"] else "refused-open"
    return f"answered {len(s)}" if s else "silent"


def llhttp_class(case):
    v, n = case["llhttp"], case["messages"]
    if v == "invalid":
        return "refused"
    if v == "upgrade":
        return "upgrade"
    return f"answered {n}" if n else "silent"


def agrees(expected, got):
    if expected == "upgrade":
        return None  # not comparable: neither server implements CONNECT or Upgrade
    return expected == got


def start_nginx(nginx, port, work):
    prefix = pathlib.Path(work)
    for d in ("logs", "tmp", "html"):
        (prefix / d).mkdir()
    conf = prefix / "nginx.conf"
    backend = free_port()
    # The front proxies every path but /metrics to a second server block, so that nginx reads
    # (and judges) the whole request body before it answers, as knit-server does; a `return`
    # alone would answer before the body arrives. proxy_ignore_client_abort: the runner half-closes
    # after sending, which nginx would otherwise take for a client that has gone.
    conf.write_text(f"""
daemon off;
master_process off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log error;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {prefix}/tmp/body;
  proxy_temp_path {prefix}/tmp/proxy;
  fastcgi_temp_path {prefix}/tmp/fastcgi;
  uwsgi_temp_path {prefix}/tmp/uwsgi;
  scgi_temp_path {prefix}/tmp/scgi;
  server {{
    listen 127.0.0.1:{port};
    location = /metrics {{ return 200 "canary\\n"; }}
    location / {{ proxy_pass http://127.0.0.1:{backend}; proxy_ignore_client_abort on; }}
  }}
  server {{
    listen 127.0.0.1:{backend};
    location / {{ return 200 "ok\\n"; }}
  }}
}}
""")
    proc = subprocess.Popen([nginx, "-p", str(prefix), "-c", str(conf)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_port(port, proc)
    return proc


def start_knit(binary, port):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNIT_")}
    env.update({"PORT": str(port), "HOST": "127.0.0.1", "KNIT_MODE": "inline"})
    proc = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_port(port, proc)
    return proc


def stop(proc):
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def show(out):
    if out is None:
        return "-"
    text = ",".join(map(str, out["statuses"])) or "no response"
    text += " closed" if out["closed"] else " open"
    if out["canary_answered"]:
        text += " **canary answered**"
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("knit")
    ap.add_argument("--nginx", default=shutil.which("nginx") or
                    (shutil.which("nginx", path="/usr/sbin:/sbin") or ""))
    ap.add_argument("--data", default=str(ROOT / "tests/server/conformance/llhttp_requests.json"))
    ap.add_argument("--out", default=str(ROOT / "bench/results/conformance"))
    ap.add_argument("--deliberate", default=str(ROOT / "tests/server/conformance/deliberate.json"))
    args = ap.parse_args()
    data = json.loads(pathlib.Path(args.data).read_text())
    deliberate = {}
    if pathlib.Path(args.deliberate).exists():
        deliberate = json.loads(pathlib.Path(args.deliberate).read_text())["cases"]

    results = {}
    procs = []
    work = tempfile.mkdtemp(prefix="knit-conformance-")
    try:
        kport = free_port()
        procs.append(start_knit(args.knit, kport))
        nport = None
        if args.nginx:
            nport = free_port()
            procs.append(start_nginx(args.nginx, nport, work))
        for case in data["cases"]:
            r = {"knit": outcome(kport, case, lambda b: b"# TYPE" in b)}
            r["nginx"] = outcome(nport, case, lambda b: b"canary" in b) if nport else None
            results[case["id"]] = r
    finally:
        for p in reversed(procs):
            stop(p)
        shutil.rmtree(work, ignore_errors=True)

    rows, counts = [], {"cases": 0, "comparable": 0, "knit_agrees_llhttp": 0,
                        "knit_agrees_nginx": 0, "nginx_agrees_llhttp": 0, "deliberate": 0,
                        "canary_answered_knit": 0, "canary_answered_nginx": 0,
                        "undocumented_differences": 0}
    for case in data["cases"]:
        r = results[case["id"]]
        exp = llhttp_class(case)
        k, n = klass("knit", r["knit"]), klass("nginx", r["nginx"])
        a_llhttp, a_nginx = agrees(exp, k), (None if n is None else k == n)
        counts["cases"] += 1
        counts["comparable"] += a_llhttp is not None
        counts["knit_agrees_llhttp"] += bool(a_llhttp)
        counts["knit_agrees_nginx"] += bool(a_nginx)
        counts["nginx_agrees_llhttp"] += bool(agrees(exp, n)) if n else 0
        counts["canary_answered_knit"] += r["knit"]["canary_answered"]
        counts["canary_answered_nginx"] += bool(r["nginx"] and r["nginx"]["canary_answered"])
        note = deliberate.get(case["id"], {}).get("why", "")
        if a_llhttp is False:
            if note:
                counts["deliberate"] += 1
            else:
                counts["undocumented_differences"] += 1
        llhttp_text = case["llhttp"] + (f" ({case['reason']})" if "reason" in case else "")
        if case["llhttp"] != "invalid" and case["messages"]:
            llhttp_text += f", {case['messages']} message(s)"
        rows.append(f"| {case['id']} | {case['name'].replace('|', '/')} | {llhttp_text} | "
                    f"{show(r['knit'])} | {show(r['nginx'])} | "
                    f"{'n/a' if a_llhttp is None else 'yes' if a_llhttp else 'NO'} | "
                    f"{'-' if a_nginx is None else 'yes' if a_nginx else 'NO'} | {note} |")

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    nginx_version = "-"
    if args.nginx:
        nginx_version = subprocess.run([args.nginx, "-v"], capture_output=True,
                                       text=True).stderr.strip()
    load = pathlib.Path("/proc/loadavg").read_text().split()[0]
    (out / "results.json").write_text(json.dumps({"counts": counts, "results": results},
                                                  indent=1) + "\n")
    table = [
        f"# llhttp request corpus against knit-server and nginx",
        "",
        f"Corpus: llhttp {data['llhttp_version']} (commit {data['commit'][:7]}), "
        f"{len(data['cases'])} cases kept, {len(data['skipped'])} skipped "
        f"(tests/server/conformance/llhttp_requests.json). nginx: {nginx_version}.",
        "",
        "Command: `" + " ".join(["bench/conformance/run_conformance.py"] + sys.argv[1:]) + "`" +
        f" (load average {load}: the outcomes do not depend on timing).",
        "",
        "| count | |",
        "|---|---:|",
    ] + [f"| {k} | {v} |" for k, v in counts.items()] + [
        "",
        "\"comparable\": all but the CONNECT/Upgrade cases (llhttp hands the connection over; "
        "neither server implements either). \"agree\": the same class of outcome: refused "
        "(a 4xx/5xx, knit's 404 excepted, then the close), answered N (N responses, none a "
        "refusal), or silent (the server closed without a response). \"deliberate\": knit "
        "differs from llhttp on purpose (last column; docs/server-safety.md).",
        "",
        "| case | name | llhttp | knit | nginx | knit = llhttp | knit = nginx | deliberate difference |",
        "|---|---|---|---|---|---|---|---|",
    ] + rows
    (out / "README.md").write_text("\n".join(table) + "\n")
    print(json.dumps(counts))
    return 1 if counts["canary_answered_knit"] or counts["undocumented_differences"] else 0


if __name__ == "__main__":
    sys.exit(main())
