"""A throwaway Prometheus on 127.0.0.1 scraping a synthetic DCGM (and AMD) exporter: for tests and benchmarks.

Needs the ``prometheus`` binary (Debian's ``prometheus`` package). Everything binds to 127.0.0.1 on free
ports, every wait is bounded, and `LocalPrometheus.stop` (or the context manager) ends both servers.
"""

import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .prometheus import PrometheusClient


@dataclass(frozen=True)
class GpuSeries:
    """One GPU of one pod as dcgm-exporter reports it."""

    namespace: str
    pod: str
    gpu: int
    utilization: float
    memory_used_mib: float
    hostname: str = "gpu-node-1"
    model: str = "NVIDIA H100 80GB HBM3"


def _exposition(families: list[tuple[str, str, list[tuple[str, float]]]]) -> str:
    """Prometheus text exposition of gauge families: ``(name, help, [(labels, value), ...])``."""
    lines: list[str] = []
    for name, help_text, samples in families:
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        lines += [f"{name}{{{labels}}} {value}" for labels, value in samples]
    return "\n".join(lines) + "\n"


def dcgm_exposition(series: list[GpuSeries]) -> str:
    """The exporter's text exposition for ``series`` (metric and label names as dcgm-exporter 4.x emits)."""
    labels = [(f'gpu="{s.gpu}",UUID="GPU-{zlib.crc32(f"{s.hostname}/{s.namespace}/{s.pod}/{s.gpu}".encode()):010d}",'
               f'device="nvidia{s.gpu}",modelName="{s.model}",Hostname="{s.hostname}",'
               f'container="main",namespace="{s.namespace}",pod="{s.pod}"', s) for s in series]
    return _exposition([
        ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", [(common, s.utilization) for common, s in labels]),
        ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).",
         [(common, s.memory_used_mib) for common, s in labels]),
    ])


@dataclass(frozen=True)
class AmdGpuSeries:
    """One AMD GPU of one pod as the AMD device metrics exporter reports it."""

    namespace: str
    pod: str
    gpu: int
    utilization: float
    memory_used_mb: float
    hostname: str = "amd-node-1"
    card_model: str = "AMD Instinct MI300X"


def amd_exposition(series: list["AmdGpuSeries"]) -> str:
    """The AMD device metrics exporter's exposition for ``series``: metric names and help texts as
    ROCm/device-metrics-exporter@v1.5.1 ``pkg/amdgpu/gpuagent/gpuagent_gpu_metrics.go`` declares them, and its
    labels (from ``gpuMandatoryLables``, each the lower-cased ``GPUMetricLabel`` / ``MetricLabel`` enum name)."""
    # The Kubernetes labels (pod, namespace, container) and the GPU's identity; the partition-mode labels and the
    # empty Slurm ones (job_*) are left out: Prometheus drops empty labels and the optimizer reads none of them.
    labels = [(f'card_model="{s.card_model}",container="main",gpu_id="{s.gpu}",gpu_partition_id="0",'
               f'hostname="{s.hostname}",namespace="{s.namespace}",pod="{s.pod}",'
               f'serial_number="{zlib.crc32(f"{s.hostname}/{s.gpu}".encode()):010d}"', s) for s in series]
    return _exposition([
        ("gpu_gfx_activity", "Graphics engine usage in Percentage (0-100)",
         [(common, s.utilization) for common, s in labels]),
        ("gpu_used_vram", "Used VRAM memory of the GPU (in MB)", [(common, s.memory_used_mb) for common, s in labels]),
    ])


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (a server that must be told its port may still lose it to
    another process: callers retry)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def terminate(process: subprocess.Popen) -> None:
    """Stop ``process``: SIGTERM, then SIGKILL if it has not exited within 15 s."""
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


class _Exporter(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, body: bytes):
        self.body = body

        class Handler(BaseHTTPRequestHandler):
            def do_GET(handler):  # noqa: N805 - the server is reached through the closure
                handler.send_response(200)
                handler.send_header("Content-Type", "text/plain; version=0.0.4")
                handler.send_header("Content-Length", str(len(self.body)))
                handler.end_headers()
                handler.wfile.write(self.body)

            def log_message(handler, *args):  # noqa: N805
                pass

        super().__init__(("127.0.0.1", 0), Handler)  # port 0: the kernel picks a free one, nobody can take it first


class _Exited(RuntimeError):
    """Prometheus exited while starting (its listen address taken, most likely)."""


class LocalPrometheus:
    """Start with `start`, query with `client`, end with `stop` (or use as a context manager)."""

    def __init__(self, series: list[GpuSeries], scrape_interval: str = "1s",
                 amd_series: tuple[AmdGpuSeries, ...] = ()):
        self.series = series
        self.amd_series = list(amd_series)
        self.scrape_interval = scrape_interval
        body = dcgm_exposition(series) + (amd_exposition(self.amd_series) if self.amd_series else "")
        self.exporter = _Exporter(body.encode())
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._dir = Path(tempfile.mkdtemp(prefix="gpu-optimizer-prom-"))
        self._process: subprocess.Popen | None = None

    def start(self, timeout_seconds: float = 60.0) -> "LocalPrometheus":
        binary = shutil.which("prometheus")
        if binary is None:
            raise RuntimeError("the prometheus binary is not installed (Debian package 'prometheus')")
        threading.Thread(target=self.exporter.serve_forever, daemon=True).start()
        config = self._dir / "prometheus.yml"
        config.write_text(
            f"global:\n  scrape_interval: {self.scrape_interval}\n  evaluation_interval: {self.scrape_interval}\n"
            "scrape_configs:\n  - job_name: dcgm\n    honor_labels: true\n"
            f"    static_configs:\n      - targets: ['127.0.0.1:{self.exporter.server_address[1]}']\n")
        deadline = time.monotonic() + timeout_seconds
        # Prometheus binds the port free_port() found a moment earlier; another process (a parallel test run) may
        # take it in between, and Prometheus then exits at once: try again on a fresh port, at most three times.
        attempt = 0
        while True:
            self._process = subprocess.Popen(
                [binary, f"--config.file={config}", f"--storage.tsdb.path={self._dir / f'data-{attempt}'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=error"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                self.wait_for_samples(3, max(0.0, deadline - time.monotonic()))
                return self
            except _Exited:
                attempt += 1
                if attempt == 3:
                    raise
                self.port = free_port()
                self.url = f"http://127.0.0.1:{self.port}"

    def wait_for_samples(self, samples_per_series: int, timeout_seconds: float) -> None:
        """Block (bounded) until every series has ``samples_per_series`` scraped samples."""
        client = PrometheusClient(self.url, timeout_seconds=5)
        deadline = time.monotonic() + timeout_seconds
        expr = (f"count(count_over_time(DCGM_FI_DEV_GPU_UTIL[5m]) >= {samples_per_series})"
                f" + count(count_over_time(gpu_gfx_activity[5m]) >= {samples_per_series})" if self.amd_series else
                f"count(count_over_time(DCGM_FI_DEV_GPU_UTIL[5m]) >= {samples_per_series})")
        expected = len(self.series) + len(self.amd_series)
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise _Exited(f"prometheus exited with status {self._process.returncode}")
            try:
                result = client.query(expr)
                # Answered by this Prometheus: it is still running (a process that lost the port has exited).
                if result and int(result[0].value) >= expected and (self._process is None or
                                                                     self._process.poll() is None):
                    return
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.25)
        raise TimeoutError(f"Prometheus did not scrape {expected} series within {timeout_seconds} s")

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        if self._process is not None:
            terminate(self._process)
            self._process = None
        self.exporter.shutdown()
        self.exporter.server_close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> "LocalPrometheus":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
