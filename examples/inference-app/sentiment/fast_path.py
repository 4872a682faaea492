"""The hot path: a plain ``POST /analyze`` answered from bytes to bytes, without aiohttp.

Through aiohttp a request costs the event loop about 110 µs on the development machine (a request object, a
task, routing, two middlewares, a response object and its headers), while a text costs the tiny model about
210 µs of worker CPU: on 2 CPUs, a third of the machine went to the framework, not the model. The connection
guard (connections.py) hands the first chunk of every request to `FastPath.handle`. When the chunk is one
complete plain request (plain_http.py) and the server is ready and not draining, this module does what
`server.analyze` does, in the same order and with the same answers and metrics: the deadline from the first
byte and the timeout headers, admission before the body is parsed, validation, the batcher, the JSON answer,
503 with ``Retry-After`` (the connection then held, `Guard.hold`), 499 ``client_aborted`` when the client left.
Anything else goes to aiohttp: requests split over reads, pipelined, chunked, with ``Expect``, ``Connection``
or ``Upgrade``, HTTP/1.0, other paths, and every request with an invalid timeout header or body (aiohttp's path
answers their 4xx), so only one implementation writes client errors. Once a request of a connection went to
aiohttp, the connection stays with aiohttp (aiohttp may hold further pipelined requests of it, which must be
answered first): a keep-alive client whose requests are all plain never leaves the fast path.

While a request is in flight here, bytes that arrive on its connection (a pipelined next request) wait in the
guard until the answer left (`Guard.begin`, `Guard.end`): answers leave in order. aiohttp does not know these
requests: on shutdown the server waits for them before it lets aiohttp close the connections
(`Connections.drain`).
"""

import json
import logging
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from .batcher import DeadlineExceeded, Overloaded
from .connections import Guard
from .plain_http import REQUEST_LINE, ResponseRenderer, error_body, plain_analyze_request
from .prediction import answer_document
from .validation import TIMEOUT_HEADERS, BadRequest, parse_body, timeout_ms

if TYPE_CHECKING:
    from .server import ServiceState

log = logging.getLogger("sentiment")


class FastPath:
    """`handle` is the guard's first-chunk hook (`Connections`)."""

    def __init__(self, state: "ServiceState"):
        self.state = state
        self.renderer = ResponseRenderer(state.settings.keepalive_timeout_s)

    def handle(self, guard: Guard, data: bytes) -> bool:
        """Take the request in ``data`` (True), or leave it to aiohttp (False)."""
        state = self.state
        if not state.ready or state.draining or not data.startswith(REQUEST_LINE):
            return False
        headers = plain_analyze_request(data)
        if headers is None:
            return False
        arrived = guard.request_arrived
        given = {name: headers[name.lower()] for name in TIMEOUT_HEADERS if name.lower() in headers}
        try:
            deadline = arrived + timeout_ms(given, state.settings.deadline_ms) / 1000.0
        except BadRequest:
            return False
        body = data[len(data) - int(headers["content-length"]):]
        if len(body) > state.limits.max_body_bytes:
            return False
        batcher = state.batcher
        try:
            # As server._analyze: refused before the body is parsed when not even one more text fits in time.
            # The requests aiohttp has read and not yet queued are ahead of this one (`Connections.arriving`).
            batcher.admit(1 + state.connections.arriving, deadline)
            texts, batched = parse_body(body, state.limits)
            future = batcher.enqueue(texts, deadline)
        except Overloaded as refused:
            guard.begin()
            self._finish(guard, arrived, 503, "overloaded", error_body("overloaded", str(refused)),
                         state.retry_after_s(refused))
            return True
        except BadRequest:
            return False
        except RuntimeError:  # the batcher stopped (shutdown): aiohttp's path answers
            return False
        guard.begin()
        future.add_done_callback(partial(self._answered, guard, arrived, batched))
        return True

    def _answered(self, guard: Guard, arrived: float, batched: bool, future: "Any") -> None:
        state = self.state
        if guard.transport is None or guard.transport.is_closing():  # the client left while its texts waited
            log.info("client %s closed the connection before its answer", guard.peer)
            self._finish(guard, arrived, 499, "client_aborted", b"", None)
            return
        error = RuntimeError("cancelled") if future.cancelled() else future.exception()
        if error is None:
            body = json.dumps(answer_document(future.result(), batched)).encode()
            self._finish(guard, arrived, 200, None, body, None)
        elif isinstance(error, DeadlineExceeded):
            self._finish(guard, arrived, 503, "deadline_exceeded", error_body("deadline_exceeded", str(error)),
                         state.settings.retry_after_s)
        else:
            log.error("inference failed", exc_info=error)
            self._finish(guard, arrived, 500, "model_error", error_body("model_error", "inference failed"), None)

    def _finish(self, guard: Guard, arrived: float, status: int, reason: "str | None", body: bytes,
                retry_after: "int | None") -> None:
        """Count, answer (unless the client is gone: 499), and release the connection (`Guard.end`)."""
        self.state.metrics.count_request(status, reason, time.monotonic() - arrived)
        if status == 499:
            guard.end(b"", close=True)
            return
        close = self.state.draining  # from SIGTERM on, every answer closes its connection (server.serve)
        guard.end(self.renderer.render(status, body, retry_after, close), close=close, hold_s=retry_after)
