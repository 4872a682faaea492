"""NCCL settings a training pod needs on OCI's RoCEv2 cluster network, per bare-metal GPU shape.

Source: oracle-quickstart/oci-hpc-oke ``docs/recommended-nccl-rccl-parameters-by-shape.md`` (commit 61d210a,
2026-08-20). Every RoCE shape shares the fabric settings (GID index 3 = the RoCEv2 IPv4 GID, traffic class 41
and service level 0 of OCI's lossless class, IB timeout 22); ``NCCL_IB_HCA`` names the RDMA NICs of each
shape (``=`` prefix: exact device names) for host-network pods. With SR-IOV virtual functions (NVIDIA Network
Operator) the same page says to use ``NCCL_IB_HCA=mlx5`` instead.
"""

import dataclasses
from collections.abc import Mapping

from ...catalog import ROCE
from ...pools import GpuPool

# Shared by every OCI RoCEv2 GPU shape in the source table.
ROCE_FABRIC_ENV: Mapping[str, str] = {
    "NCCL_IB_GID_INDEX": "3",
    "NCCL_IB_TC": "41",
    "NCCL_IB_SL": "0",
    "NCCL_IB_TIMEOUT": "22",
    "NCCL_IB_SPLIT_DATA_ON_QPS": "0",
    "NCCL_DEBUG": "WARN",
}

# What each shape adds on top (or changes) in the source table.
_SHAPE_ENV: Mapping[str, Mapping[str, str]] = {
    "BM.GPU4.8": {
        "NCCL_IB_QPS_PER_CONNECTION": "4",
        "NCCL_IB_HCA": "=mlx5_0,mlx5_2,mlx5_6,mlx5_8,mlx5_10,mlx5_12,mlx5_14,mlx5_16,"
                       "mlx5_1,mlx5_3,mlx5_7,mlx5_9,mlx5_11,mlx5_13,mlx5_15,mlx5_17",
    },
    "BM.GPU.A100-v2.8": {
        "NCCL_IB_QPS_PER_CONNECTION": "4",
        "NCCL_IB_HCA": "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8,"
                       "mlx5_14,mlx5_15,mlx5_16,mlx5_17,mlx5_9,mlx5_10,mlx5_11,mlx5_12",
    },
    "BM.GPU.H100.8": {
        "NCCL_CUMEM_ENABLE": "0",
        "NCCL_IB_HCA": "=mlx5_0,mlx5_1,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8,"
                       "mlx5_9,mlx5_10,mlx5_12,mlx5_13,mlx5_14,mlx5_15,mlx5_16,mlx5_17",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_IGNORE_CPU_AFFINITY": "1",
    },
    "BM.GPU.H200.8": {
        "NCCL_CUMEM_ENABLE": "0",
        "NCCL_IB_HCA": "=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_IGNORE_CPU_AFFINITY": "1",
    },
    # RCCL reads the same NCCL_* variables (ROCm RCCL docs, "RCCL environment variables"); the source table's
    # BM.GPU.MI300X.8 row, used verbatim by its rccl-tests manifests (manifests/rccl-tests/kueue/BM.GPU.MI300X.8.yaml).
    "BM.GPU.MI300X.8": {
        "NCCL_CUMEM_ENABLE": "0",
        "NCCL_IB_QPS_PER_CONNECTION": "1",
        "NCCL_IB_HCA": "=mlx5_0,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_7,mlx5_8,mlx5_9",
        "NCCL_PXN_DISABLE": "0",
        "NCCL_NET_PLUGIN": "none",
    },
    "BM.GPU.B200.8": {
        "NCCL_CUMEM_ENABLE": "0",
        "NCCL_IB_HCA": "=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_IGNORE_CPU_AFFINITY": "1",
    },
}


def nccl_env(shape_name: str) -> dict[str, str]:
    """NCCL environment for RoCEv2 training on ``shape_name``; shapes without a published HCA list (``BM.GPU.L40S.4``)
    get the shared fabric settings and let NCCL discover the NICs."""
    return {**ROCE_FABRIC_ENV, **_SHAPE_ENV.get(shape_name, {})}


def with_roce_nccl_env(pool: GpuPool) -> GpuPool:
    """The pool as OKE publishes it: a RoCE pool carries its shape's NCCL settings for training pods."""
    if pool.rdma_fabric != ROCE:
        return pool
    return dataclasses.replace(pool, nccl_env=tuple(sorted(nccl_env(pool.instance_type).items())))
