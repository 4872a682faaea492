"""A synthetic week of DCGM, kube-state-metrics and Kueue series whose showback is known, and a real Prometheus
holding it (backfilled with ``promtool tsdb create-blocks-from openmetrics``) for the ``gpu-platform usage`` tests.

The week is 2026-01-05T00:00Z .. 2026-01-12T00:00Z; every series is sampled every 5 minutes from two hours before
it to two hours after it, on the instants the command's subqueries evaluate, so the integrals are exact.

Who holds what (nodes gpu-a in pool h100-train, gpu-b in pool l4-infer; namespace research is team research,
inference is team product, kube-system has no team):

==================  =====  ====  ==========================================================  ==========  ======
pod                 node   GPUs  utilisation per GPU                                          admitted h  busy h
==================  =====  ====  ==========================================================  ==========  ======
research/train-0    gpu-a  4     gpus 0-1 90 all week; gpu 2 90 for 84 h then 0; gpu 3 2     672         420
research/train-1    gpu-a  2     50 all week, but Running for 48 h only (then Succeeded)      96          96
research/eval-0     gpu-b  1     10 all week                                                  168         168
inference/serve-0   gpu-b  1     40 in even hours, 0 in odd hours                             168         84
kube-system/sys-0   gpu-b  1     70 (no team: not reported)                                   -           -
(none)              gpu-b  1     80, no pod (not attributed)                                  -           -
==================  =====  ====  ==========================================================  ==========  ======

Kueue (ClusterQueue research; flavors are pools): h100-train 6 GPUs for 48 h then 4 (768 GPU-h), l4-infer 1 all
week (168 GPU-h); a follower replica's duplicate and a CPU series must not count.
"""

import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

from gpu_platform.optimizer.local_prometheus import free_port, terminate

START = int(datetime(2026, 1, 5, tzinfo=timezone.utc).timestamp())
END = START + 7 * 86400
UNTIL = "2026-01-12T00:00:00Z"
STEP = 300
MARGIN = 2 * 3600
HOUR = 3600

# Expected figures (GPU-hours), per (team, pool): admitted, busy, Kueue.
EXPECTED = {
    ("research", "h100-train"): (768.0, 516.0, 768.0),
    ("research", "l4-infer"): (168.0, 168.0, 168.0),
    ("product", "l4-infer"): (168.0, 84.0, 0.0),
}

Value = Callable[[int], float]
"""A series' value at a time, in hours since START (negative before the week)."""


def _constant(v: float) -> Value:
    return lambda _h: v


def _until(hours: float, before: float, after: float) -> Value:
    return lambda h: before if h < hours else after


def _labels(**labels: str) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def _series() -> dict[str, list[tuple[str, Value]]]:
    """Metric family -> [(labels, value at hour h)]."""
    dcgm = []

    def gpu(node: str, index: int, value: Value, namespace: str = "", pod: str = "") -> None:
        workload = {"container": "main", "namespace": namespace, "pod": pod} if pod else {}
        dcgm.append((_labels(gpu=str(index), UUID=f"GPU-{node}-{index}", device=f"nvidia{index}",
                             modelName="NVIDIA H100 80GB HBM3" if node == "gpu-a" else "NVIDIA L4",
                             Hostname=node, **workload), value))

    for i in (0, 1):
        gpu("gpu-a", i, _constant(90), "research", "train-0")
    gpu("gpu-a", 2, _until(84, 90, 0), "research", "train-0")
    gpu("gpu-a", 3, _constant(2), "research", "train-0")
    for i in (4, 5):
        gpu("gpu-a", i, _constant(50), "research", "train-1")
    gpu("gpu-b", 0, _constant(10), "research", "eval-0")
    gpu("gpu-b", 1, lambda h: 40 if int(h // 1) % 2 == 0 else 0, "inference", "serve-0")
    gpu("gpu-b", 2, _constant(70), "kube-system", "sys-0")
    gpu("gpu-b", 3, _constant(80))

    requests, phases = [], []
    for namespace, pod, node, gpus, running in (("research", "train-0", "gpu-a", 4, _constant(1)),
                                                 ("research", "train-1", "gpu-a", 2, _until(48, 1, 0)),
                                                 ("research", "eval-0", "gpu-b", 1, _constant(1)),
                                                 ("inference", "serve-0", "gpu-b", 1, _constant(1)),
                                                 ("kube-system", "sys-0", "gpu-b", 1, _constant(1))):
        for resource, unit, amount in (("nvidia_com_gpu", "integer", gpus), ("cpu", "core", 8)):
            requests.append((_labels(namespace=namespace, pod=pod, uid=f"uid-{pod}", container="main", node=node,
                                     resource=resource, unit=unit), _constant(amount)))
        phases.append((_labels(namespace=namespace, pod=pod, uid=f"uid-{pod}", phase="Running"), running))
        phases.append((_labels(namespace=namespace, pod=pod, uid=f"uid-{pod}", phase="Succeeded"),
                       (lambda r: lambda h: 1 - r(h))(running)))
    kueue = [
        (_labels(cohort="gpu-platform", cluster_queue="research", flavor="h100-train", resource="nvidia.com/gpu",
                 replica_role="leader"), _until(48, 6, 4)),
        (_labels(cohort="gpu-platform", cluster_queue="research", flavor="h100-train", resource="nvidia.com/gpu",
                 replica_role="follower"), _until(48, 6, 4)),
        (_labels(cohort="gpu-platform", cluster_queue="research", flavor="h100-train", resource="cpu",
                 replica_role="leader"), _constant(48)),
        (_labels(cohort="gpu-platform", cluster_queue="research", flavor="l4-infer", resource="nvidia.com/gpu",
                 replica_role="leader"), _constant(1)),
    ]
    return {
        "DCGM_FI_DEV_GPU_UTIL": dcgm,
        "kube_node_labels": [(_labels(node="gpu-a", label_gpu_platform_io_pool="h100-train"), _constant(1)),
                             (_labels(node="gpu-b", label_gpu_platform_io_pool="l4-infer"), _constant(1))],
        "kube_namespace_labels": [(_labels(namespace="research", label_gpu_platform_io_team="research"), _constant(1)),
                                  (_labels(namespace="inference", label_gpu_platform_io_team="product"),
                                   _constant(1)),
                                  (_labels(namespace="kube-system"), _constant(1))],
        "kube_pod_container_resource_requests": requests,
        "kube_pod_status_phase": phases,
        "kueue_cluster_queue_resource_usage": kueue,
    }


def openmetrics() -> Iterator[str]:
    """The week as OpenMetrics text, one family after another, each series in time order."""
    instants = range(START - MARGIN, END + MARGIN + 1, STEP)
    for family, series in _series().items():
        yield f"# TYPE {family} gauge\n"
        for labels, value in series:
            yield "".join(f"{family}{{{labels}}} {value((t - START) / HOUR):g} {t}\n" for t in instants)
    yield "# EOF\n"


class BackfilledPrometheus:
    """A Prometheus on 127.0.0.1 serving a TSDB directory; `add_blocks` backfills more and restarts it."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="gpu-showback-prom-"))
        self.data = self.dir / "data"
        self.data.mkdir()
        self.promtool = shutil.which("promtool")
        self.binary = shutil.which("prometheus")
        assert self.promtool and self.binary, "promtool/prometheus not on PATH: scripts/ensure-promtool.sh"
        self.process: subprocess.Popen | None = None
        self.url = ""

    def backfill_openmetrics(self, lines: Iterator[str]) -> None:
        source = self.dir / "week.om"
        with source.open("w", encoding="utf-8") as f:
            f.writelines(lines)
        self._promtool("tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h", str(source),
                       str(self.data))

    def backfill_rules(self, rule_file: Path, start: int, end: int) -> None:
        """Evaluate ``rule_file`` against this Prometheus over ``[start, end]`` every 5 minutes into new blocks, then
        restart it so that it serves them."""
        out = self.dir / "rule-blocks"
        self._promtool("tsdb", "create-blocks-from", "rules", f"--start={start}", f"--end={end}",
                       f"--eval-interval={STEP}s", f"--url={self.url}", f"--output-dir={out}", str(rule_file))
        self.stop()
        for block in out.iterdir():
            shutil.move(str(block), self.data / block.name)
        self.start()

    def _promtool(self, *args: str) -> None:
        result = subprocess.run([self.promtool, *args], capture_output=True, text=True, timeout=300, cwd=self.dir)
        assert result.returncode == 0, result.stdout + result.stderr

    def start(self, timeout_seconds: float = 60) -> "BackfilledPrometheus":
        config = self.dir / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 1m\nscrape_configs: []\n", encoding="utf-8")
        deadline = time.monotonic() + timeout_seconds
        for _attempt in range(3):  # the port free_port found may be taken before Prometheus binds it
            port = free_port()
            self.url = f"http://127.0.0.1:{port}"
            self.process = subprocess.Popen(
                [self.binary, f"--config.file={config}", f"--storage.tsdb.path={self.data}",
                 "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}", "--log.level=error"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                        if response.status == 200:
                            return self
                except OSError:
                    pass
                time.sleep(0.2)
            if self.process.poll() is None:
                break
        self.stop()
        raise TimeoutError(f"Prometheus on {self.url} did not become ready")

    def stop(self) -> None:
        if self.process is not None:
            terminate(self.process)
            self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
