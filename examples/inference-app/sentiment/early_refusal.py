"""Refusing a request before aiohttp sees it: the cheap path for shedding under overload.

Under more load than the deadline allows, the server refuses a share of requests with 503. Through aiohttp
each refusal costs about what an answer costs on the event loop (parsing into a request object, a task, the
middlewares, a response object, its headers): about 120 µs on the development machine, CPU the model workers
need. The connection guard (connections.py) therefore looks at the first chunk of each request: when it holds
exactly one complete, plain ``POST /analyze`` request and admission would refuse it, the guard writes a 503
pre-rendered here and aiohttp never sees the bytes. Anything else (a request split over several reads, two
pipelined in one, chunked bodies, ``Expect``, ``Connection`` or ``Upgrade`` headers, HTTP/1.0, a malformed or
duplicate header) goes through aiohttp as before, which refuses it the same way, only more slowly.

`plain_analyze_request` reads the bytes (a pure function); `RefusalRenderer` renders the answer.
"""

import json
import time
from typing import Optional

REQUEST_LINE = b"POST /analyze HTTP/1.1\r\n"
# Headers whose meaning aiohttp must handle (a body that is not a plain Content-Length, a 100-continue, a
# connection that must close or switch protocols): such a request is never refused here.
NOT_PLAIN = frozenset({b"transfer-encoding", b"expect", b"connection", b"upgrade"})
TOKEN_CHARS = frozenset(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz")


def plain_analyze_request(data: bytes) -> Optional[dict[str, str]]:
    """The headers (lower-case names, decoded values) of ``data`` when it is exactly one complete HTTP/1.1
    ``POST /analyze`` request with a ``Content-Length`` body and nothing aiohttp must handle; None otherwise."""
    if not data.startswith(REQUEST_LINE):
        return None
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    headers: dict[str, str] = {}
    for line in data[len(REQUEST_LINE):end].split(b"\r\n"):
        name, colon, value = line.partition(b":")
        name = name.lower()
        # A name must be a token: this also refuses obsolete line folding (a line starting with a blank) and
        # whitespace before the colon, which proxies read differently (request smuggling).
        if not colon or not name or not TOKEN_CHARS.issuperset(name) or name in NOT_PLAIN:
            return None
        key = name.decode("ascii")
        if key in headers:  # a repeated header (two Content-Lengths above all): aiohttp decides
            return None
        try:
            headers[key] = value.strip(b" \t").decode("ascii")
        except UnicodeDecodeError:
            return None
    length = headers.get("content-length", "")
    if not length.isdigit() or len(length) > 12 or len(data) != end + 4 + int(length):
        return None  # no or odd Content-Length, body not all here, or more than one request in the chunk
    return headers


class RefusalRenderer:
    """503 responses as bytes, with the ``Date`` header rendered once per second."""

    def __init__(self) -> None:
        self._second = -1
        self._date = b""

    def render(self, reason: str, message: str, retry_after: int, now: Optional[float] = None) -> bytes:
        body = json.dumps({"error": {"reason": reason, "message": message}}).encode()
        second = int(time.time() if now is None else now)
        if second != self._second:
            self._second = second
            self._date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(second)).encode()
        return b"".join((
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n"
            b"Retry-After: ", str(retry_after).encode(), b"\r\nContent-Length: ", str(len(body)).encode(),
            b"\r\nDate: ", self._date, b"\r\n\r\n", body,
        ))
