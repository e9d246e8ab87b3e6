#!/usr/bin/env python3
"""Extracts the request corpus of llhttp (Node.js's HTTP parser) into a data file of facts:
for every case, the raw bytes and what llhttp made of them (valid, invalid, and so on).

    bench/conformance/extract_llhttp.py LLHTTP_GIT_DIR [COMMIT] > tests/server/conformance/llhttp_requests.json

LLHTTP_GIT_DIR is a clone (or bare git directory) of https://github.com/nodejs/llhttp; the
committed file was made from tag v9.4.2, commit 01e105a. Every test/request/*.md file holds
cases: a heading (the case's name), an HTML comment `<!-- meta={...} -->` with the parser
mode, a ```http block with the raw request and a ```log block with the callbacks llhttp
fired, ending in `error code=N reason="..."` when it refused the bytes.

The raw block is turned into bytes exactly as llhttp's runner does (test/md-test.ts):
drop the one trailing newline; drop a backslash-newline; every newline becomes CRLF; then
the escapes \\r \\n \\t \\f, \\xHH and octal \\NNN become that character; the string is then
UTF-8 encoded, as the runner's JavaScript string is (so an escape above 0x7f, such as \\325 in
invalid.md, is two bytes, as llhttp saw it).

Skipped, and counted in the output's "skipped": cases whose mode is not plain "request"
(the lenient flags, whose verdict is not llhttp's default, and request-finish is kept: it
is the default mode plus llhttp_finish() at the end of the input, i.e. the client closing);
cases with "pause" or "skipBody" metadata (a callback changes the parse); and the
pausing.md file altogether (the same).
"""
import json
import re
import subprocess
import sys

KEPT_TYPES = {"request", "request-finish"}


def git_show(git_dir, commit, path):
    return subprocess.run(["git", "-C", git_dir, "show", f"{commit}:{path}"], check=True,
                          capture_output=True).stdout.decode("utf-8")


def list_request_files(git_dir, commit):
    out = subprocess.run(["git", "-C", git_dir, "ls-tree", "--name-only", commit, "test/request/"],
                         check=True, capture_output=True).stdout.decode()
    return sorted(p for p in out.split() if p.endswith(".md"))


def to_bytes(block):
    """md-test.ts's transformation of an ```http block, step by step, in its order."""
    s = re.sub(r"\n$", "", block, count=1)
    s = re.sub(r"\\(\r\n|\r|\n)", "", s)
    s = re.sub(r"\r\n|\r|\n", "\r\n", s)
    s = s.replace("\\r", "\r").replace("\\n", "\n").replace("\\t", "\t").replace("\\f", "\f")
    s = re.sub(r"\\x([0-9a-fA-F]+)", lambda m: chr(int(m.group(1), 16)), s)
    s = re.sub(r"\\([0-7]{1,3})", lambda m: chr(int(m.group(1), 8)), s)
    if "${" in s:
        raise ValueError("inline JavaScript in a raw block: not supported")
    return s.encode("utf-8")


REQUEST_LINE = re.compile(rb"(?:^|\r\n)[A-Za-z]+ \S+ HTTP/1\.1\r\n")
HOST_FIELD = re.compile(rb"\r\nhost:", re.IGNORECASE)


def with_host(raw):
    """The bytes sent to the servers: `raw` with `Host: x` as the last field of every HTTP/1.1
    head that has none. llhttp's cases mostly omit Host, which RFC 9112 section 3.2 requires
    of an HTTP/1.1 request (knit-server and nginx both answer 400 without it); adding it lets
    the servers judge what the case is about. Heads are found by their request line; a head
    without a CRLF CRLF end is left as it is."""
    out, at = bytearray(), 0
    for m in REQUEST_LINE.finditer(raw):
        if m.start() < at:
            continue
        line_end = m.end() - 2
        end = raw.find(b"\r\n\r\n", line_end)
        if end < 0:
            break
        if HOST_FIELD.search(raw, line_end, end + 2):
            continue
        out += raw[at:end + 2] + b"Host: x\r\n"
        at = end + 2
    out += raw[at:]
    return bytes(out)


def verdict(log_lines):
    """What llhttp made of the bytes, from its callback log."""
    complete = sum(1 for line in log_lines if line.endswith(" message complete"))
    for line in log_lines:
        m = re.match(r'off=(\S+) error code=(\d+) reason="(.*)"', line)
        if not m:
            continue
        code, reason = int(m.group(2)), m.group(3)
        if code in (22, 23):  # HPE_PAUSED_UPGRADE, HPE_PAUSED_H2_UPGRADE: not errors
            return {"llhttp": "upgrade", "messages": complete, "reason": reason}
        if code == 5:  # HPE_CLOSED_CONNECTION: bytes after a message with Connection: close
            return {"llhttp": "closed", "messages": complete, "reason": reason}
        if code == 14:  # HPE_INVALID_EOF_STATE: llhttp_finish() in the middle of a message
            return {"llhttp": "incomplete", "messages": complete, "reason": reason}
        return {"llhttp": "invalid", "messages": complete, "reason": reason, "error_code": code,
                "error_offset": m.group(1)}
    # No error. Did the input end inside a message? llhttp then simply waits for more.
    begun = sum(1 for line in log_lines if line.endswith(" message begin"))
    state = "valid" if begun == complete else "incomplete"
    return {"llhttp": state, "messages": complete}


HEADING = re.compile(r"^(#{1,6})\s+(.*)$")


def parse_md(text):
    """Yields (line, heading, meta, http_block, log_block) for every case in one file."""
    lines = text.split("\n")
    heading, meta, blocks, start = None, None, {}, 0
    i = 0
    cases = []

    def flush():
        if "http" in blocks or "log" in blocks:
            cases.append((start, heading, meta, blocks.get("http"), blocks.get("log")))

    while i < len(lines):
        line = lines[i]
        h = HEADING.match(line)
        setext = i + 1 < len(lines) and re.fullmatch(r"=+|-+", lines[i + 1] or "x") and line.strip()
        if h or setext:
            flush()
            heading = h.group(2) if h else line.strip()
            meta, blocks, start = None, {}, i + 1
            i += 1 if h else 2
            continue
        m = re.match(r"^<!--\s*meta=(.*)-->\s*$", line)
        if m:
            meta = json.loads(m.group(1))
            i += 1
            continue
        f = re.match(r"^```(\w+)\s*$", line)
        if f:
            kind = f.group(1)
            j = i + 1
            body = []
            while not lines[j].startswith("```"):
                body.append(lines[j])
                j += 1
            text_block = "\n".join(body) + "\n"
            if kind in blocks:
                raise ValueError(f"two ```{kind} blocks under one heading at line {i + 1}")
            blocks[kind] = text_block
            i = j + 1
            continue
        i += 1
    flush()
    return cases


def main():
    git_dir = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) > 2 else "HEAD"
    full = subprocess.run(["git", "-C", git_dir, "rev-parse", commit], check=True,
                          capture_output=True).stdout.decode().strip()
    version = json.loads(git_show(git_dir, commit, "package.json"))["version"]
    cases, skipped = [], []
    for path in list_request_files(git_dir, commit):
        name = path.rsplit("/", 1)[1][:-3]
        for line, heading, meta, http, log in parse_md(git_show(git_dir, commit, path)):
            where = f"{name}.md:{line}"
            if http is None or log is None:
                raise ValueError(f"{where}: a case without an http or a log block")
            meta = meta or {}
            why = None
            if name == "pausing":
                why = "pausing.md (callbacks pause the parser)"
            elif meta.get("type") not in KEPT_TYPES:
                why = f"mode {meta.get('type')}"
            elif "pause" in meta or meta.get("skipBody"):
                why = "pause/skipBody metadata"
            if why:
                skipped.append({"where": where, "name": heading, "why": why})
                continue
            raw = to_bytes(http)
            log_lines = [l for l in log.split("\n") if l]
            case = {"id": f"{name}-{len(cases) + 1:03d}", "where": where, "name": heading,
                    "mode": meta["type"], "raw_hex": raw.hex()}
            sent = with_host(raw)
            if sent != raw:
                case["sent_hex"] = sent.hex()
            case.update(verdict(log_lines))
            cases.append(case)
    out = {
        "source": "https://github.com/nodejs/llhttp test/request/*.md",
        "llhttp_version": version,
        "commit": full,
        "extracted_by": "bench/conformance/extract_llhttp.py",
        "verdicts": {
            "valid": "llhttp parsed every message and the input ended between messages",
            "incomplete": "no error, but the input ends inside a message (llhttp waits; "
                          "request-finish: llhttp_finish() reports it)",
            "invalid": "llhttp refused the bytes (error code, reason, offset)",
            "closed": "bytes after a message that said Connection: close (llhttp's "
                      "HPE_CLOSED_CONNECTION): the messages before it are valid",
            "upgrade": "CONNECT or Upgrade: llhttp hands the connection over after the head",
        },
        "sent": "sent_hex, where present, is what the servers get instead of raw_hex: the raw "
                "bytes with `Host: x` added as the last field of each HTTP/1.1 head without one",
        "cases": cases,
        "skipped": skipped,
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
