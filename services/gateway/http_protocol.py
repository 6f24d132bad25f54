"""uvicorn's httptools protocol, answering a request it cannot parse (a garbled request
line, an unknown method, conflicting lengths, a bad chunk size, a NUL in a header) with the
API's JSON error body like every other refusal, instead of uvicorn's plain-text 400; and
refusing a request line and headers past HEAD_MAX_BYTES with 431, which uvicorn would
otherwise read into memory without end.

Such a request never reaches the application, so no exception handler can answer it: the
protocol class is the one place. It depends on uvicorn's internals (pinned in
constraints.txt) and is checked by tests/gateway/test_hostile_input.py.
"""

from __future__ import annotations

import json

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

# The request line and headers together: a browser sends a few KB, and finq's clients far
# less; the common servers stop at 8 to 16 KB.
HEAD_MAX_BYTES = 32 * 1024
MESSAGE = "the request is not valid HTTP/1.1 ({reason})"


class HeadTooLarge(Exception):
    """Raised in a parser callback: httptools stops and uvicorn calls send_400_response."""


class JsonErrorsHttpToolsProtocol(HttpToolsProtocol):
    # The current request's head as parsed so far (target and headers), and the bytes
    # received while it is incomplete.
    _parsed_bytes = 0
    _received_bytes = 0
    _in_head = False
    _head_too_large = False

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._parsed_bytes = self._received_bytes = 0
        self._in_head = True

    def on_url(self, url: bytes) -> None:
        self._count_parsed(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_parsed(len(name) + len(value) + 4)
        super().on_header(name, value)

    def _count_parsed(self, size: int) -> None:
        self._parsed_bytes += size
        if self._parsed_bytes > HEAD_MAX_BYTES:
            self._head_too_large = True
            raise HeadTooLarge

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        # httptools holds a header until it ends, however long, before calling on_header:
        # what arrives while a head is incomplete is counted too, so no more than the limit
        # and one read is ever held. (A read that also holds the end of an earlier pipelined
        # request counts whole: the count errs high by at most one read.)
        if self._in_head and not self.transport.is_closing():
            self._received_bytes += len(data)
            if self._received_bytes > HEAD_MAX_BYTES:
                self._head_too_large = True
                self.send_400_response("")

    def send_400_response(self, msg: str) -> None:
        if self._head_too_large:
            status, code = 431, "headers_too_large"
            message = f"the request line and headers are over {HEAD_MAX_BYTES:,} bytes"
        else:
            status, code = 400, "bad_request"
            message = MESSAGE.format(reason=msg.rstrip(".").lower() or "unreadable")
        encoded = json.dumps({"code": code, "message": message}).encode()
        content = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend(
            [
                b"content-type: application/json\r\n",
                b"content-length: " + str(len(encoded)).encode("ascii") + b"\r\n",
                b"connection: close\r\n",
                b"\r\n",
                encoded,
            ]
        )
        self.transport.write(b"".join(content))
        self.transport.close()
