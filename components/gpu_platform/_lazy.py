"""Lazy attribute exports for packages whose members import heavy SDKs (each cloud's Pulumi provider).

``from gpu_platform import EksCluster`` must not import Google's, Azure's or Oracle's SDK, and importing a cloud's
pure options module must not import that cloud's SDK either: a package lists what it exports and from which
submodule, and the submodule is imported on first access (PEP 562).
"""

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps each public name to the submodule (relative,
    such as ``.cluster``) that defines it."""

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        globals_of_package = importlib.import_module(package).__dict__
        globals_of_package[name] = value  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*importlib.import_module(package).__dict__, *exports})

    return __getattr__, __dir__
