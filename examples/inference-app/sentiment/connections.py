"""Per-connection guard in front of aiohttp's protocol: header read timeout, and the keep-alives' drain on SIGTERM.

aiohttp's server has a keep-alive timeout but no header timeout: a client that sends its request head a byte at
a time (slowloris) holds a connection for as long as it likes. A `Guard` sits between the transport and
aiohttp's protocol and passes every call through; it starts a timer at the first byte of a request and closes the
connection if the request has not reached the app (its head complete) within ``header_timeout`` seconds. Idle
keep-alive connections (no bytes waiting) are not timed here: the keep-alive timeout covers them, and it must stay
longer than a load balancer's idle timeout.

After a 503 with ``Retry-After``, the guard stops reading the connection until that time has passed (`hold`): a
client that honours it loses nothing, and one that resends at once waits in its own socket buffer instead of
making the server refuse it again and again. Refusing is cheap (a plain request is refused by the fast path,
fast_path.py, before aiohttp parses it), but a few hundred clients refusing to wait would otherwise spend the
CPU the model needs on 503s.

`Connections` tracks the guards for the drain on SIGTERM (`Connections.drain`). A keep-alive connection the
server closes while idle can meet the client's next request on the wire: the request is lost, the client sees a
reset or a connection closed without an answer (on a rolling update with 64 keep-alive clients, closing the idle
connections at SIGTERM lost a few requests in 4 runs of 10: rollout_bench.py). So no connection is closed as
idle at SIGTERM: every answer from then on says ``Connection: close`` and the connection closes after it, which
moves each client to a new connection (another pod) at its next request; only a connection idle for longer than
the keep-alive timeout its client was told (``Keep-Alive: timeout=N``), or still idle when the drain time is
up, is closed by the server.
"""

import asyncio
import logging
import time
from typing import Any, Callable, Optional

log = logging.getLogger("sentiment")


# Bytes a client may send ahead while the fast path answers its request, before the guard stops reading.
BACKLOG_LIMIT = 1 << 20


class Guard(asyncio.Protocol):
    """Wraps one aiohttp protocol; the app tells it when a request starts and ends (`Connections.request`)."""

    def __init__(self, inner: Any, connections: "Connections"):
        self.inner = inner
        self.connections = connections
        self.transport: Optional[asyncio.Transport] = None
        self.busy = 0  # requests of this connection inside the app
        self.served = 0  # requests of this connection the app finished
        self.idle_since = 0.0  # time.monotonic() of its last answer
        self._timer: Optional[asyncio.TimerHandle] = None
        self._held: Optional[asyncio.TimerHandle] = None
        self.request_arrived = 0.0  # time.monotonic() of the current request's first byte
        self.arriving = False  # its request went to aiohttp and has not reached the app yet
        self.taken = False  # its request is with the fast path (`begin` .. `end`)
        self.with_aiohttp = False  # a request of it went to aiohttp: the fast path no longer takes its requests
        self._backlog = bytearray()  # bytes received meanwhile

    # -- asyncio.Protocol, passed through ---------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.connections.add(self)
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.taken:  # the fast path has this connection's request: keep what follows until it answered
            self._backlog += data
            if len(self._backlog) > BACKLOG_LIMIT:
                self.transport.pause_reading()  # type: ignore[union-attr]
            return
        if not self.busy and self._timer is None and data:  # the first byte of a request head
            self.request_arrived = time.monotonic()
            if not self.with_aiohttp and self.connections.first_chunk(self, data):  # aiohttp never sees it
                return
            # From now on this connection is aiohttp's: it may hold a pipelined request already, which must be
            # answered before anything the fast path would answer.
            self.with_aiohttp = True
            self.arriving_request()
            self._timer = asyncio.get_running_loop().call_later(self.connections.header_timeout, self._timed_out)
        self.inner.data_received(data)

    def eof_received(self) -> Optional[bool]:
        return self.inner.eof_received()

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.arrived()
        self._cancel_timer()
        if self._held is not None:
            self._held.cancel()
        self.connections.discard(self)
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    # -- state ------------------------------------------------------------------------------------------
    @property
    def quiet(self) -> bool:
        """No request inside the app or aiohttp, no bytes of one received, not held after a 503 (its client's next
        request may wait unread in the socket)."""
        return (not self.busy and self._timer is None and self._held is None
                and not getattr(self.inner, "_request_in_progress", False))

    @property
    def idle(self) -> bool:
        """An idle keep-alive connection: it served a request and is `quiet`. A connection that has served
        nothing yet is not idle: its client has just connected and its request is probably on the wire. Closing
        an idle connection still races its client's next request, unless the client was told it would be
        closed (``Keep-Alive: timeout=N``) and it has been idle that long."""
        return self.served > 0 and self.quiet

    def request_started(self) -> None:
        self.arrived()
        self.busy += 1
        self._cancel_timer()

    def arriving_request(self) -> None:
        """Its request went to aiohttp: count it in `Connections.arriving` until it reaches the app."""
        if not self.arriving:
            self.arriving = True
            self.connections.arriving += 1

    def arrived(self) -> None:
        if self.arriving:
            self.arriving = False
            self.connections.arriving -= 1

    def request_finished(self) -> None:
        self.busy -= 1
        self.served += 1
        self.idle_since = time.monotonic()

    def begin(self) -> None:
        """A request is taken by the fast path (fast_path.py): busy until `end`. Bytes that arrive meanwhile (a
        pipelined next request) wait here and are read after the answer, so answers leave in order; a client
        that leaves meanwhile closes the transport (aiohttp's protocol answers EOF so), which `end` sees."""
        self.taken = True
        self.busy += 1
        self._keep_alive()

    def end(self, response: bytes, close: bool = False, hold_s: Optional[float] = None) -> None:
        """Write the fast path's answer; then close the connection, or `hold` it for ``hold_s`` seconds (after
        a 503), or read the next request."""
        self.taken = False
        self.busy -= 1
        self.served += 1
        self.idle_since = time.monotonic()
        if self.transport is None or self.transport.is_closing():
            return
        if response:
            self.transport.write(response)
        if close:
            self.transport.close()
        elif hold_s:
            self.hold(hold_s)
        else:
            self._resume()
        self._keep_alive()

    def _resume(self) -> None:
        """Read again: what arrived while the fast path answered first, then the socket."""
        if self.transport is None or self.transport.is_closing():
            return
        self.transport.resume_reading()
        if self._backlog:
            data, self._backlog = bytes(self._backlog), bytearray()
            self.data_received(data)

    def _keep_alive(self) -> None:
        """What aiohttp does after each response it writes: push its keep-alive close time back. It never sees
        the fast path's requests, and would otherwise close a busy connection once its keep-alive timeout
        (counted from the last request aiohttp saw) ran out."""
        if hasattr(self.inner, "_next_keepalive_close_time"):
            self.inner._next_keepalive_close_time = (asyncio.get_running_loop().time()
                                                     + self.inner.keepalive_timeout)

    @property
    def peer(self) -> str:
        peer = self.transport.get_extra_info("peername") if self.transport is not None else None
        return peer[0] if peer else "?"

    def hold(self, seconds: float) -> None:
        """Read nothing more from this connection for ``seconds`` (the Retry-After just sent on it)."""
        if self.transport is None or self.transport.is_closing() or self._held is not None:
            return
        self.transport.pause_reading()
        self._held = asyncio.get_running_loop().call_later(seconds, self._release)

    def _release(self) -> None:
        self._held = None
        self._resume()

    @property
    def closing(self) -> bool:
        return self.transport is None or self.transport.is_closing()

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        if self.busy or self.transport is None:
            return
        log.info("closed connection from %s: request head not complete after %gs (HEADER_TIMEOUT_S)",
                 self.peer, self.connections.header_timeout)
        self.close()


class Connections:
    """The open connections, each behind a `Guard`; ``factory`` wraps aiohttp's protocol factory.

    ``first_chunk(guard, data)`` sees the first chunk of each request before aiohttp does, until a chunk of the
    connection went to aiohttp (which may then hold further pipelined requests, to be answered first: the
    connection stays aiohttp's); when it takes the request (fast_path.py: `Guard.begin`, later `Guard.end`) it
    returns True and the chunk goes no further.
    ``arriving``: requests let through to aiohttp whose handler has not run yet. Under a burst (clients coming back
    together after their Retry-After) hundreds of requests are read before the first handler runs; they are
    ahead of the next one in the line for the model, though not in the batcher's queue yet."""

    def __init__(self, header_timeout: float, first_chunk: Optional[Callable[[Guard, bytes], bool]] = None):
        self.header_timeout = header_timeout
        self.first_chunk = first_chunk or (lambda guard, data: False)
        self._guards: dict[Any, Guard] = {}  # aiohttp protocol -> its guard
        self.arriving = 0

    def factory(self, make_protocol: Callable[[], Any]) -> Callable[[], Guard]:
        return lambda: Guard(make_protocol(), self)

    def add(self, guard: Guard) -> None:
        self._guards[guard.inner] = guard

    def discard(self, guard: Guard) -> None:
        self._guards.pop(guard.inner, None)

    def __len__(self) -> int:
        return len(self._guards)

    def guard_of(self, protocol: Any) -> Optional[Guard]:
        return self._guards.get(protocol)

    async def drain(self, timeout: float, keepalive_timeout: float, poll: float = 0.05) -> tuple[int, int, int]:
        """Shutdown, once the listener is closed and every answer says ``Connection: close``: wait, at most
        ``timeout`` seconds, until every connection is gone, each closed after its client's next answer (or by
        its client). A connection idle for ``keepalive_timeout`` seconds (what ``Keep-Alive: timeout=N`` told its
        client) is closed at once; at the end, every quiet connection left is closed, and aiohttp's cleanup
        closes the rest after their handlers. Returns how many idle connections were closed after the keep-alive
        timeout, how many quiet ones at the end, and how many busy ones are left."""
        deadline = time.monotonic() + timeout
        expired = 0
        while self._guards:
            now = time.monotonic()
            for guard in list(self._guards.values()):
                if guard.idle and not guard.closing and now - guard.idle_since >= keepalive_timeout:
                    guard.close()
                    expired += 1
            if now >= deadline:
                break
            await asyncio.sleep(poll)
        quiet = [guard for guard in self._guards.values() if guard.quiet and not guard.closing]
        for guard in quiet:
            guard.close()
        return expired, len(quiet), sum(1 for guard in self._guards.values() if not guard.closing)
