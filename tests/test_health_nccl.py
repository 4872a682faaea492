"""`health.nccl.parse_all_reduce` over real nccl-tests/rccl-tests output and NCCL INFO logs (tests/data/health/*.txt,
each with a ``.source`` naming where it was published)."""

from pathlib import Path

import pytest

from gpu_platform import catalog
from gpu_platform.health import nccl
from gpu_platform.health.nccl import canonical_transport, parse_all_reduce

DATA = Path(__file__).parent / "data" / "health"
FIXTURES = sorted(p for p in DATA.glob("*.txt"))


def read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def test_every_fixture_names_its_public_source():
    assert len(FIXTURES) == 16
    for fixture in FIXTURES:
        source = fixture.with_name(fixture.name + ".source").read_text(encoding="utf-8")
        assert source.startswith("https://github.com/"), fixture.name


# (fixture, rows, bus bandwidth at the largest size, avg line, first size, largest size)
TABLES = [
    ("oke-bm-gpu-b4-8-two-node.txt", 4, 189.60, None, 1073741824, 8589934592),
    ("oke-bm-gpu-mi300x-8-two-node-rccl.txt", 5, 358.37, None, 1073741824, 17179869184),
    ("awsome-p5-48xlarge-two-node.txt", 32, 487.26, None, 8, 17179869184),
    ("awsome-p4de-24xlarge-two-node.txt", 29, 78.33, None, 8, 2147483648),
    ("awsome-eks-p5-48xlarge-launcher-excerpt.txt", 7, 437.89, 52.9753, 0, 2147483648),
    ("azure-nd96asr-v4-two-node-sriov.txt", 16, 187.22, 56.3994, 8, 8589934592),
    ("azure-nd96asr-v4-two-node-ipoib.txt", 16, 3.15, 1.38997, 8, 8589934592),
    ("gcp-a3-highgpu-8g-two-node-tcpx.txt", 14, 90.05, 49.6371, 1048576, 8589934592),
    ("nccl-issue-1706-single-node-tail.txt", 1, 25.88, 8.62002, 134217728, 134217728),
]


@pytest.mark.parametrize("name,rows,busbw,avg,first,last", TABLES)
def test_tables_of_real_runs(name, rows, busbw, avg, first, last):
    result = parse_all_reduce(read(name))
    assert len(result.rows) == rows
    assert result.bus_bandwidth_gbps == busbw
    assert result.avg_bus_bandwidth_gbps == avg
    assert (result.rows[0].size_bytes, result.rows[-1].size_bytes) == (first, last)
    assert result.errors == ()


def test_row_columns_of_nccl_tests_2_17():
    # nccl-tests 2.17.9 (OKE BM.GPU.B4.8): two spaces before "#wrong", time with a decimal, no Avg line.
    row = parse_all_reduce(read("oke-bm-gpu-b4-8-two-node.txt")).rows[-1]
    assert (row.time_us, row.algbw_gbps, row.busbw_gbps, row.wrong) == (84948.7, 101.12, 189.60, 0)
    assert (row.in_place_time_us, row.in_place_algbw_gbps, row.in_place_busbw_gbps, row.in_place_wrong) == \
        (84992.3, 101.07, 189.50, 0)
    assert row.best_busbw_gbps == 189.60


def test_rank_prefixes_of_slurm_and_open_mpi_are_read_through():
    slurm = parse_all_reduce(read("awsome-p5-48xlarge-two-node.txt")).rows[0]   # "0: " prefix
    mpi = parse_all_reduce(read("awsome-eks-p5-48xlarge-launcher-excerpt.txt")).rows[0]  # "[1,0]<stdout>:"
    assert (slurm.size_bytes, slurm.time_us, slurm.in_place_time_us) == (8, 69.12, 72.43)
    assert (mpi.size_bytes, mpi.time_us) == (0, 15.51)


def test_validation_off_reads_wrong_as_unknown():
    rows = parse_all_reduce(read("gcp-a3-highgpu-8g-two-node-tcpx.txt")).rows
    assert {r.wrong for r in rows} == {None} and {r.in_place_wrong for r in rows} == {None}


def test_old_table_error_column_is_a_maximum_error_not_a_count():
    result = parse_all_reduce(read("nccl-issue-318-p3dn-old-format-excerpt.txt"))
    assert len(result.rows) == 1
    assert (result.rows[0].size_bytes, result.rows[0].time_us, result.rows[0].wrong) == (8, 59.98, None)
    assert result.errors == ()


def test_wrong_values_are_errors():
    # The real OKE table with one #wrong cell changed from 0 to 3 (and nccl-tests' %g form of a large count).
    text = read("oke-bm-gpu-b4-8-two-node.txt").replace("189.60       0", "189.60       3")
    text = text.replace("188.56       0", "188.56  1.67772e+07")
    result = parse_all_reduce(text)
    assert result.rows[-1].wrong == 3
    assert result.rows[-2].in_place_wrong == 16777200
    assert result.errors == ("16777200 wrong values at 4294967296 bytes (in-place)",
                             "3 wrong values at 8589934592 bytes (out-of-place)")


def test_out_of_bounds_failure_is_an_error():
    text = read("azure-nd96asr-v4-two-node-sriov.txt").replace("values : 0 OK", "values : 108 FAILED")
    assert parse_all_reduce(text).errors == ("out of bounds values: 108 FAILED",)


def test_nccl_warn_lines_are_errors():
    result = parse_all_reduce(read("tcpx-plugin-issue-1-warn-excerpt.txt"))
    assert len(result.errors) == 2
    assert result.errors[0].startswith("[0] tcpxResult_t tcpxCommProgress(tcpxComm*):1231 NCCL WARN 0xadca8062b70")
    assert result.rows == () and result.bus_bandwidth_gbps is None


# (fixture, transport, GPUDirect RDMA seen)
LOGS = [
    ("nccl-issue-398-socket-excerpt.txt", "Socket"),
    ("nccl-issue-1053-socket-excerpt.txt", "Socket"),
    ("nccl-issue-1597-efa-ofi-excerpt.txt", "OFI"),
    ("nccl-issue-229-efa-libfabric-excerpt.txt", "OFI"),
    ("nccl-issue-392-roce-excerpt.txt", "IB"),
    ("oke-bm-gpu-b4-8-two-node.txt", None),  # no NCCL_DEBUG=INFO in that run
]


@pytest.mark.parametrize("name,transport", LOGS)
def test_transport_of_real_logs(name, transport):
    result = parse_all_reduce(read(name))
    assert result.transport == transport
    assert result.transports == ((transport,) if transport else ())


def test_one_socket_channel_makes_the_run_a_socket_run():
    mixed = read("nccl-issue-392-roce-excerpt.txt") + read("nccl-issue-398-socket-excerpt.txt")
    result = parse_all_reduce(mixed)
    assert result.transport == "Socket"
    assert result.transports == ("IB", "Socket")


def test_plugin_networks_in_the_documented_line_forms():
    # The forms Google's docs give for GCP's plugins ("NCCL INFO Using network gIB" on A3 Ultra; GPUDirectTCPX_v7
    # and FasTrak lines as cited in public lab notes) and aws-ofi-nccl's channel line with GPUDirect RDMA (the line
    # awsome-distributed-training's health check greps: "[send] via NET/AWS Libfabric/0/GDRDMA").
    prefix = "a3ultra-vm-0:606:642 [ 6 ] NCCL INFO "
    assert parse_all_reduce(prefix + "Using network gIB").transport == "gIB"
    assert parse_all_reduce(prefix + "Using network GPUDirectTCPX_v7").transport == "TCPX"
    assert parse_all_reduce(prefix + "Using network FasTrak").transport == "TCPXO"
    efa = parse_all_reduce(prefix + "Channel 00/0 : 0[0] -> 8[0] [send] via NET/AWS Libfabric/0/GDRDMA")
    assert (efa.transport, efa.gpu_direct_rdma) == ("OFI", True)
    assert parse_all_reduce(read("nccl-issue-229-efa-libfabric-excerpt.txt")).gpu_direct_rdma is False


@pytest.mark.parametrize("name,canonical", [
    ("IB", "IB"), ("IBext", "IB"), ("IBext_v8", "IB"), ("gIB", "gIB"), ("AWS Libfabric", "OFI"),
    ("Libfabric", "OFI"), ("GPUDirectTCPX", "TCPX"), ("GPUDirectTCPX_v7", "TCPX"), ("FasTrak", "TCPXO"),
    ("FastSocket", "FastSocket"), ("Socket", "Socket"), ("SomePlugin", "SomePlugin"),
])
def test_canonical_transport(name, canonical):
    assert canonical_transport(name) == canonical


def test_every_rdma_fabric_has_its_transports():
    assert set(nccl.FABRIC_TRANSPORTS) == set(catalog.RDMA_FABRICS)
    assert all(set(t) <= set(nccl.TRANSPORTS) for t in nccl.FABRIC_TRANSPORTS.values())
    assert "Socket" not in {t for ts in nccl.FABRIC_TRANSPORTS.values() for t in ts}


def test_published_figures_match_their_fixtures():
    # Each catalog figure is the parser's reading of the run kept in tests/data/health.
    runs = {("aws", "p5.48xlarge"): "awsome-p5-48xlarge-two-node.txt",
            ("aws", "p4de.24xlarge"): "awsome-p4de-24xlarge-two-node.txt",
            ("azure", "Standard_ND96asr_v4"): "azure-nd96asr-v4-two-node-sriov.txt",
            ("gcp", "a3-highgpu-8g"): "gcp-a3-highgpu-8g-two-node-tcpx.txt",
            ("oci", "BM.GPU.MI300X.8"): "oke-bm-gpu-mi300x-8-two-node-rccl.txt"}
    assert set(runs) == set(catalog.ALL_REDUCE_FIGURES)
    for key, fixture in runs.items():
        shape = catalog.SHAPES[key]
        assert shape.all_reduce_bus_bandwidth_gbps == parse_all_reduce(read(fixture)).bus_bandwidth_gbps
        assert shape.bus_bandwidth_source.startswith("https://github.com/")
    assert catalog.SHAPES[("aws", "p5.48xlarge")].min_all_reduce_bus_bandwidth_gbps == 389.8
    assert catalog.SHAPES[("oci", "BM.GPU.MI300X.8")].min_all_reduce_bus_bandwidth_gbps == 286.7
    assert catalog.SHAPES[("aws", "p5en.48xlarge")].min_all_reduce_bus_bandwidth_gbps is None
