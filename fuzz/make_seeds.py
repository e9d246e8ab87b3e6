#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/ from the inputs the unit tests use
(tests/server, tests/routes, tests/load, tests/process) and the llhttp corpus. Rerun after changing it; the files are committed."""
import hashlib
import json
import pathlib
import struct

ROOT = pathlib.Path(__file__).resolve().parent / "corpus"

SSR = b'{"name":"<Ari & Co>","plan":"pro","bio":"Building on Knitting","projects":17}'
JWT = b'{"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900}'


def req(method, target, body=b"", extra=b"", version=b"1.1"):
    head = method + b" " + target + b" HTTP/" + version + b"\r\nHost: x\r\n" + extra
    if body or method == b"POST":
        head += b"Content-Length: " + str(len(body)).encode() + b"\r\n"
    return head + b"\r\n" + body


REQUESTS = [
    req(b"GET", b"/ping"),
    req(b"GET", b"/ping?x=1&y=2"),
    req(b"HEAD", b"/ping"),
    req(b"POST", b"/ssr", SSR),
    req(b"POST", b"/ssr", b"not json"),
    req(b"POST", b"/jwt", JWT),
    req(b"POST", b"/jwt", b'{"user":{}}'),
    req(b"POST", b"/jwt", b'{"user":{"id":""}}'),
    req(b"GET", b"/ssr") + req(b"PUT", b"/ssr") + req(b"DELETE", b"/ping"),
    req(b"GET", b"/ping") + req(b"POST", b"/jwt", JWT) + req(b"GET", b"/nope"),
    req(b"GET", b"/ping", extra=b"Connection: close\r\n") + req(b"GET", b"/ping"),
    req(b"GET", b"/ping", version=b"1.0") + req(b"GET", b"/ping"),
    req(b"GET", b"/ping", extra=b"Connection: keep-alive\r\n", version=b"1.0"),
    req(b"POST", b"/jwt", JWT, extra=b"Expect: 100-continue\r\n"),
    b"POST /ssr HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n3\r\n1}\n\r\n0\r\n\r\n",
    b"\r\n\r\n" + req(b"GET", b"/ping") + b"\r\n" + req(b"MKCOLA", b"/ping"),
    b"POST /jwt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    b"GARBAGE\r\n\r\n",
    b"GET /ping HTTP/9.9\r\n\r\n",
    b"GET /ping HTTP/1.1\r\nNo colon here\r\n\r\n",
    b"POST /jwt HTTP/1.1\r\nContent-Length: nope\r\n\r\n",
    b"POST /jwt HTTP/1.1\r\nContent-Length: 70000\r\n\r\n",
    b"GET /ping HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n",
    b"GET /ping HTTP/1.1\r\nHo",
]

JSON = [
    SSR, JWT, b"{}", b"[]", b"null", b"true", b"false", b"0", b"-0", b"1e400", b"-1e400",
    b"2.2250738585072011e-308", b"5e-324", b"1.7976931348623157e308", b"0.1", b"123456789012345678901234567890",
    b'"\\ud800"', b'"\\ud83d\\ude00"', b'"\\u0000\\b\\f\\n\\r\\t\\"\\\\\\/"', "\"caf\u00e9 \u2028\"".encode(),
    b'{"a":1,"a":2}', b'{"projects":{"toString":1}}', b'{"projects":[[3]]}', b'["0x10"]', b'[null]', b'[1,2]',
    b'{"projects":" 0b101 "}', b'{"projects":"Infinity"}', b'{"projects":"1_000"}', b"[" * 40 + b"]" * 40,
    b'\xef\xbb\xbf{"bom":true}', b" \t\n\r[ 1 , { \"k\" : [ ] } ]",
]

RESPONSES = [
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX: y\r\n\r\nhello",
    b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nA;foo=bar\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\n\r\nsome body",
    b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n",
    b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nx",
    b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
    b"HTTX/1.1 200 OK\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    # Long chunk-size line (near the 4 KiB limit): the limit must not depend on the split.
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + b"a" * 4100 + b"\r\nx\r\n0\r\n\r\n",
]


def response_input(stream, cuts, head_mask=0):
    # Layout of fuzz_response_parser's input: count, 2 bytes per cut, HEAD mask, stream.
    return bytes([len(cuts)]) + b"".join(struct.pack(">H", c) for c in cuts) + bytes([head_mask]) + stream


def answer_input(expected_seq, seq, status, nbytes, arena, contents=b"", given_up=False,
                 fresh_nonce=False, previous_seq=0):
    # Layout of fuzz_process_answer's input: the expected sequence, answer_seq, answer_status,
    # answer_bytes, the arena selector (arena = 1 + value % 4096), flags (bit 0: the host took
    # the call back, claim; bit 1: the expected sequence is a fresh nonce), the lane's previous
    # sequence, the arena's contents.
    flags = (1 if given_up else 0) | (2 if fresh_nonce else 0)
    return struct.pack("<QQIQHBQ", expected_seq, seq, status, nbytes, (arena - 1) % 4096,
                       flags, previous_seq) + contents


# The answers of tests/process/answer_check_test.cpp and the bad ones the crash tests signal.
ANSWERS = [
    answer_input(7, 7, 1, 5, 64, b"hello"),
    answer_input(7, 7, 1, 0, 64),
    answer_input(1, 1, 1, 4096, 4096, b"x" * 4096),
    answer_input(2, 2, 2, 19, 4096, b"boom from the child"),
    answer_input(3, 3, 2, 64, 64, b"e" * 64),
    answer_input(4, 4, 3, 1 << 20, 4096),
    answer_input(4, 4, 3, 0, 64),
    answer_input(5, 5, 4, 0, 4096),
    answer_input(6, 5, 1, 1, 4096, b"a"),
    answer_input(7, 7, 99, 0, 4096),
    answer_input(8, 8, 1, 4097, 4096),
    answer_input(8, 8, 2, 65, 64, b"t" * 64),
    answer_input(9, 9, 6, 0, 64, given_up=True),
    answer_input(9, 9, 6, 0, 64),
    # A stale answer (the lane's previous sequence) and one forged ahead (previous + 1)
    # against a fresh nonce: neither is taken.
    answer_input(0, 41, 1, 6, 64, b"forged", fresh_nonce=True, previous_seq=41),
    answer_input(0, 42, 1, 6, 64, b"forged", fresh_nonce=True, previous_seq=41),
    answer_input(10, 9, 1, 6, 64, b"forged", previous_seq=9),
]


# fuzz_framing: the requests above, the framing cases of tests/server/server_framing_test.cpp,
# and every case of the llhttp corpus (tests/server/conformance/llhttp_requests.json).
CANARY = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
FRAMING = REQUESTS + [
    b"POST /jwt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + te + b"\r\n\r\n" + CANARY
    for te in (b"pigeons", b"gzip", b"identity", b"chunked, deflate", b"gzip, chunked", b"chunked")
] + [
    b"POST /jwt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\nContent-Length: 35\r\n\r\n" + CANARY,
    b"POST /jwt HTTP/1.1\r\nHost: x\r\nContent-Length: 35\r\nTransfer-Encoding: chunked\r\n\r\n" + CANARY,
    b"POST /jwt HTTP/1.1\r\nHost: x\r\nFoo: bar\r\n Content-Length: 35\r\n\r\n" + CANARY,
    b"GET /ping HTTP/1.1\r\n Host: x\r\n\r\n",
    b"\r\n\r\nGET /ping HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}\r\n" + CANARY,
    b"POST /jwt HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
    b"GET /ping HTTP/1.1 \r\nHost: x\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;a=\"b\";c=d\r\nhello\r\n0\r\nT: v\r\n\r\n",
]
LLHTTP = pathlib.Path(__file__).resolve().parent.parent / "tests/server/conformance/llhttp_requests.json"
for case in json.loads(LLHTTP.read_text())["cases"]:
    FRAMING.append(bytes.fromhex(case.get("sent_hex", case["raw_hex"])))


def write(target, items):
    d = ROOT / target
    d.mkdir(parents=True, exist_ok=True)
    for item in items:
        (d / hashlib.sha1(item).hexdigest()).write_bytes(item)


write("fuzz_request", REQUESTS)
write("fuzz_framing", FRAMING)
write("fuzz_js_json", JSON)
write("fuzz_response_parser",
      [response_input(r, []) for r in RESPONSES] +
      [response_input(r, [1, len(r) // 2, len(r) - 1], 0b10) for r in RESPONSES])
write("fuzz_process_answer", ANSWERS)
