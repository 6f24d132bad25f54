"""uvicorn's httptools protocol, answering a request it cannot parse (a garbled request
line, an unknown method, conflicting lengths, a bad chunk size, a NUL in a header) with the
API's JSON error body like every other refusal, instead of uvicorn's plain-text 400.

Such a request never reaches the application, so no exception handler can answer it: the
protocol class is the one place. It depends on uvicorn's internals (pinned in
constraints.txt) and is checked by tests/test_hostile_input.py.
"""

from __future__ import annotations

import json

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

MESSAGE = "the request is not valid HTTP/1.1 ({reason})"


class JsonErrorsHttpToolsProtocol(HttpToolsProtocol):
    def send_400_response(self, msg: str) -> None:
        reason = msg.rstrip(".").lower() or "unreadable"
        body = json.dumps({"code": "bad_request", "message": MESSAGE.format(reason=reason)})
        encoded = body.encode()
        content = [STATUS_LINE[400]]
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
