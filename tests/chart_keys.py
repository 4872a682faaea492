"""Checks of Helm values and config documents against key lists extracted from the upstream source.

A key list (``tests/data/...keys``) has one ``<dotted.key> <kind>`` per line, kind one of ``map`` (keys
below are listed too), ``open-map`` (a map whose keys are free), ``list`` or ``scalar``; ``#`` lines name the
source it was extracted from.
"""

from pathlib import Path


def load_keys(path: Path) -> dict[str, str]:
    """The key list at ``path`` as ``{dotted key: kind}``."""
    assert path.exists(), f"no key list {path.name}: extract it from the upstream source"
    keys = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            key, kind = line.split()[:2]
            keys[key] = kind
    return keys


def unknown_keys(values: dict, keys: dict[str, str], prefix: str = "") -> list[str]:
    """Keys of ``values`` (dotted) the upstream does not have, or whose value has the wrong shape."""
    problems = []
    for key, value in values.items():
        path = f"{prefix}.{key}" if prefix else key
        kind = keys.get(path)
        if kind is None:
            problems.append(f"{path}: not in values.yaml")
        elif kind == "map":
            if not isinstance(value, dict):
                problems.append(f"{path}: a map upstream, got {type(value).__name__}")
            else:
                problems += unknown_keys(value, keys, path)
        elif kind == "open-map" and not isinstance(value, dict):
            problems.append(f"{path}: a map upstream, got {type(value).__name__}")
        elif kind == "list" and not isinstance(value, list):
            problems.append(f"{path}: a list upstream, got {type(value).__name__}")
        elif kind == "scalar" and isinstance(value, (dict, list)):
            problems.append(f"{path}: a scalar upstream, got {type(value).__name__}")
    return problems
