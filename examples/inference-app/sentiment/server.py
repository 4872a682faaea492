"""HTTP server and lifecycle: /analyze, /healthz, /readyz, /metrics; load, warm up, serve, drain on SIGTERM.

Lifecycle: the listener opens at once (so /healthz answers while the model loads); the model loads and warms
up on the forward-pass thread; /readyz turns 200. On SIGTERM or SIGINT: /readyz turns 503, the batcher stops
waiting for full batches, the server keeps serving for ``SHUTDOWN_DELAY_S`` (endpoints stop routing here), the
listener closes, in-flight requests finish (up to ``DRAIN_TIMEOUT_S``), then the process exits 0.
"""

import asyncio
import logging
import signal
import sys
import time
from collections.abc import Callable
from typing import Any, Optional

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .batcher import MicroBatcher, Overloaded
from .metrics import Metrics
from .settings import Settings, SettingsError, from_env
from .validation import BadRequest, Limits, parse_body

log = logging.getLogger("sentiment")
STATE: web.AppKey["ServiceState"] = web.AppKey("state")


class ServiceState:
    """What the handlers share: settings, metrics, batcher, and the model once it is loaded."""

    def __init__(self, settings: Settings, load_model: Callable[[Settings], Any]):
        self.settings = settings
        self.load_model = load_model
        self.metrics = Metrics()
        self.limits = Limits(settings.max_body_bytes, settings.max_texts_per_request, settings.max_text_chars)
        self.model: Any = None
        self.ready = False
        self.draining = False
        self.load_error: Optional[BaseException] = None
        self.batcher = MicroBatcher(
            self._predict, settings.max_batch_size, settings.max_wait_ms / 1000.0, settings.max_queue,
            on_batch=self.metrics.observe_batch, on_queue=self.metrics.queue_depth.set,
        )

    def _predict(self, texts: list[str]) -> list:
        return self.model.predict(texts)

    async def load(self) -> None:
        """Load and warm the model on the forward-pass thread; /readyz says yes afterwards."""
        started = time.perf_counter()
        try:
            self.model = await self.batcher.run_sync(self.load_model, self.settings)
            await self.batcher.run_sync(self.model.warm_up, self.settings.max_batch_size)
        except Exception as err:
            self.load_error = err
            log.exception("could not load model from %s", self.settings.model_source)
            return
        self.ready = True
        log.info("model %s ready on %s (%s) in %.1fs", self.settings.model_source,
                 getattr(self.model, "device", "?"), getattr(self.model, "dtype", "?"), time.perf_counter() - started)


def error_response(status: int, reason: str, message: str, headers: Optional[dict] = None) -> web.Response:
    return web.json_response({"error": {"reason": reason, "message": message}}, status=status, headers=headers)


async def analyze(request: web.Request) -> web.Response:
    state = request.app[STATE]
    metrics, settings = state.metrics, state.settings
    started = time.perf_counter()
    status = 500
    try:
        response = await _analyze(request, state)
        status = response.status
        return response
    except BadRequest as err:
        status = err.status
        metrics.errors.labels(reason=err.reason).inc()
        return web.json_response(err.body(), status=err.status)
    except Overloaded as err:
        status = 503
        metrics.errors.labels(reason="overloaded").inc()
        return error_response(503, "overloaded", str(err), {"Retry-After": str(settings.retry_after_s)})
    except Exception:
        status = 500
        metrics.errors.labels(reason="model_error").inc()
        log.exception("inference failed")
        return error_response(500, "model_error", "inference failed")
    finally:
        metrics.requests.labels(status=str(status)).inc()
        metrics.duration.observe(time.perf_counter() - started)


async def _analyze(request: web.Request, state: ServiceState) -> web.Response:
    if not state.ready:
        state.metrics.errors.labels(reason="not_ready").inc()
        return error_response(503, "not_ready", "model is loading" if not state.draining else "shutting down",
                              {"Retry-After": str(state.settings.retry_after_s)})
    limit = state.limits.max_body_bytes
    if request.content_length is not None and request.content_length > limit:
        raise BadRequest(413, "body_too_large", f"body is larger than {limit} bytes")
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise BadRequest(413, "body_too_large", f"body is larger than {limit} bytes") from None
    texts, batched = parse_body(body, state.limits)
    predictions = await state.batcher.submit(texts)
    results = [{"label": p.label, "score": round(p.score, 6)} for p in predictions]
    return web.json_response({"results": results} if batched else results[0])


async def healthz(request: web.Request) -> web.Response:
    state = request.app[STATE]
    model_alive = getattr(state.model, "alive", True)
    if state.load_error is not None or not state.batcher.alive or not model_alive:
        return web.json_response({"status": "failed"}, status=503)
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    state = request.app[STATE]
    if state.ready and not state.draining:
        return web.json_response({"status": "ready"})
    return web.json_response({"status": "draining" if state.draining else "loading"}, status=503)


async def metrics_endpoint(request: web.Request) -> web.Response:
    registry = request.app[STATE].metrics.registry
    return web.Response(body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})


@web.middleware
async def json_errors(request: web.Request, handler: Callable) -> web.StreamResponse:
    """Routing errors (404, 405) as JSON like every other error; counted when they hit /analyze."""
    try:
        return await handler(request)
    except web.HTTPException as err:
        if err.status < 400:
            raise
        reason = {404: "not_found", 405: "method_not_allowed"}.get(err.status, "http_error")
        if request.path == "/analyze":
            metrics = request.app[STATE].metrics
            metrics.requests.labels(status=str(err.status)).inc()
            metrics.errors.labels(reason=reason).inc()
        headers = {"Allow": err.headers["Allow"]} if "Allow" in err.headers else None
        return error_response(err.status, reason, err.reason, headers)


def create_app(settings: Settings, load_model: Optional[Callable[[Settings], Any]] = None) -> web.Application:
    """The aiohttp application; ``load_model(settings)`` returns an object with ``predict`` and ``warm_up``."""
    app = web.Application(client_max_size=settings.max_body_bytes, middlewares=[json_errors])
    app[STATE] = ServiceState(settings, load_model or load_classifier)
    app.router.add_post("/analyze", analyze)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics_endpoint)

    async def close_batcher(app: web.Application) -> None:
        # After the server finished its requests: the batcher, then the model (its worker process).
        await app[STATE].batcher.close()
        model = app[STATE].model
        if hasattr(model, "close"):
            model.close()

    app.on_cleanup.append(close_batcher)
    return app


def load_classifier(settings: Settings) -> Any:
    args = (settings.model_source, settings.device, settings.dtype, settings.max_sequence_length,
            settings.torch_threads)
    if settings.model_worker == "process":
        from .worker import ModelProcess

        return ModelProcess(*args)
    from .classifier import Classifier

    return Classifier(*args)


async def serve(settings: Settings, load_model: Optional[Callable[[Settings], Any]] = None) -> int:
    """Serve until SIGTERM/SIGINT, then drain. Returns the exit code (1 when the model could not load)."""
    app = create_app(settings, load_model)
    state = app[STATE]
    runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=settings.drain_timeout_s)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port, backlog=1024, reuse_address=True)
    await site.start()
    state.batcher.start()
    port = runner.addresses[0][1] if runner.addresses else settings.port
    log.info("listening on %s:%s", settings.host, port)

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    load = loop.create_task(state.load())
    stopped = loop.create_task(stop.wait())
    await asyncio.wait({load, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if not stop.is_set() and state.load_error is None:
        await stopped
    exit_code = 1 if state.load_error is not None else 0
    state.draining = True
    state.batcher.drain()  # queued texts leave now, not after MAX_WAIT_MS
    log.info("draining: %d texts pending", state.batcher.pending)
    if exit_code == 0 and settings.shutdown_delay_s:
        await asyncio.sleep(settings.shutdown_delay_s)
    await runner.cleanup()
    if not load.done():
        load.cancel()
    log.info("stopped")
    return exit_code


def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = from_env()
    except SettingsError as err:
        print(f"configuration error: {err}", file=sys.stderr)
        sys.exit(2)
    sys.exit(asyncio.run(serve(settings)))
