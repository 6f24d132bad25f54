"""Hostile input: a corpus of a few hundred requests, built here from tables, that a careless
or malicious client could send to every endpoint of the gateway (malformed and deeply nested
JSON, wrong types for every field, huge strings, control characters and invalid UTF-8,
hostile query strings and path ids, oversized, chunked and broken bodies, multipart abuse,
and pathological Markdown, HTML, PDF and DOCX uploads). Every answer is a 4xx with the
API's JSON error body, or an upload the gateway takes whose job then ends `failed` with a
reason (or `ready`); never a 5xx, a body that is not JSON, or a hang. Meanwhile `/healthz`
is probed every 20 ms and answers every time in under 100 ms.

The corpus runs against a pipeline of its own (database, bus and every stage; the ingest
stage embeds through a scripted OpenAI-protocol server, not MiniLM) with small
limits (16 KB of JSON, 256 KB uploads, 5 s to parse a file), so "over the limit" costs
little to send, a hostile file is given up on soon, and nothing it uploads reaches another
test. A few cases are answered rightly with a 2xx (an unknown query parameter ignored, a
question at its length limit, JSON with a byte order mark): each says so (`may_succeed`)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import threading
import time
import zipfile
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.gateway.inputs import file_name_problem, question_problem
from shared.contracts.base import LINE_PATTERN, MAX_QUESTION_CHARS, QUESTION_PATTERN
from shared.subjects import Stage
from tests.conftest import Servers, own_pipeline
from tests.helpers import wait_until
from tests.openai_stand_in import OpenAIStandIn

JSON_LIMIT = 16 * 1024
UPLOAD_LIMIT = 256 * 1024
# Every request gets this long; the gateway answers each of these in well under a second.
REQUEST_TIMEOUT = httpx.Timeout(20.0)
# How long the accepted uploads have, together, to end ready or failed.
JOBS_WITHIN = 120.0
PROBE_EVERY = 0.020
# A parse run on the gateway's event loop would stall /healthz for seconds; a loaded CI machine
# stalls it for up to a few hundred ms on its own, which says nothing about the gateway.
PROBE_SLOWEST = 1.0

Headers = tuple[tuple[str, str], ...]
JSON_TYPE: Headers = (("content-type", "application/json"),)


@dataclass(frozen=True)
class Hostile:
    """One request of the corpus. `raw` is sent as it is on a connection of its own (for what
    an HTTP client library would refuse to send); otherwise method, path, query, headers and
    body go through httpx, the body in pieces without a length when `chunked`."""

    name: str
    kind: str
    method: str = "GET"
    path: str = "/healthz"
    query: str = ""
    headers: Headers = ()
    body: bytes | None = None
    chunked: bool = False
    raw: bytes | None = None
    # Half-close the raw connection after sending: the request ends there, unfinished.
    eof: bool = False
    # A 2xx is a right answer too: an unknown query parameter is ignored, for one.
    may_succeed: bool = False
    # A 2xx is an upload taken: its job must end failed with a reason, or ready.
    upload: bool = False
    # The server may close without an answer (a request the client itself left unfinished).
    may_close: bool = False


@dataclass
class Outcome:
    case: Hostile
    status: int
    headers: dict[str, str]
    body: bytes
    seconds: float
    problem: str | None = None


# --- the corpus -------------------------------------------------------------------------


def ask(
    name: str, kind: str, body: bytes | str | Any, *, headers: Headers = JSON_TYPE, **extra: Any
) -> Hostile:
    """POST /v1/ask with `body`: bytes and str as they are, anything else as JSON."""
    if isinstance(body, str):
        data = body.encode("utf-8", "surrogatepass")
    elif isinstance(body, bytes):
        data = body
    else:
        data = json.dumps(body).encode()
    return Hostile(f"ask: {name}", kind, "POST", "/v1/ask", headers=headers, body=data, **extra)


def malformed_json() -> Iterator[Hostile]:
    kind = "malformed JSON"
    bodies: dict[str, bytes] = {
        "empty body": b"",
        "only whitespace": b" \r\n\t ",
        "an open brace": b"{",
        "a close brace": b"}",
        "an open bracket": b"[",
        "a missing value": b'{"question":}',
        "a missing colon": b'{"question" "Apple revenue 2023"}',
        "a trailing comma": b'{"question": "Apple revenue 2023",}',
        "single quotes": b"{'question': 'Apple revenue 2023'}",
        "unquoted key": b'{question: "Apple revenue 2023"}',
        "an unterminated string": b'{"question": "Apple revenue 2023',
        "a comment": b'{"question": "Apple revenue 2023" /* hi */}',
        "NaN": b'{"question": NaN}',
        "Infinity": b'{"question": Infinity}',
        "-Infinity": b'{"question": -Infinity}',
        "a number of 1e999999": b'{"question": 1e999999}',
        "an integer of 5,000 digits": b'{"question": ' + b"9" * 5000 + b"}",
        "a float of 5,000 digits": b'{"question": 0.' + b"1" * 5000 + b"}",
        "two documents": b'{"question": "a"}{"question": "b"}',
        "garbage after the document": b'{"question": "Apple revenue 2023"} trailing',
        "a raw newline in a string": b'{"question": "Apple\nrevenue"}',
        "a raw NUL in a string": b'{"question": "Apple\x00revenue"}',
        "a bad escape": b'{"question": "Apple \\x41 revenue"}',
        "a short unicode escape": b'{"question": "\\u12"}',
        "invalid UTF-8": b'{"question": "Apple \xff\xfe revenue"}',
        "overlong UTF-8": b'{"question": "Apple \xc0\xaf revenue"}',
        "an encoded surrogate": b'{"question": "Apple \xed\xa0\x80 revenue"}',
        "a truncated UTF-8 sequence": b'{"question": "Apple \xe2\x82"}',
        "XML": b"<question>Apple revenue 2023</question>",
        "a form body": b"question=Apple+revenue+2023",
        "a lone NUL": b"\x00",
        "NUL bytes": b"\x00" * 1000,
        "random bytes": bytes(range(256)) * 8,
    }
    for name, body in bodies.items():
        yield ask(name, kind, body)
    # JSON parsers may read a byte order mark and UTF-16 or -32 (RFC 8259, 8.1): answered.
    for name, encoded in {
        "a byte order mark": b'\xef\xbb\xbf{"question": "Apple revenue 2023"}',
        "UTF-16": '{"question": "Apple revenue 2023"}'.encode("utf-16"),
        "UTF-32": '{"question": "Apple revenue 2023"}'.encode("utf-32"),
    }.items():
        yield ask(name, kind, encoded, may_succeed=True)


def nested_json() -> Iterator[Hostile]:
    kind = "deeply nested JSON"
    depth = JSON_LIMIT // 2 - 10  # as deep as fits the body limit: past the parser's recursion
    yield ask("8k levels of [[[[", kind, b"[" * depth + b"]" * depth)
    yield ask("16k levels of [ unclosed", kind, b"[" * (JSON_LIMIT - 100))
    # 100k levels are 200 KB: refused by size (413) before any parser sees them.
    hundred_k = b"[" * 100_000 + b"]" * 100_000
    yield ask("100k levels of [[[[", kind, hundred_k)
    yield ask("100k levels of [[[[ chunked", kind, hundred_k, chunked=True)
    yield ask("2k levels of objects", kind, b'{"a":' * 2000 + b"1" + b"}" * 2000)
    yield ask("3k levels of objects unclosed", kind, b'{"a":' * 3000)
    yield ask(
        "a question under 3k levels", kind, b'{"question":' + b"[" * 3000 + b"]" * 3000 + b"}"
    )
    yield ask("800 levels (under the recursion limit)", kind, b"[" * 800 + b"]" * 800)
    yield ask(
        "a conversation_id under 1.5k levels",
        kind,
        b'{"question":"Apple revenue 2023","conversation_id":'
        + b'{"a":' * 1500
        + b"1"
        + b"}" * 1500
        + b"}",
    )
    yield ask("an object of 1,000 keys", kind, {f"k{i}": i for i in range(1000)})
    yield ask("an array of 2,500 numbers", kind, list(range(2500)))
    yield ask("the same key 1,000 times", kind, b"{" + b'"question":"a",' * 1000 + b'"x":1}')


def wrong_types() -> Iterator[Hostile]:
    kind = "wrong types"
    values: dict[str, Any] = {
        "an integer": 42,
        "a float": 4.2,
        "a huge integer": 10**300,
        "true": True,
        "false": False,
        "null": None,
        "an empty list": [],
        "a list of strings": ["Apple revenue 2023"],
        "an object": {"text": "Apple revenue 2023"},
        "an operator object": {"$gt": ""},
    }
    for name, value in values.items():
        yield ask(f"question as {name}", kind, {"question": value})
        yield ask(
            f"conversation_id as {name}",
            kind,
            {"question": "Apple revenue 2023", "conversation_id": value},
            # null is "no conversation": a new one, answered.
            may_succeed=value is None,
        )
    for body in ([], [{"question": "Apple revenue 2023"}], "Apple revenue 2023", 42, None, True):
        yield ask(f"a top-level {type(body).__name__}: {json.dumps(body)[:20]}", kind, body)
    yield ask("no question", kind, {})
    yield ask("the question misspelt", kind, {"questio": "Apple revenue 2023"})
    yield ask("an unknown field", kind, {"question": "Apple revenue 2023", "admin": True})
    yield ask("an unknown field only", kind, {"user_id": "someone-else"})
    yield ask("the question's key in capitals", kind, {"QUESTION": "Apple revenue 2023"})


def hostile_strings() -> Iterator[Hostile]:
    kind = "strings and control characters"
    questions: dict[str, str] = {
        "empty": "",
        "spaces": "   ",
        "tabs and newlines": "\t\n\r\n\t",
        "ideographic spaces": "\u3000\u3000",
        "no-break spaces": "\xa0\xa0",
        "2,001 characters": "x" * 2001,
        "2,001 characters of emoji": "\U0001f4b0" * 2001,
        "2,001 combining marks": "a" + "\u0301" * 2000,
        "2,001 characters, padded to fit when stripped": " " + "x" * 1999 + " ",
        "4,000 characters": "Apple revenue 2023 " * 211,
        "a NUL": "Apple revenue\x00 2023",
        "only NUL": "\x00",
        "a bell": "Apple revenue\x07 2023",
        "an escape sequence": "\x1b[31mApple revenue 2023\x1b[0m",
        "a backspace": "Apple\x08\x08 revenue 2023",
        "a DEL": "Apple revenue\x7f 2023",
        "every C0 control": "".join(chr(c) for c in range(1, 32)),
        "a vertical tab": "Apple\x0brevenue 2023",
        "a form feed": "Apple\x0crevenue 2023",
        "file separators only": "\x1c\x1d\x1e\x1f",
        "a lone high surrogate": "Apple \ud800 revenue 2023",
        "a lone low surrogate": "\udc00",
        "a reversed surrogate pair": "\udc00\ud800",
    }
    for name, question in questions.items():
        # json.dumps writes the control characters and surrogates as \u escapes.
        yield ask(f"a question with {name}", kind, json.dumps({"question": question}))
    # At the limits but within them: answered (a word of 2,000 letters once failed the
    # router on every try, a 502).
    for name, question in {
        "2,000 letters in one word": "x" * 2000,
        "2,000 characters of emoji": "\U0001f4b0" * 2000,
        "tabs and newlines inside": "Apple\trevenue\n2023\r\n",
        "right-to-left marks": "\u202eApple revenue 2023\u202c",
        "zero-width joiners": "Apple\u200d revenue\u200b 2023",
    }.items():
        yield ask(f"a question of {name}", kind, {"question": question}, may_succeed=True)
    ids: dict[str, str] = {
        "empty": "",
        "101 characters": "c" * 101,
        "10,000 characters": "c" * 10_000,
        "a NUL": "abc\x00def",
        "a lone surrogate": "\ud800",
        "a newline": "abc\ndef",
        "an escape sequence": "\x1b[2J",
    }
    for name, value in ids.items():
        body = json.dumps({"question": "Apple revenue 2023", "conversation_id": value})
        yield ask(f"a conversation_id with {name}", kind, body)
    for name, value in {
        "an unknown id": "0123456789abcdef0123456789abcdef",
        "a SQL injection": "' OR '1'='1",
        "a path traversal": "../../../../etc/passwd",
        "100 emoji": "\U0001f4b0" * 100,
    }.items():
        body = {"question": "Apple revenue 2023", "conversation_id": value}
        yield ask(f"a conversation_id that is {name}", kind, body)


def content_types() -> Iterator[Hostile]:
    kind = "wrong content types"
    body = b'{"question": "Apple revenue 2023"}'
    types = {
        "text/plain": "text/plain",
        "a form": "application/x-www-form-urlencoded",
        "multipart without a boundary": "multipart/form-data",
        "multipart with a boundary": "multipart/form-data; boundary=xyz",
        "XML": "application/xml",
        "an unparsable type": "garbage/;;;=;",
        "an empty type": "",
        "a PDF": "application/pdf",
    }
    for name, value in types.items():
        yield ask(f"sent as {name}", kind, body, headers=(("content-type", value),))
    # JSON with parameters the gateway does not use: read as the JSON it is, and answered.
    for name, value in {
        "JSON naming UTF-16": "application/json; charset=utf-16",
        "JSON in an unknown charset": "application/json; charset=x-no-such-charset",
        "JSON with a 10 KB parameter": "application/json; x=" + "a" * 10_000,
    }.items():
        yield ask(
            f"sent as {name}", kind, body, headers=(("content-type", value),), may_succeed=True
        )
    # Malformed JSON under a +json type is still parsed as JSON, and refused.
    yield ask("broken +json", kind, b"{", headers=(("content-type", "application/x+json"),))
    yield ask("no content type and broken JSON", kind, b"{", headers=())


def query_strings() -> Iterator[Hostile]:
    kind = "query parameters"
    bad = {
        "limit=-1": "limit=-1",
        "limit=0": "limit=0",
        "limit=101": "limit=101",
        "limit=huge": "limit=" + "9" * 40,
        "limit=1e3": "limit=1e3",
        "limit=1.5": "limit=1.5",
        "limit=abc": "limit=abc",
        "limit=empty": "limit=",
        "limit=0x10": "limit=0x10",
        "limit=NaN": "limit=NaN",
        "limit=Infinity": "limit=Infinity",
        "limit=fullwidth digits": "limit=" + quote("１０"),
        "limit=NUL": "limit=%00",
        "limit=invalid UTF-8": "limit=%ff%fe",
        "limit=5,000 digits": "limit=" + "1" * 5000,
        "offset=-1": "offset=-1",
        "offset=10**19": "offset=" + str(10**19),
        "offset=1,000,001": "offset=1000001",
        "offset=-10**30": "offset=-" + "9" * 30,
        "offset=abc": "offset=abc",
        "offset=a huge float": "offset=1e308",
        "offset=5,000 digits": "offset=" + "7" * 5000,
    }
    for name, query in bad.items():
        yield Hostile(f"conversations: {name}", kind, "GET", "/v1/conversations", query=query)
    ignored = {
        "an unknown parameter": "admin=true",
        "limit given twice": "limit=5&limit=7",
        "a bad percent-escape": "x=%zz%",
        "an 8 KB query": "x=" + "a" * 8192,
        "2,000 parameters": "&".join(f"p{i}=1" for i in range(2000)),
        "a NUL in a parameter's name": "a%00b=1",
    }
    # Past what the gateway reads of a request line and headers: 431.
    yield Hostile(
        "conversations: a 40 KB query", kind, "GET", "/v1/conversations", query="x=" + "a" * 40_000
    )
    for name, query in ignored.items():
        yield Hostile(
            f"conversations: {name}",
            kind,
            "GET",
            "/v1/conversations",
            query=query,
            may_succeed=True,
        )


def path_ids() -> Iterator[Hostile]:
    kind = "path ids"
    ids = {
        "a huge id": "i" * 20_000,
        "an encoded traversal": "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "a double-encoded traversal": "%252e%252e%252f",
        "a backslash traversal": "..%5c..%5cwindows",
        "a NUL": "abc%00def",
        "invalid UTF-8": "%ff%fe%fd",
        "an encoded surrogate": "%ed%a0%80",
        "an overlong slash": "%c0%af",
        "a SQL injection": quote("' OR 1=1 --", safe=""),
        "a newline": "abc%0d%0aSet-Cookie:%20x=1",
        "emoji": quote("\U0001f4b0" * 50, safe=""),
        "a UUID of zeros": "00000000-0000-0000-0000-000000000000",
        "an integer": "0",
        "a negative integer": "-1",
    }
    for collection in ("conversations", "requests", "documents"):
        for name, value in ids.items():
            yield Hostile(f"{collection}/{{id}}: {name}", kind, "GET", f"/v1/{collection}/{value}")


def methods_and_routes() -> Iterator[Hostile]:
    kind = "methods and unknown routes"
    # Each route and the methods it answers: every other method is sent to it.
    routes = {
        "/v1/ask": {"POST"},
        "/v1/conversations": {"GET"},
        "/v1/conversations/x": {"GET", "DELETE"},
        "/v1/requests/x": {"GET"},
        "/v1/documents": {"GET", "POST"},
        "/v1/documents/x": {"GET", "DELETE"},
        "/healthz": {"GET"},
        "/readyz": {"GET"},
    }
    for path, allowed in routes.items():
        for method in ("PUT", "DELETE", "PATCH", "TRACE", "OPTIONS", "POST", "GET"):
            if method in allowed:
                continue
            yield Hostile(f"{method} {path}", kind, method, path)
    for path in ("/v2/ask", "/v1", "/wp-admin", "/.env", "/v1/ask/extra", "/%2e%2e/etc/passwd"):
        yield Hostile(f"GET {path}", kind, "GET", path)
    # A method HTTP does not have: the server's parser refuses it (a 400) before any route.
    yield Hostile("a method named FOO", kind, "FOO", "/v1/ask")


def authorization() -> Iterator[Hostile]:
    kind = "authorization headers"
    values = {
        "an unknown key": "Bearer finq_" + "A" * 43,
        "basic auth": "Basic dXNlcjpwYXNz",
        "a scheme only": "Bearer",
        "a 4 KB key": "Bearer " + "k" * 4096,
        "a 64 KB key": "Bearer " + "k" * 65_536,
        "a key with spaces": "Bearer finq_ a b c",
    }
    for name, value in values.items():
        yield Hostile(
            f"conversations with {name}",
            kind,
            "GET",
            "/v1/conversations",
            headers=(("authorization", value),),
        )


def wire(method: str, target: bytes, *headers: bytes, body: bytes = b"") -> bytes:
    lines = [method.encode() + b" " + target + b" HTTP/1.1", b"host: finq", *headers]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def raw_requests() -> Iterator[Hostile]:
    kind = "broken HTTP"
    requests = {
        "a request line of garbage": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
        "a space in the target": wire("GET", b"/v1/conversations/a b"),
        "a raw NUL in the target": wire("GET", b"/v1/conversations/a\x00b"),
        "raw invalid UTF-8 in the target": wire("GET", b"/v1/conversations/\xff\xfe"),
        "a raw control character in the target": wire("GET", b"/v1/conversations/\x01"),
        "an unencoded traversal": wire("GET", b"/v1/../../etc/passwd"),
        "an asterisk target": wire("OPTIONS", b"*"),
        "an unknown HTTP version": b"GET /healthz HTTP/9.9\r\nhost: finq\r\n\r\n",
        "a header without a colon": wire("GET", b"/v1/conversations", b"no colon here"),
        "a header name with a space": wire("GET", b"/v1/conversations", b"bad name: x"),
        "a NUL in a header value": wire("GET", b"/v1/conversations", b"x-a: a\x00b"),
        "an empty bearer key": wire("GET", b"/v1/conversations", b"authorization: Bearer "),
        "a Latin-1 bearer key": wire(
            "GET", b"/v1/conversations", b"authorization: Bearer finq_" + b"\xe9" * 43
        ),
        "a NUL in the bearer key": wire(
            "GET", b"/v1/conversations", b"authorization: Bearer finq_\x00"
        ),
        "a negative content length": wire("POST", b"/v1/ask", b"content-length: -1"),
        "a content length of letters": wire("POST", b"/v1/ask", b"content-length: ten"),
        "two content lengths": wire(
            "POST", b"/v1/ask", b"content-length: 2", b"content-length: 3", body=b"{}"
        ),
        "a content length with chunked": wire(
            "POST",
            b"/v1/ask",
            b"content-length: 4",
            b"transfer-encoding: chunked",
            body=b"0\r\n\r\n",
        ),
        "a chunk size of letters": wire(
            "POST", b"/v1/ask", b"transfer-encoding: chunked", body=b"zz\r\n{}\r\n0\r\n\r\n"
        ),
        "an unknown transfer encoding": wire(
            "POST", b"/v1/ask", b"transfer-encoding: gzip, zstd", body=b"{}"
        ),
        "a declared body past the JSON limit": wire(
            "POST",
            b"/v1/ask",
            f"content-length: {JSON_LIMIT * 4}".encode(),
            b"content-type: application/json",
            body=b"{" * (JSON_LIMIT * 4),
        ),
        "a chunked body past the JSON limit": wire(
            "POST",
            b"/v1/ask",
            b"transfer-encoding: chunked",
            b"content-type: application/json",
            body=b"".join(b"1000\r\n" + b"[" * 4096 + b"\r\n" for _ in range(8)) + b"0\r\n\r\n",
        ),
        "a 256 KB header": wire("GET", b"/v1/conversations", b"x-big: " + b"a" * 256 * 1024),
        "5,000 headers": wire("GET", b"/v1/conversations", *(b"x-h%d: v" % i for i in range(5000))),
        "an upload declared past the limit": wire(
            "POST",
            b"/v1/documents",
            f"content-length: {UPLOAD_LIMIT * 64}".encode(),
            b"content-type: multipart/form-data; boundary=b",
        ),
    }
    for name, data in requests.items():
        yield Hostile(f"raw: {name}", kind, raw=data)
    # HTTP lets a client name the server in the target (absolute-form): answered.
    yield Hostile(
        "raw: an absolute-form target",
        kind,
        raw=wire("GET", b"http://evil.example/healthz"),
        may_succeed=True,
    )
    # A body that stops short of its chunk's size and then the client's end of the
    # connection: nothing is left to answer, and the gateway must simply let go.
    yield Hostile(
        "raw: a chunk shorter than its size, then the end",
        kind,
        raw=wire("POST", b"/v1/ask", b"transfer-encoding: chunked", body=b"10\r\n{}\r\n"),
        eof=True,
        may_close=True,
    )


# --- multipart -------------------------------------------------------------------------

BOUNDARY = "finqhostileboundary"
MULTIPART_TYPE: Headers = (("content-type", f"multipart/form-data; boundary={BOUNDARY}"),)


def part(name: str, content: bytes, filename: str | bytes | None = None, ctype: str = "") -> bytes:
    disposition = f'form-data; name="{name}"'.encode()
    if filename is not None:
        raw = filename if isinstance(filename, bytes) else filename.encode()
        disposition += b'; filename="' + raw + b'"'
    head = b"content-disposition: " + disposition
    if ctype:
        head += b"\r\ncontent-type: " + ctype.encode()
    return b"--" + BOUNDARY.encode() + b"\r\n" + head + b"\r\n\r\n" + content + b"\r\n"


def multipart(*parts: bytes) -> bytes:
    return b"".join(parts) + b"--" + BOUNDARY.encode() + b"--\r\n"


def upload(
    name: str,
    kind: str,
    body: bytes,
    *,
    headers: Headers = MULTIPART_TYPE,
    taken: bool = False,
    chunked: bool = False,
) -> Hostile:
    return Hostile(
        f"upload: {name}",
        kind,
        "POST",
        "/v1/documents",
        headers=headers,
        body=body,
        chunked=chunked,
        upload=taken,
    )


def file_part(filename: str | bytes, content: bytes, ctype: str = "") -> bytes:
    return part("file", content, filename, ctype)


def multipart_abuse() -> Iterator[Hostile]:
    kind = "multipart"
    text = b"Apple's revenue grew in fiscal 2023.\n"
    yield upload("no parts", kind, multipart())
    yield upload("no file, only fields", kind, multipart(part("symbol", b"AAPL")))
    yield upload("file sent as a plain field", kind, multipart(part("file", text)))
    yield upload("an empty file", kind, multipart(file_part("empty.txt", b"", "text/plain")))
    yield upload(
        "no boundary in the type",
        kind,
        multipart(file_part("a.txt", text)),
        headers=(("content-type", "multipart/form-data"),),
    )
    yield upload(
        "a different boundary",
        kind,
        multipart(file_part("a.txt", text)),
        headers=(("content-type", "multipart/form-data; boundary=other"),),
    )
    yield upload("no closing boundary", kind, file_part("a.txt", text))
    yield upload("a truncated part", kind, file_part("a.txt", text)[:40])
    yield upload("not multipart at all", kind, b"just some bytes")
    yield upload("JSON instead", kind, b'{"file": "x"}', headers=JSON_TYPE)
    yield upload("no content type", kind, multipart(file_part("a.txt", text)), headers=())
    yield upload(
        "a 200 KB part header",
        kind,
        b"--" + BOUNDARY.encode() + b'\r\ncontent-disposition: form-data; name="file";'
        b' filename="a.txt"\r\nx-pad: '
        + b"p" * 200_000
        + b"\r\n\r\nx\r\n"
        + b"--"
        + BOUNDARY.encode()
        + b"--\r\n",
    )
    yield upload(
        "a 200 KB title", kind, multipart(part("title", b"t" * 200_000), file_part("a.txt", text))
    )
    yield upload(
        "a file with neither a suffix nor a type", kind, multipart(file_part("report", text))
    )
    yield upload(
        "a file with no suffix sent as a PDF",
        kind,
        multipart(file_part("report", b"%PDF-1.7 no more", "application/pdf")),
        taken=True,
    )
    yield upload(
        "two files", kind, multipart(file_part("a.txt", text), file_part("b.txt", text + b"b"))
    )
    yield upload(
        "a symbol given twice",
        kind,
        multipart(part("symbol", b"AAPL"), part("symbol", b"MSFT"), file_part("a.txt", text)),
    )
    yield upload(
        "1,200 files", kind, multipart(*(file_part(f"f{i}.txt", b"x") for i in range(1200)))
    )
    yield upload(
        "1,200 fields",
        kind,
        multipart(*(part(f"k{i}", b"v") for i in range(1200)), file_part("a.txt", text)),
    )
    names: dict[str, str | bytes] = {
        "a name without a suffix": "report",
        "a bare suffix": ".pdf",
        "an executable": "setup.exe",
        "a double suffix": "report.pdf.exe",
        "an image": "photo.png",
        "a traversal": "../../../../etc/passwd",
        "a traversal to a .txt": "../../../../tmp/owned.txt",
        "a Windows traversal": "..\\..\\windows\\win.ini",
        "an absolute path": "/etc/passwd",
        "a NUL": b"notes.txt\x00.exe",
        "invalid UTF-8": b"\xff\xfe.exe",
        "a 10,000-character name": "n" * 10_000 + ".exe",
        "an empty name": "",
    }
    for name, filename in names.items():
        yield upload(f"file named with {name}", kind, multipart(file_part(filename, text)))
    # The part's header ends at the line break: the rest is another header, and the upload
    # is an ordinary a.txt.
    yield upload(
        "file named with a CRLF header injection",
        kind,
        multipart(file_part(b"a.txt\r\nx-injected: yes", b"injected\n")),
        taken=True,
    )
    for name, (filename, ctype) in {
        "a PDF sent as an image": ("a.pdf", "image/png"),
        "HTML sent as an executable": ("a.html", "application/x-msdownload"),
    }.items():
        yield upload(name, kind, multipart(file_part(filename, text, ctype)))
    # A declared type finq reads decides over the name: the job reads the file as that type
    # (and fails with a reason when the bytes are not of it).
    for name, (filename, ctype) in {
        "a text file sent as HTML": ("a.txt", "text/html"),
        "markdown sent as a PDF": ("a.md", "application/pdf"),
    }.items():
        yield upload(name, kind, multipart(file_part(filename, text, ctype)), taken=True)
    # A type that names nothing is no type: the name's suffix decides.
    yield upload(
        "a garbage content type",
        kind,
        multipart(file_part("a.txt", b"garbage type\n", ";;;garbage")),
        taken=True,
    )
    fields: dict[str, tuple[str, bytes]] = {
        "fiscal_year of letters": ("fiscal_year", b"abc"),
        "fiscal_year 1800": ("fiscal_year", b"1800"),
        "fiscal_year of 40 digits": ("fiscal_year", b"9" * 40),
        "fiscal_year 'null'": ("fiscal_year", b"null"),
        "fiscal_quarter 5": ("fiscal_quarter", b"5"),
        "fiscal_quarter -1": ("fiscal_quarter", b"-1"),
        "symbol of punctuation": ("symbol", b"!!!"),
        "symbol of 20 letters": ("symbol", b"A" * 20),
        "symbol with a NUL": ("symbol", b"AA\x00PL"),
        "form of 21 characters": ("form", b"F" * 21),
        "form with a newline": ("form", b"10-K\nX"),
        "title of 301 characters": ("title", b"T" * 301),
        "title with a NUL": ("title", b"Notes\x00"),
        "title with an escape sequence": ("title", b"\x1b[2J"),
    }
    for name, (field_name, value) in fields.items():
        body = multipart(part(field_name, value), file_part("a.txt", text, "text/plain"))
        yield upload(name, kind, body)
    # Form fields are read as UTF-8 with replacement characters: a title of them is taken.
    body = multipart(part("title", b"\xff\xfe"), file_part("b.txt", b"odd title\n", "text/plain"))
    yield upload("title of invalid UTF-8", kind, body, taken=True)
    past = UPLOAD_LIMIT + 128 * 1024
    yield upload(
        "a file past the limit", kind, multipart(file_part("big.txt", b"a" * past, "text/plain"))
    )
    yield upload(
        "a chunked file past the limit",
        kind,
        multipart(file_part("big.txt", b"b" * past, "text/plain")),
        chunked=True,
    )
    yield upload(
        "a chunked file four times the limit",
        kind,
        multipart(file_part("big.txt", b"c" * 4 * UPLOAD_LIMIT)),
        chunked=True,
    )


# --- pathological documents -----------------------------------------------------------


def pdf(*objects: bytes, trailer: bytes = b"<< /Root 1 0 R /Size %d >>") -> bytes:
    """A PDF of `objects` (numbered from 1) with a correct cross-reference table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    size = len(objects) + 1
    out.write(b"trailer\n" + (trailer % size if b"%d" in trailer else trailer))
    out.write(b"\nstartxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def stream(data: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d %s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def one_page_pdf(content: bytes, *, pages: bytes | None = None) -> bytes:
    return pdf(
        b"<< /Type /Catalog /Pages 2 0 R >>",
        pages or b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        content,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    )


def text_stream(text: str) -> bytes:
    return stream(b"BT /F1 12 Tf 72 720 Td (" + text.encode() + b") Tj ET")


def pdf_documents() -> dict[str, bytes]:
    good = one_page_pdf(text_stream("Apple revenue grew in fiscal 2023."))
    # 200 KB of deflated zeros opens up to 200 MB: a bomb, sized so a test can afford it.
    bomb = zlib.compress(b"0" * (200 * 1024 * 1024), 9)
    return {
        "a.pdf a good one-page PDF": good,
        "truncated.pdf cut in half": good[: len(good) // 2],
        "header.pdf only the header": b"%PDF-1.7\n",
        "random.pdf random bytes": bytes((i * 7919 + 13) % 256 for i in range(64 * 1024)),
        "text.pdf plain text named .pdf": b"Apple revenue 2023\n" * 100,
        "bomb.pdf a deflate bomb in the page": one_page_pdf(stream(bomb, b"/Filter /FlateDecode")),
        "count.pdf a page count of a billion": one_page_pdf(
            text_stream("x"), pages=b"<< /Type /Pages /Kids [3 0 R] /Count 1000000000 >>"
        ),
        "cycle.pdf a page tree that holds itself": one_page_pdf(
            text_stream("x"), pages=b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>"
        ),
        "selfref.pdf an object that is itself": pdf(b"1 0 R"),
        "xref.pdf a cross-reference past the end": good.replace(
            b"startxref\n", b"startxref\n99999999"
        ),
        "length.pdf a stream length of 2**62": one_page_pdf(
            b"<< /Length 4611686018427387904 >>\nstream\nBT ET\nendstream"
        ),
        "ops.pdf 15,000 text operators": one_page_pdf(
            stream(b"BT /F1 1 Tf " + b"1 0 Td (x) Tj " * 15_000 + b"ET")
        ),
        "nested.pdf 50,000 nested arrays": one_page_pdf(stream(b"[" * 50_000 + b"]" * 50_000)),
        "encrypted.pdf an encryption dictionary": pdf(
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [] /Count 0 >>",
            b"<< /Filter /Standard /V 2 /R 3 /O (x) /U (y) /P -1 /Length 128 >>",
            trailer=b"<< /Root 1 0 R /Size %d /Encrypt 3 0 R /ID [(a) (b)] >>",
        ),
    }


def markdown_documents() -> dict[str, bytes]:
    # Pathological in shape, small in text: every chunk of text is embedded, and that, not
    # the pathology, is what a large document costs the test.
    return {
        "line.md one 32 KB line": b"Apple revenue " * 2400,
        "spaces.md a 32 KB line of spaces": b" " * 32 * 1024 + b"x",
        "heading.md a heading of 32 KB of spaces": b"#" + b" " * 32 * 1024 + b"#",
        "tabs.md a heading of 32 KB of tabs and hashes": b"# " + b"\t#" * 16 * 1024 + b"x",
        "hashes.md an 8 KB heading of hashes": b"# " + b"#" * 8 * 1024 + b" x",
        "table.md a table pattern bomb": b"|a|b|\n" + b"|" + b" -:" * 10_000 + b"\n",
        "delimiter.md a delimiter row of 32 KB of spaces": b"|a|\n|" + b" " * 32 * 1024 + b"-\n",
        "pipes.md 8 KB of pipes and dashes": b"| x |\n" + b"|-" * 4 * 1024 + b"\n",
        "rows.md 20,000 table rows": b"| a | b |\n|---|---|\n" + b"| 1 | 2 |\n" * 20_000,
        "quotes.md 30,000 nested quotes": b">" * 30_000 + b" deep",
        "lists.md 120 levels of nested lists": b"".join(b"  " * i + b"- x\n" for i in range(120)),
        "fences.md an unclosed fence": b"```\n" + b"code\n" * 3000,
        "brackets.md 20,000 brackets": b"[" * 20_000 + b"](" * 5_000,
        "emphasis.md 20,000 asterisks": b"*_" * 10_000,
        "blank.md 100,000 blank lines": b"\n" * 100_000 + b"x",
        "crlf.md only carriage returns": b"a\r" * 5_000,
        "binary.md NUL bytes": b"# Title\n\x00\x00\x00" * 100,
        "latin1.md invalid UTF-8": b"# R\xe9sum\xe9\n\xff\xfe text",
    }


def html_documents() -> dict[str, bytes]:
    laughs = b"".join(
        b'<!ENTITY l%d "&l%d;&l%d;&l%d;&l%d;&l%d;&l%d;&l%d;&l%d;&l%d;&l%d;">\n'
        % (n, *([n - 1] * 10))
        for n in range(1, 10)
    )
    billion = (
        b'<?xml version="1.0"?>\n<!DOCTYPE html [\n<!ENTITY l0 "lol">\n'
        + laughs
        + b"]>\n<html><body><p>&l9;</p></body></html>"
    )
    external = (
        b'<?xml version="1.0"?>\n<!DOCTYPE html [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b"<html><body><p>&x;</p></body></html>"
    )
    return {
        "divs.html 20,000 nested divs": b"<div>" * 20_000 + b"x" + b"</div>" * 20_000,
        "unclosed.html 40,000 unclosed tags": b"<b><i>" * 20_000 + b"x",
        "tables.html 2,000 nested tables": b"<table><tr><td>" * 2000 + b"x",
        "laughs.html billion laughs": billion,
        "laughs.xhtml.html billion laughs as XHTML": billion.replace(
            b"<html>", b'<html xmlns="http://www.w3.org/1999/xhtml">'
        ),
        "external.html an external entity": external,
        "attribute.html a 200 KB attribute": b'<p title="' + b"a" * 200_000 + b'">x</p>',
        "attributes.html 10,000 attributes": b"<p "
        + b" ".join(b"a%d=1" % i for i in range(10_000))
        + b">x</p>",
        "comment.html an unclosed comment": b"<html><!--" + b"x" * 100_000,
        "script.html only script": b"<script>" + b"while(1){}" * 10_000 + b"</script>",
        "nul.html NUL bytes": b"<p>a\x00b</p>" * 1000,
        "charset.html a bogus charset": b'<meta charset="x-no-such"><p>caf\xe9</p>',
        "utf7.html UTF-7": b'<meta charset="utf-7"><p>+ADw-script+AD4-</p>',
        "entities.html 20,000 numeric entities": b"<p>" + b"&#x10FFFF;&#0;" * 10_000 + b"</p>",
        "spans.html a 5,000 colspan": b"<table><tr><td colspan=5000>x</td></tr></table>" * 40,
        "rowspans.html a rowspan of 65,535": b"<table>"
        + b"<tr><td rowspan=65535>x</td></tr>" * 200
        + b"</table>",
    }


def docx_documents() -> dict[str, bytes]:
    def zipped(files: dict[str, bytes]) -> bytes:
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in files.items():
                archive.writestr(name, data)
        return out.getvalue()

    package = "http://schemas.openxmlformats.org/package/2006"
    types = (
        f'<?xml version="1.0"?><Types xmlns="{package}/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
        'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
        'officedocument.wordprocessingml.document.main+xml"/></Types>'
    ).encode()
    rels = (
        f'<?xml version="1.0"?><Relationships xmlns="{package}/relationships"><Relationship '
        'Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        'officeDocument" Target="word/document.xml"/></Relationships>'
    ).encode()

    def word(body: bytes) -> bytes:
        return zipped(
            {
                "[Content_Types].xml": types,
                "_rels/.rels": rels,
                "word/document.xml": b'<?xml version="1.0"?><w:document xmlns:w="http://'
                b'schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
                + body
                + b"</w:body></w:document>",
            }
        )

    return {
        "good.docx a one-paragraph document": word(
            b"<w:p><w:r><w:t>Apple revenue</w:t></w:r></w:p>"
        ),
        "random.docx random bytes": bytes((i * 31 + 7) % 256 for i in range(32 * 1024)),
        "empty.docx an empty zip": zipped({}),
        "types.docx a zip with no document": zipped({"[Content_Types].xml": types}),
        # 48 MB of empty paragraphs, deflated to 74 KB.
        "bomb.docx a zip bomb of 8 million paragraphs": word(b"<w:p/>" * 8 * 1024 * 1024),
        "deep.docx 100,000 nested elements": word(b"<w:p>" * 100_000 + b"</w:p>" * 100_000),
        "text.docx plain text named .docx": b"Apple revenue 2023",
    }


def text_documents() -> dict[str, bytes]:
    return {
        "line.txt one 32 KB line": b"revenue " * 4096,
        "nul.txt NUL bytes": b"\x00" * 4096,
        "utf16.txt UTF-16": "Apple revenue grew in 2023.\n".encode("utf-16") * 100,
        "binary.txt random bytes": bytes((i * 131 + 1) % 256 for i in range(64 * 1024)),
        "paragraphs.txt a newline and 200 KB of spaces": b"\n" + b" " * 200_000 + b"x",
        "course.txt a course of 3,000 lessons": b"Course Title: x\n"
        + b"".join(b"Lesson %d: x\n" % i for i in range(3_000)),
    }


def document_uploads() -> Iterator[Hostile]:
    suites = {
        "pathological PDF": (pdf_documents(), "application/pdf"),
        "pathological markdown": (markdown_documents(), "text/markdown"),
        "pathological HTML": (html_documents(), "text/html"),
        "pathological DOCX": (
            docx_documents(),
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
        "pathological text": (text_documents(), "text/plain"),
    }
    for kind, (documents, ctype) in suites.items():
        for label, content in documents.items():
            filename, _, what = label.partition(" ")
            body = multipart(file_part(filename, content, ctype))
            yield upload(f"{filename}: {what}", kind, body, taken=True)


def build_corpus() -> list[Hostile]:
    return [
        *malformed_json(),
        *nested_json(),
        *wrong_types(),
        *hostile_strings(),
        *content_types(),
        *query_strings(),
        *path_ids(),
        *methods_and_routes(),
        *authorization(),
        *raw_requests(),
        *multipart_abuse(),
        *document_uploads(),
    ]


# --- sending and judging --------------------------------------------------------------


async def pieces(data: bytes, size: int = 16 * 1024) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


async def send(http: httpx.AsyncClient, case: Hostile) -> Outcome:
    started = time.perf_counter()
    if case.raw is not None:
        status, headers, body = await send_raw(http.base_url, case.raw, eof=case.eof)
        return Outcome(case, status, headers, body, time.perf_counter() - started)
    content: bytes | AsyncIterator[bytes] | None = case.body
    if case.chunked and case.body is not None:
        content = pieces(case.body)
    url = httpx.URL(str(http.base_url).rstrip("/") + case.path, query=case.query.encode())
    response = await http.request(case.method, url, content=content, headers=dict(case.headers))
    elapsed = time.perf_counter() - started
    return Outcome(case, response.status_code, dict(response.headers), response.content, elapsed)


async def send_raw(base: httpx.URL, data: bytes, *, eof: bool) -> tuple[int, dict[str, str], bytes]:
    """`data` on a connection of its own; the response read to its length or to the close."""
    parts = urlsplit(str(base))
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(data)
        # The server may answer and close before it has read everything: that is fine.
        with contextlib.suppress(ConnectionError):
            await writer.drain()
            if eof:
                writer.write_eof()
        async with asyncio.timeout(REQUEST_TIMEOUT.read or 20.0):
            head = await reader.readuntil(b"\r\n\r\n")
            status_line, *lines = head.decode("latin-1").split("\r\n")
            headers = {
                name.strip().lower(): value.strip()
                for name, _, value in (line.partition(":") for line in lines if line)
            }
            length = headers.get("content-length")
            body = await (reader.readexactly(int(length)) if length else reader.read())
        return int(status_line.split()[1]), headers, body
    finally:
        writer.close()


def judge(outcome: Outcome) -> str | None:
    """What is wrong with an answer, or None."""
    case, status = outcome.case, outcome.status
    if status >= 500:
        return f"a {status}: {outcome.body[:300]!r}"
    if 200 <= status < 300:
        if not (case.may_succeed or case.upload):
            return f"a {status} to a request that should be refused: {outcome.body[:200]!r}"
        return None if is_json(outcome) else f"a {status} that is not JSON"
    if not 400 <= status < 500:
        return f"a {status}, neither a success nor a 4xx"
    if not is_json(outcome):
        return f"a {status} that is not JSON: {outcome.body[:200]!r}"
    error = json.loads(outcome.body)
    if not (
        isinstance(error, dict)
        and set(error) == {"code", "message"}
        and all(isinstance(error[k], str) and error[k] for k in ("code", "message"))
    ):
        return f"a {status} whose body is not {{code, message}}: {outcome.body[:200]!r}"
    if status == 405 and "allow" not in outcome.headers:
        return "a 405 without Allow"
    return None


def is_json(outcome: Outcome) -> bool:
    if not outcome.headers.get("content-type", "").startswith("application/json"):
        return False
    try:
        json.loads(outcome.body)
    except ValueError:
        return False
    return True


class HealthProbe:
    """GET /healthz every PROBE_EVERY seconds on a thread of its own (so the corpus's own
    work in the test's event loop does not delay it), recording how long each took."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.seconds: list[float] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="healthz-probe", daemon=True)

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=5.0) as http:
            while not self._stop.is_set():
                started = time.perf_counter()
                try:
                    response = http.get("/healthz")
                    if response.status_code != 200:
                        self.failures.append(f"{response.status_code} {response.text[:100]}")
                except httpx.HTTPError as error:
                    self.failures.append(repr(error))
                took = time.perf_counter() - started
                self.seconds.append(took)
                # The probe's own pace, not a wait for the server: Event.wait is its clock.
                self._stop.wait(max(0.0, PROBE_EVERY - took))

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@dataclass
class Jobs:
    """The uploads the gateway took, and what became of each."""

    taken: dict[str, Outcome] = field(default_factory=dict)
    final: dict[str, dict[str, Any]] = field(default_factory=dict)


async def finish_jobs(http: httpx.AsyncClient, jobs: Jobs) -> list[str]:
    """Follow every taken upload until it is ready or failed; the problems seen."""

    async def all_ended() -> bool:
        for document_id in sorted(set(jobs.taken) - set(jobs.final)):
            response = await http.get(f"/v1/documents/{document_id}")
            assert response.status_code == 200, response.text
            document = response.json()
            if document["status"] in ("ready", "failed"):
                jobs.final[document_id] = document
        return len(jobs.final) == len(jobs.taken)

    problems: list[str] = []
    try:
        # Once a second: polling every upload faster is itself a load that /healthz would
        # queue behind.
        await wait_until(all_ended, within=JOBS_WITHIN, every=1.0)
    except TimeoutError:
        problems.extend(
            f"{jobs.taken[d].case.name}: its job did not end within {JOBS_WITHIN:g} s"
            for d in set(jobs.taken) - set(jobs.final)
        )
    for document_id, document in jobs.final.items():
        error = document.get("error")
        if document["status"] == "failed" and not (
            isinstance(error, dict) and error.get("code") and error.get("message")
        ):
            problems.append(f"{jobs.taken[document_id].case.name}: failed without a reason")
    return problems


async def run_corpus(url: str, corpus: list[Hostile]) -> tuple[list[Outcome], Jobs, list[str]]:
    """Send every case in turn, then follow the uploads taken to their ends."""
    outcomes: list[Outcome] = []
    jobs = Jobs()
    async with httpx.AsyncClient(base_url=url, timeout=REQUEST_TIMEOUT) as http:
        for case in corpus:
            try:
                outcome = await send(http, case)
            except (httpx.HTTPError, OSError, asyncio.IncompleteReadError, TimeoutError) as error:
                closed = isinstance(error, asyncio.IncompleteReadError) and not error.partial
                problem = None if case.may_close and closed else f"no answer: {error!r}"
                outcome = Outcome(case, 0, {}, b"", 0.0, problem)
            else:
                outcome.problem = judge(outcome)
                if case.upload and 200 <= outcome.status < 300 and outcome.problem is None:
                    jobs.taken[json.loads(outcome.body)["id"]] = outcome
            outcomes.append(outcome)
        job_problems = await finish_jobs(http, jobs)
    return outcomes, jobs, job_problems


# --- the tests -------------------------------------------------------------------------

# The corpus's pipeline: small limits, and an ingest stage that gives up on a file soon.
LIMITS = {
    "FINQ_GATEWAY_JSON_MAX_BYTES": str(JSON_LIMIT),
    "FINQ_DOCUMENT_UPLOAD_MAX_BYTES": str(UPLOAD_LIMIT),
    "FINQ_INGEST_PARSE_TIMEOUT_SECONDS": "5",
    "FINQ_INGEST_PARSE_CPU_SECONDS": "5",
}


@pytest.fixture(scope="module")
async def hostile_finq(
    servers: Servers, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[str]:
    """A pipeline of its own (database, bus and every stage), so the uploads and the
    ingest limits of the corpus touch no other test."""
    folder = tmp_path_factory.mktemp("hostile")
    async with (
        OpenAIStandIn([]) as embeddings,
        own_pipeline(
            servers,
            folder,
            "hostile_input",
            LIMITS,
            stage_settings={Stage.INGEST: embedded_by(embeddings)},
        ) as client,
    ):
        yield str(client.base_url)


def embedded_by(stand_in: OpenAIStandIn) -> dict[str, str]:
    """The ingest stage's settings to embed through the stand-in's /v1/embeddings. What the
    corpus checks ends before the vectors' meaning (a job ends, the gateway answers), and
    MiniLM spent about 80 CPU-seconds here on the hostile uploads' hundreds of passages.
    Only the ingest stage is told: no other stage sees a model."""
    return {
        "FINQ_EMBEDDING_PROVIDER": "openai",
        "FINQ_EMBEDDING_DIMENSIONS": "384",
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": stand_in.base_url,
    }


# Characters around every boundary the rules draw: controls kept and refused, the space-like
# characters str.strip() removes, surrogates, and ordinary letters.
EDGE_CHARACTERS = st.sampled_from(
    [chr(c) for c in range(0x00, 0x21)]
    + ["\x7f", "\x85", "\xa0", "\u1680", "\u2000", "\u200a", "\u200b", "\u2028", "\u202f"]
    + ["\u3000", "\ufeff", "\ud800", "\udfff", "a", "é", "\U0001f4b0", "/", "\\"]
)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.text(EDGE_CHARACTERS, max_size=12) | st.text(max_size=12))
def test_the_schema_pattern_of_a_question_and_the_gateways_check_agree(question: str) -> None:
    stated = (
        1 <= len(question) <= MAX_QUESTION_CHARS
        and re.fullmatch(QUESTION_PATTERN, question) is not None
        # A lone surrogate is not a string JSON Schema can speak of (nor UTF-8 carry).
        and not any("\ud800" <= c <= "\udfff" for c in question)
    )
    assert (question_problem(question) is None) == stated


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(EDGE_CHARACTERS, max_size=12))
def test_a_file_name_is_one_plain_name(name: str) -> None:
    plain = (
        0 < len(name) <= 255
        and re.fullmatch(LINE_PATTERN, name) is not None
        and not any(c in "/\\" or "\ud800" <= c <= "\udfff" for c in name)
    )
    assert (file_name_problem(name) is None) == plain


def test_the_corpus_covers_every_endpoint_with_unique_names() -> None:
    corpus = build_corpus()
    assert len(corpus) >= 200
    names = Counter(case.name for case in corpus)
    assert [name for name, count in names.items() if count > 1] == []
    paths = {case.path for case in corpus if case.raw is None}
    for endpoint in ("/v1/ask", "/v1/conversations", "/v1/documents", "/healthz", "/readyz"):
        assert endpoint in paths
    for collection in ("conversations", "requests", "documents"):
        assert any(path.startswith(f"/v1/{collection}/") for path in paths)


async def test_every_hostile_request_gets_a_json_4xx_or_a_job_that_ends_and_healthz_stays_fast(
    hostile_finq: str,
) -> None:
    corpus = build_corpus()  # before the probe starts: building the bombs takes a second
    with HealthProbe(hostile_finq) as probe:
        outcomes, jobs, job_problems = await run_corpus(hostile_finq, corpus)
    statuses = Counter(o.status for o in outcomes)
    print(
        f"{len(outcomes)} requests, answers {dict(sorted(statuses.items()))}; "
        f"{len(jobs.taken)} uploads taken, {Counter(d['status'] for d in jobs.final.values())}; "
        f"{len(probe.seconds)} /healthz probes, slowest {max(probe.seconds) * 1000:.0f} ms"
    )
    problems = [f"{o.case.name}: {o.problem}" for o in outcomes if o.problem] + job_problems
    assert problems == [], "\n".join(problems)
    assert len(outcomes) >= 200
    # Both ends of a job are reached: some uploads are read, the hostile ones fail.
    ends = Counter(document["status"] for document in jobs.final.values())
    assert ends["ready"] and ends["failed"], ends
    assert probe.failures == []
    slowest = max(probe.seconds)
    assert len(probe.seconds) > 100, f"only {len(probe.seconds)} health probes ran"
    assert slowest < PROBE_SLOWEST, (
        f"the slowest of {len(probe.seconds)} /healthz probes took {slowest * 1000:.0f} ms"
    )
