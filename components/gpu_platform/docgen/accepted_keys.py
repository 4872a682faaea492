"""The configuration keys a parser accepts, read from its ``check_keys(raw, KEYS, path)`` calls.

Every section of the stack configuration rejects unknown keys with `config.check_keys`; the set it passes is
the list of accepted keys. Reading the calls (instead of re-typing the keys) keeps the reference complete: a
key added to a parser appears in the generated documentation, or the staleness test fails.
"""

import ast
import inspect
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Optional


@dataclass(frozen=True)
class KeyCheck:
    """One ``check_keys`` call: the function it is in and the keys it accepts (None: built at run time)."""

    function: str
    keys: Optional[frozenset[str]]


def _resolve(node: ast.expr, module: ModuleType) -> Optional[set[str]]:
    """A literal set, a module constant, or a union of those; None for anything computed at run time."""
    if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
        values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return set(values) if len(values) == len(node.elts) else None
    if isinstance(node, ast.Name):
        value: Any = getattr(module, node.id, None)
        return set(value) if isinstance(value, (set, frozenset, tuple, list)) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _resolve(node.left, module), _resolve(node.right, module)
        return left | right if left is not None and right is not None else None
    return None


def key_checks(module: ModuleType) -> list[KeyCheck]:
    """Every ``check_keys`` call of ``module``, in source order."""
    tree = ast.parse(inspect.getsource(module))
    checks: list[KeyCheck] = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef):
            continue
        for node in ast.walk(function):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "check_keys"
                    and len(node.args) >= 2):
                keys = _resolve(node.args[1], module)
                checks.append(KeyCheck(function.name, frozenset(keys) if keys is not None else None))
    return checks


def keys_checked_in(module: ModuleType, function: str) -> frozenset[str]:
    """The keys the ``check_keys`` call(s) of one function accept."""
    found = [c.keys for c in key_checks(module) if c.function == function and c.keys is not None]
    if not found:
        raise LookupError(f"{module.__name__}.{function} has no check_keys call with literal keys")
    return frozenset().union(*found)
