"""A small, strict Prometheus HTTP API client: instant queries only, every failure a `PrometheusError`."""

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass


class PrometheusError(RuntimeError):
    """Prometheus was unreachable, too slow, or answered something that is not a query result."""


@dataclass(frozen=True)
class Sample:
    """One series of an instant-vector result."""

    labels: dict[str, str]
    value: float


class PrometheusClient:
    """Runs instant queries against ``<url>/api/v1/query`` and counts them."""

    def __init__(self, url: str, timeout_seconds: float = 10.0):
        self.url = url.rstrip("/")
        self.timeout_seconds = timeout_seconds
        self.queries_sent = 0

    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        """The instant vector ``expr`` evaluates to (at time ``at``, default now)."""
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        request = urllib.request.Request(
            f"{self.url}/api/v1/query", data=urllib.parse.urlencode(params).encode(), method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        self.queries_sent += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_seconds) as response:
                body = response.read()
        except urllib.error.HTTPError as err:
            raise PrometheusError(f"Prometheus at {self.url} answered HTTP {err.code} to {expr!r}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise PrometheusError(f"Prometheus at {self.url} is unreachable or too slow: {reason}") from None
        return parse_vector(body, expr)


def parse_vector(body: bytes, expr: str = "") -> list[Sample]:
    """Samples of a ``/api/v1/query`` response; anything else raises `PrometheusError`."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise PrometheusError(f"Prometheus returned something that is not JSON for {expr!r}") from None
    if not isinstance(document, dict) or document.get("status") != "success":
        error = document.get("error") if isinstance(document, dict) else None
        raise PrometheusError(f"Prometheus query {expr!r} failed: {error or 'unexpected response'}")
    data = document.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        raise PrometheusError(f"Prometheus returned no instant vector for {expr!r}")
    samples = []
    for item in data["result"]:
        try:
            metric, (_, raw_value) = item["metric"], item["value"]
            value = float(raw_value)
        except (KeyError, TypeError, ValueError):
            raise PrometheusError(f"Prometheus returned a malformed sample for {expr!r}") from None
        if not isinstance(metric, dict) or math.isnan(value):
            continue
        samples.append(Sample({str(k): str(v) for k, v in metric.items()}, value))
    return samples
