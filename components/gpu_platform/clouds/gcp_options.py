"""Configuration keys of the gcp cloud layer, parsed without the cloud SDK.

Extend `CLUSTER_KEYS` / `POOL_KEYS` and the two parse functions with every key the gcp layer reads.
"""

from collections.abc import Mapping
from typing import Any

CLUSTER_KEYS: set[str] = set()
POOL_KEYS: set[str] = set()


def parse_cluster_options(raw: Mapping, config: Any) -> Any:
    return None


def parse_pool_options(raw: Mapping, path: str, pool: Any, shape: Any) -> Any:
    return None
