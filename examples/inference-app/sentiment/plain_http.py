"""Plain HTTP/1.1 for the hot path (fast_path.py): reading one plain ``POST /analyze`` request, writing answers.

`plain_analyze_request` accepts only the simplest, unambiguous form of a request: exactly one complete
``POST /analyze HTTP/1.1`` request in one chunk of bytes, its body sized by one ``Content-Length``, and none of
the headers whose meaning needs a full HTTP implementation (``Transfer-Encoding``, ``Expect``, ``Connection``,
``Upgrade``). Header names must be tokens; a repeated header, obsolete line folding, whitespace before a colon,
a control character in a value or a byte outside ASCII makes it refuse, so two parsers never read one request
two ways (request smuggling).
Anything it refuses goes to aiohttp. `ResponseRenderer` writes a complete response with a ``Date`` header.
Pure functions and a small cache; no I/O.
"""

import json
import time
from typing import Optional

from .validation import error_document

REQUEST_LINE = b"POST /analyze HTTP/1.1\r\n"
# Headers whose meaning aiohttp must handle (a body that is not a plain Content-Length, a 100-continue, a
# connection that must close or switch protocols): such a request is left to aiohttp.
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
            text = value.strip(b" \t").decode("ascii")
        except UnicodeDecodeError:
            return None
        if not text.isprintable():  # a control character (a bare LF above all: another line to some parsers)
            return None
        headers[key] = text
    length = headers.get("content-length", "")
    if not length.isdigit() or len(length) > 12 or len(data) != end + 4 + int(length):
        return None  # no or odd Content-Length, body not all here, or more than one request in the chunk
    return headers


def keep_alive_value(keepalive_timeout: float) -> str:
    """The ``Keep-Alive`` header's value, ``timeout=N``: an idle connection stays open at least N whole seconds
    (rounded down), so a client that honours it never sends a request into a connection the server closes as
    idle."""
    return f"timeout={int(keepalive_timeout)}"


REASONS = {200: b"OK", 500: b"Internal Server Error", 503: b"Service Unavailable"}


def error_body(reason: str, message: str) -> bytes:
    """`validation.error_document` as bytes."""
    return json.dumps(error_document(reason, message)).encode()


class ResponseRenderer:
    """Responses as bytes: a JSON body, ``Retry-After`` on a 503, ``Connection: close`` when the connection
    closes after it, else ``Keep-Alive: timeout=N`` when ``keepalive_timeout`` is given (how long the server keeps
    an idle connection, whole seconds rounded down); the ``Date`` header is rendered once per second."""

    def __init__(self, keepalive_timeout: Optional[float] = None) -> None:
        self._second = -1
        self._date = b""
        self._keep_alive = (b"" if keepalive_timeout is None
                            else b"Keep-Alive: %s\r\n" % keep_alive_value(keepalive_timeout).encode())

    def render(self, status: int, body: bytes, retry_after: Optional[int] = None, close: bool = False,
               now: Optional[float] = None) -> bytes:
        second = int(time.time() if now is None else now)
        if second != self._second:
            self._second = second
            self._date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(second)).encode()
        return b"".join((
            b"HTTP/1.1 %d %s\r\nContent-Type: application/json; charset=utf-8\r\n" % (status, REASONS[status]),
            b"Retry-After: %d\r\n" % retry_after if retry_after is not None else b"",
            b"Connection: close\r\n" if close else self._keep_alive,
            b"Content-Length: %d\r\nDate: " % len(body), self._date, b"\r\n\r\n", body,
        ))
