"""Who may reach a managed cluster's Kubernetes API, and whether its Secrets are envelope-encrypted.

The same two stack keys on every managed cloud (AWS, Azure, GCP, OCI), parsed here once; each cloud layer
turns the result into its own API fields (see ``docs/security.md``):

=================== ==========================================================================================
``apiAllowedCidrs`` IPv4 CIDRs allowed to reach the API endpoint from outside the cluster's network. Empty (the
                    default): the endpoint is private, reachable only from inside the network (nodes, a VPN, a
                    CI runner in the network). ``0.0.0.0/0`` opens it to the internet and must be written out.
``secretsEncryption`` Envelope-encrypt Kubernetes Secrets with a customer-managed key the platform creates
                    (EKS KMS, GKE application-layer encryption, AKS Key Vault KMS, OKE Vault). Default true.
=================== ==========================================================================================

``existing`` clusters take neither: the platform does not own their control plane.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from .cidrs import CidrRule
from .component_args import Rule, cidr
from .fields import ConfigError, join, read_bool, read_list

KEYS = {"apiAllowedCidrs", "secretsEncryption"}
"""Stack keys every managed cloud's cluster options accept."""

RENAMED_KEYS = {
    "publicAccessCidrs": "apiAllowedCidrs",
    "endpointPublicAccess": "apiAllowedCidrs",
    "publicEndpoint": "apiAllowedCidrs",
}
"""Keys of the first round that ``apiAllowedCidrs`` replaced: refused with a pointer to the new key."""

MAX_ALLOWED_CIDRS = 40
"""The smallest limit of the four clouds (EKS ``publicAccessCidrs``: 40 entries; AKS 200, GKE 50 blocks)."""


@dataclass(frozen=True)
class ControlPlaneSecurity:
    """The API endpoint's reach and the Secrets encryption of a managed cluster."""

    api_allowed_cidrs: tuple[str, ...] = ()
    """IPv4 CIDRs allowed to reach the API endpoint from outside the cluster's network. Empty (the default): the
    endpoint is private, reachable only from inside the network (nodes, a VPN, a CI runner there); ``0.0.0.0/0``
    opens it to the internet and must be written out."""
    secrets_encryption: bool = True
    """Envelope-encrypt Kubernetes Secrets with a key the platform creates (EKS: KMS; AKS: Key Vault KMS; GKE:
    Cloud KMS application-layer encryption; OKE: Vault). Default true; on OKE switching it replaces the cluster."""

    @property
    def public_endpoint(self) -> bool:
        """Whether the API gets a public endpoint (only when someone is allowed to reach it)."""
        return bool(self.api_allowed_cidrs)


API_CIDR = CidrRule(example="203.0.113.0/24")
"""One ``apiAllowedCidrs`` entry: any IPv4 block, ``0.0.0.0/0`` included (written out: the internet)."""
CIDR = cidr(API_CIDR)
"""`component_args` rule for one IPv4 CIDR block of ``api_allowed_cidrs``."""


def allowed_cidrs_problem(values: Any) -> Optional[str]:
    """What is wrong with a whole ``apiAllowedCidrs`` list, or None (each entry is checked by `API_CIDR`)."""
    if len(values) > MAX_ALLOWED_CIDRS:
        return f"lists {len(values)} CIDRs; at most {MAX_ALLOWED_CIDRS} (the smallest limit of the clouds)"
    if len(set(values)) != len(values):
        return "lists a CIDR twice"
    return None


ALLOWED_CIDRS = Rule(check=allowed_cidrs_problem)
"""`component_args` rule for the whole ``api_allowed_cidrs`` list of a cluster component."""


def refuse_renamed(raw: Mapping, path: str = "") -> None:
    """Refuse the first-round endpoint keys, naming the key that replaced them."""
    for old, new in RENAMED_KEYS.items():
        if old in raw:
            raise ConfigError(join(path, old), f"was replaced by {new} (empty: private endpoint only; a list of "
                                               "CIDRs: a public endpoint open to those CIDRs only)")


def parse_control_plane(raw: Mapping, path: str = "") -> ControlPlaneSecurity:
    """``apiAllowedCidrs`` and ``secretsEncryption`` of a managed cloud's stack configuration."""
    refuse_renamed(raw, path)
    key = join(path, "apiAllowedCidrs")
    cidrs = read_list(raw, "apiAllowedCidrs", path)
    for i, value in enumerate(cidrs):
        API_CIDR.network(value, join(key, i))
    problem = allowed_cidrs_problem(cidrs)
    if problem:
        raise ConfigError(key, problem)
    return ControlPlaneSecurity(
        api_allowed_cidrs=tuple(cidrs),
        secrets_encryption=read_bool(raw, "secretsEncryption", path, True),
    )
