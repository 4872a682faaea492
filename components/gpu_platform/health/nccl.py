"""Read the output of an all-reduce benchmark: nccl-tests/rccl-tests ``all_reduce_perf`` or `allreduce.PROGRAM`.

`parse_all_reduce` takes the whole text a run printed (stdout and stderr together, as ``kubectl logs`` returns
them, with or without ``NCCL_DEBUG=INFO`` lines and with the rank prefixes Slurm ``0: `` and Open MPI
``[1,0]<stdout>:`` add) and returns an `AllReduceResult`:

- ``rows``: one `AllReduceRow` per message size of the table (out-of-place and in-place columns);
- ``bus_bandwidth_gbps``: the bus bandwidth at the **largest message size** (the better of out-of-place and
  in-place), in GB/s as nccl-tests prints it (gigabytes per second, not gigabits). Not nccl-tests'
  ``# Avg bus bandwidth``: that averages over every size of the run, so it depends on ``-b``/``-e`` and is
  dominated by latency-bound small messages, while the published figures the catalog's thresholds come from are
  quoted at the largest sizes (8 to 16 GiB); nccl-tests 2.17 no longer prints the average at all. The average,
  when present, is kept in ``avg_bus_bandwidth_gbps``;
- ``transport``: the network NCCL/RCCL used between nodes, from the ``NCCL INFO Using network <name>`` and
  ``NCCL INFO Channel ... via NET/<name>/<dev>`` lines, reduced by `canonical_transport` to ``IB`` (InfiniBand and
  RoCE, NCCL's internal verbs transport or the IBext/SHARP plugin), ``gIB`` (Google's plugin for the RoCE NICs of
  A3 Ultra, A4 and A4X), ``OFI`` (libfabric through aws-ofi-nccl: AWS
  EFA), ``TCPX`` (GCP GPUDirect-TCPX plugin), ``TCPXO`` (GCP GPUDirect-TCPXO, the FasTrak plugin), ``FastSocket``
  (GKE NCCL Fast Socket) or ``Socket`` (NCCL's plain TCP fallback). Where several appear and one is ``Socket``,
  ``Socket`` wins: one channel over TCP bounds the whole ring. None when the log has no inter-node network line
  (no ``NCCL_DEBUG=INFO``, one node, or gloo);
- ``errors``: rows whose ``#wrong`` is above 0, ``# Out of bounds values : N FAILED``, ``NCCL WARN`` lines and
  nccl-tests' ``Test ... failure`` lines.

RCCL prints the same table and the same ``NCCL INFO``/``NCCL WARN`` prefixes, so one parser reads both.
"""

import re
from dataclasses import dataclass
from typing import Optional

from .. import catalog

_NUM = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_WRONG = rf"(N/A|{_NUM})"
# size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong. The root column came with
# nccl-tests 2.10; older tables lack it and print a maximum error (a float such as 2e-07) where #wrong is now.
_ROW = re.compile(
    rf"(?:^|[\s:>])(\d+)\s+(\d+)\s+([A-Za-z0-9_]+)\s+([A-Za-z]+)\s+(?:(-?\d+)\s+)?"
    rf"({_NUM})\s+({_NUM})\s+({_NUM})\s+{_WRONG}\s+({_NUM})\s+({_NUM})\s+({_NUM})\s+{_WRONG}\s*$"
)
_HEADER = re.compile(r"#\s+size\s+count\s+type\s+redop\s.*\bbusbw\s+(#wrong|error)\b")
_AVG = re.compile(r"# Avg bus bandwidth\s*:\s*(" + _NUM + ")")
_OUT_OF_BOUNDS = re.compile(r"# Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)")
_USING_NETWORK = re.compile(r"[NR]CCL INFO Using network (.+?)\s*$")
_CHANNEL_NET = re.compile(r"\bvia NET/([A-Za-z][A-Za-z0-9_ ]*?)/\d")
_WARN = re.compile(r"\b[NR]CCL WARN\b")
_TEST_FAILURE = re.compile(r"\bTest (?:NCCL |CUDA |HIP )?failure\b")

TRANSPORTS = ("IB", "gIB", "OFI", "TCPX", "TCPXO", "FastSocket", "Socket")
"""The canonical transport names `canonical_transport` returns for the networks NCCL/RCCL and their plugins name."""


@dataclass(frozen=True)
class AllReduceRow:
    """One message size of an ``all_reduce_perf`` table. Bandwidths in GB/s, times in microseconds."""

    size_bytes: int
    """Message size in bytes (nccl-tests' ``size`` column)."""
    time_us: float
    """Out-of-place time per operation."""
    algbw_gbps: float
    """Out-of-place algorithm bandwidth: size / time."""
    busbw_gbps: float
    """Out-of-place bus bandwidth: algbw * 2(n-1)/n for all-reduce over n ranks."""
    wrong: Optional[int]
    """Out-of-place ``#wrong`` count; None for ``N/A`` or an old table's float ``error`` column."""
    in_place_time_us: float
    """In-place time per operation."""
    in_place_algbw_gbps: float
    """In-place algorithm bandwidth."""
    in_place_busbw_gbps: float
    """In-place bus bandwidth."""
    in_place_wrong: Optional[int]
    """In-place ``#wrong`` count; None for ``N/A`` or an old table's float ``error`` column."""

    @property
    def best_busbw_gbps(self) -> float:
        """The better of the out-of-place and in-place bus bandwidths."""
        return max(self.busbw_gbps, self.in_place_busbw_gbps)


@dataclass(frozen=True)
class AllReduceResult:
    """What an all-reduce run printed, parsed (see the module docstring for each field's rule)."""

    rows: tuple[AllReduceRow, ...]
    """The table, in the order printed."""
    bus_bandwidth_gbps: Optional[float]
    """Bus bandwidth (GB/s) at the largest message size, the better of out-of-place and in-place; None: no rows."""
    avg_bus_bandwidth_gbps: Optional[float]
    """nccl-tests' ``# Avg bus bandwidth`` line, when printed."""
    transport: Optional[str]
    """Inter-node network in `TRANSPORTS` terms (or the raw name of an unknown plugin); None: no network line."""
    transports: tuple[str, ...]
    """Every inter-node network named in the log, canonical, sorted."""
    gpu_direct_rdma: bool
    """A ``via NET/.../GDRDMA`` channel line appeared: the NIC reads and writes GPU memory directly."""
    errors: tuple[str, ...]
    """Wrong results, out-of-bounds values, ``NCCL WARN`` and test-failure lines, one line each."""


def canonical_transport(network: str) -> str:
    """Reduce a network name from an NCCL/RCCL log to a `TRANSPORTS` name; an unknown name comes back as given.

    ``IB``, ``IBext``, ``IBext_v8`` (the HPC-X SHARP plugin) → ``IB``; ``gIB`` (Google's RDMA plugin) → ``gIB``;
    ``AWS Libfabric``, ``Libfabric``, ``OFI`` → ``OFI``; ``GPUDirectTCPX``, ``GPUDirectTCPX_v7`` → ``TCPX``;
    ``FasTrak`` → ``TCPXO``; ``FastSocket``; ``Socket``.
    """
    name = network.strip()
    low = name.lower()
    if "libfabric" in low or low.startswith("ofi") or low.startswith("aws ofi"):
        return "OFI"
    if low.startswith("gpudirecttcpx"):
        return "TCPX"
    if low.startswith("fastrak"):
        return "TCPXO"
    if low == "gib":
        return "gIB"
    if low == "fastsocket":
        return "FastSocket"
    if low == "socket":
        return "Socket"
    if re.fullmatch(r"ib(ext)?(_v\d+)?", low):
        return "IB"
    return name


def _wrong(token: str, counts: bool) -> Optional[int]:
    # nccl-tests prints the #wrong count with %g, so a large count reads 1.67772e+07.
    if not counts or token == "N/A":
        return None
    return int(float(token))


def _row(match: re.Match, counts: bool) -> AllReduceRow:
    g = match.groups()
    return AllReduceRow(
        size_bytes=int(g[0]), time_us=float(g[5]), algbw_gbps=float(g[6]), busbw_gbps=float(g[7]),
        wrong=_wrong(g[8], counts), in_place_time_us=float(g[9]), in_place_algbw_gbps=float(g[10]),
        in_place_busbw_gbps=float(g[11]), in_place_wrong=_wrong(g[12], counts),
    )


def _pick_transport(names: set[str]) -> Optional[str]:
    if not names:
        return None
    if "Socket" in names:
        return "Socket"
    return "+".join(sorted(names))


def parse_all_reduce(text: str) -> AllReduceResult:
    """Parse the text an ``all_reduce_perf`` run or `allreduce.PROGRAM` printed (see the module docstring)."""
    rows: list[AllReduceRow] = []
    errors: list[str] = []
    avg: Optional[float] = None
    networks: set[str] = set()
    gdr = False
    counts = True  # the wrong column holds counts unless the header names it "error" (nccl-tests before 2.10)
    for raw in text.splitlines():
        line = raw.rstrip()
        header = _HEADER.search(line)
        if header:
            counts = header.group(1) == "#wrong"
            continue
        if _WARN.search(line) or _TEST_FAILURE.search(line):
            errors.append(line.strip())
            continue
        found = _USING_NETWORK.search(line)
        if found:
            networks.add(canonical_transport(found.group(1)))
            continue
        channel = _CHANNEL_NET.search(line)
        if channel:
            networks.add(canonical_transport(channel.group(1)))
            gdr = gdr or "/GDRDMA" in line
            continue
        found = _AVG.search(line)
        if found:
            avg = float(found.group(1))
            continue
        found = _OUT_OF_BOUNDS.search(line)
        if found:
            if found.group(2) == "FAILED" or int(found.group(1)) > 0:
                errors.append(f"out of bounds values: {found.group(1)} {found.group(2)}")
            continue
        if "INFO" in line:
            continue  # an NCCL INFO line can end in a run of numbers (ring orders): never a table row
        found = _ROW.search(line)
        if found:
            row = _row(found, counts)
            rows.append(row)
            for label, wrong in (("out-of-place", row.wrong), ("in-place", row.in_place_wrong)):
                if wrong:
                    errors.append(f"{wrong} wrong values at {row.size_bytes} bytes ({label})")
    largest = max(rows, key=lambda r: r.size_bytes) if rows else None
    return AllReduceResult(
        rows=tuple(rows),
        bus_bandwidth_gbps=largest.best_busbw_gbps if largest else None,
        avg_bus_bandwidth_gbps=avg,
        transport=_pick_transport(networks),
        transports=tuple(sorted(networks)),
        gpu_direct_rdma=gdr,
        errors=tuple(errors),
    )


FABRIC_TRANSPORTS: dict[str, tuple[str, ...]] = {
    catalog.EFA: ("OFI",),
    catalog.INFINIBAND: ("IB",),
    catalog.ROCE: ("IB",),  # RoCE runs over NCCL's verbs transport, which names itself IB
    catalog.GPUDIRECT_TCPX: ("TCPX",),
    catalog.GPUDIRECT_TCPXO: ("TCPXO",),
    # A3 Ultra / A4 / A4X: RoCE NICs driven by Google's gIB plugin ("Using network gIB", Compute Engine's "Enable
    # GPUDirect RDMA" page); NCCL's own IB transport over the same NICs is the fabric too.
    catalog.GPUDIRECT_RDMA: ("gIB", "IB"),
}
"""The transports an all-reduce between two nodes of a pool on each RDMA fabric (`catalog.RDMA_FABRICS`) must use."""
