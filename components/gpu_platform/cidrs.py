"""IPv4 CIDR blocks: the one rule every stack key and component argument holding a CIDR is checked by.

A key or argument states what it accepts as a `CidrRule` (an example value, and where its size matters the prefix
bounds and why); the stack readers (``clouds/*/options.py``, `control_plane`) call `CidrRule.checked` or
`CidrRule.network`, the component contracts `component_args.cidr` (`CidrRule.problem`), so a value is refused with
the same words whichever way it came in.

Pure and below the parser: it imports nothing of the platform but `errors`.
"""

import ipaddress
from dataclasses import dataclass
from typing import Any, Optional

from .errors import ConfigError


@dataclass(frozen=True)
class CidrRule:
    """What one CIDR key or argument accepts: an IPv4 block (``10.0.0.0/16``) whose host bits are zero, and
    optionally a prefix length within bounds. ``0.0.0.0/0`` is a block like any other: it passes where the bounds
    allow it and has no shorthand (``*``, ``any``, ``0/0`` are refused), so opening something to every address is
    always written out."""

    example: str
    """A value the rule accepts, shown in the error (``10.0.0.0/16``)."""
    min_prefix: int = 0
    """The largest block allowed, as a prefix length (16: a ``/16`` or smaller); 0: any."""
    max_prefix: int = 32
    """The smallest block allowed, as a prefix length (20: a ``/20`` or larger); 32: any."""
    sizes: str = ""
    """Why the bounds, the end of the error of a block outside them (``GPU NIC subnets need a /19 or larger``)."""

    def __post_init__(self) -> None:
        if not 0 <= self.min_prefix <= self.max_prefix <= 32:
            raise ValueError(f"prefix bounds /{self.min_prefix}../{self.max_prefix} are not within /0../32")
        if (self.min_prefix, self.max_prefix) != (0, 32) and not self.sizes:
            raise ValueError("a CidrRule with prefix bounds says why in sizes")
        if self.problem(self.example) is not None:
            raise ValueError(f"the example {self.example!r} breaks its own rule: {self.problem(self.example)}")

    def problem(self, value: Any) -> Optional[str]:
        """What is wrong with ``value``, or None."""
        if not isinstance(value, str):
            return f"{value!r} is not an IPv4 CIDR block such as {self.example}"
        try:
            network = ipaddress.IPv4Network(value, strict=True)
        except ValueError as err:
            return f"'{value}' is not an IPv4 CIDR block such as {self.example} ({err})"
        if network.prefixlen > self.max_prefix:
            return f"'{value}' is too small: {self.sizes}"
        if network.prefixlen < self.min_prefix:
            return f"'{value}' is too large: {self.sizes}"
        return None

    def network(self, value: Any, path: str) -> ipaddress.IPv4Network:
        """``value`` as a network; a `ConfigError` at ``path`` when the rule refuses it."""
        problem = self.problem(value)
        if problem is not None:
            raise ConfigError(path, problem)
        return ipaddress.IPv4Network(value)

    def checked(self, value: Any, path: str) -> str:
        """``value`` in its canonical spelling (``10.0.0.0/255.255.0.0`` -> ``10.0.0.0/16``); a `ConfigError` at
        ``path`` when the rule refuses it."""
        return str(self.network(value, path))
