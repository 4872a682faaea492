"""Prometheus metrics of the service. The names are a contract: dashboards, alerts and the autoscaler use them.

- ``inference_requests_total{status}``: /analyze requests by HTTP status code.
- ``inference_request_duration_seconds``: /analyze latency, receipt to answer (histogram).
- ``inference_batch_size``: texts per forward pass (histogram).
- ``inference_queue_depth``: texts waiting for a forward pass (gauge; the autoscaling signal).
- ``inference_expected_wait_seconds``: how long a text arriving now would take, behind the backlog, at the
  measured speed of the model (gauge; requests whose deadline is shorter are refused).
- ``inference_errors_total{reason}``: failed /analyze requests by reason (client errors, overload, model, and
  ``client_aborted`` / ``body_timeout``: the client left or sent its body too slowly, never ``model_error``).
"""

from typing import Optional

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    gc_collector,
    platform_collector,
    process_collector,
)

from .validation import CLIENT_ERROR_REASONS

# overloaded: refused at admission (expected wait beyond the deadline, or MAX_QUEUE); deadline_exceeded: admitted,
# then dropped before its forward pass because it could no longer finish in time.
SERVER_ERROR_REASONS = ("overloaded", "deadline_exceeded", "not_ready", "model_error")
# Neither the client's fault in the 4xx sense nor the model's: the client left, or sent its body too slowly.
CONNECTION_ERROR_REASONS = ("client_aborted", "body_timeout")
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
# 499 (nginx's "client closed request"): the client closed the connection before its answer; nothing was sent.
STATUSES = ("200", "400", "404", "405", "408", "413", "422", "499", "500", "503")

# `*_created` series double the exposition for no use here.
disable_created_metrics()


class Metrics:
    """One registry per app (tests run several apps in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        process_collector.ProcessCollector(registry=self.registry)
        platform_collector.PlatformCollector(registry=self.registry)
        gc_collector.GCCollector(registry=self.registry)
        self.requests = Counter("inference_requests", "Requests to /analyze by HTTP status.", ["status"],
                                registry=self.registry)
        self.duration = Histogram("inference_request_duration_seconds", "Latency of /analyze requests.",
                                  buckets=LATENCY_BUCKETS, registry=self.registry)
        self.batch_size = Histogram("inference_batch_size", "Texts per forward pass.", buckets=BATCH_BUCKETS,
                                    registry=self.registry)
        self.queue_depth = Gauge("inference_queue_depth", "Texts waiting for a forward pass.",
                                 registry=self.registry)
        self.expected_wait = Gauge("inference_expected_wait_seconds",
                                   "Expected time to answer a text arriving now, behind the backlog.",
                                   registry=self.registry)
        self.errors = Counter("inference_errors", "Failed /analyze requests by reason.", ["reason"],
                              registry=self.registry)
        # Series exist at 0 from the start, so rate() and absent()-style alerts work before the first error.
        # The labelled children are kept: `labels()` validates its arguments and looks the child up under a lock
        # on every call, and every request counts one or two of them, each refusal under overload included.
        self._by_status = {int(status): self.requests.labels(status=status) for status in STATUSES}
        self._by_reason = {reason: self.errors.labels(reason=reason)
                           for reason in (*CLIENT_ERROR_REASONS, *SERVER_ERROR_REASONS, *CONNECTION_ERROR_REASONS)}

    def count_request(self, status: int, reason: Optional[str] = None, seconds: Optional[float] = None) -> None:
        """One /analyze request answered with ``status`` (499: the client left first), its error ``reason`` if it
        failed, and its latency if it reached the handler (aiohttp's or the fast path's)."""
        requests = self._by_status.get(status)
        if requests is None:
            requests = self._by_status[status] = self.requests.labels(status=str(status))
        requests.inc()
        if reason is not None:
            errors = self._by_reason.get(reason)
            if errors is None:
                errors = self._by_reason[reason] = self.errors.labels(reason=reason)
            errors.inc()
        if seconds is not None:
            self.duration.observe(seconds)

    def observe_batch(self, size: int, seconds: float) -> None:
        self.batch_size.observe(size)
