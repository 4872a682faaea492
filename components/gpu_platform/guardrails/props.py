"""Reading resource properties the same way from ``plan.json`` and from the Pulumi policy engine.

Under pulumi-policy, ``props`` are read-only proxies (`collections.abc.Mapping` and `Sequence`, not ``dict`` and
``list``) that raise on a value unknown during preview; in ``plan.json`` they are plain JSON. These helpers accept
both, and treat a missing or mistyped step as absent.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Resource:
    """One resource of a stack as a stack rule sees it."""

    type: str
    """The type token (``aws:eks/nodeGroup:NodeGroup``)."""
    name: str
    """The logical name (``plan.json``'s ``name``)."""
    props: Mapping[str, Any]
    """Its properties: the inputs in ``plan.json`` with the id and outputs the mock engine gave it; the outputs
    under the Pulumi policy engine (a provider's outputs include its inputs)."""
    urn: str = ""


def get(props: Any, *path: str) -> Any:
    """``props[a][b]...``, or None where a step is missing or not a mapping."""
    for key in path:
        if not isinstance(props, Mapping):
            return None
        props = props.get(key)
    return props


def items(value: Any) -> list:
    """A sequence property as a list (a string or a missing value is no sequence)."""
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else []


def string_map(value: Any) -> dict[str, str]:
    """A mapping property as ``{str: str}`` (empty when missing)."""
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}
