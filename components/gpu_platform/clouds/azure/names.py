"""Names AKS imposes, derived deterministically from the platform's DNS-label names (pure, no SDK).

AKS agent pool names may only hold lower-case letters and digits, must start with a letter, and are at most 12
characters for Linux pools (AKS docs, ``create-node-pools.md``). Our pool names are DNS labels (up to 63
characters, with ``-``), so each GPU pool gets a derived agent pool name; a stack may also set one explicitly
(``agentPoolName``). The cluster's DNS prefix follows the same idea.
"""

import hashlib
import re

AGENT_POOL_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
"""A valid Linux agent pool name."""
AGENT_POOL_NAME_MAX = 12
SYSTEM_POOL_NAME = "system"
"""The agent pool the cluster is created with (mode System: CoreDNS, metrics-server, the platform's services)."""
DNS_PREFIX = re.compile(r"^[a-zA-Z0-9]$|^[a-zA-Z0-9][a-zA-Z0-9-]{0,52}[a-zA-Z0-9]$")
"""A managed cluster DNS prefix: 1-54 letters, digits and hyphens, starting and ending with a letter or digit."""
_HASH_CHARS = 4


def agent_pool_name(pool_name: str) -> str:
    """The AKS agent pool name of a GPU pool: ``h100-train`` -> ``h100train``.

    The pool name without its hyphens when that is already a valid agent pool name; otherwise (too long, or
    starting with a digit) its first 8 characters plus 4 hex characters of a hash of the full name, so two long
    names that share a prefix still differ (``a100-inference-1`` -> ``a100infe`` + hash).
    """
    compact = re.sub(r"[^a-z0-9]", "", pool_name.lower())
    if AGENT_POOL_NAME.match(compact):
        return compact
    head = compact if compact[:1].isalpha() else "p" + compact
    digest = hashlib.sha256(pool_name.encode("utf-8")).hexdigest()[:_HASH_CHARS]
    return head[: AGENT_POOL_NAME_MAX - _HASH_CHARS] + digest


def dns_prefix(name: str) -> str:
    """The managed cluster's DNS prefix from the stack / component name (``gpu-dev_1`` -> ``gpu-dev-1``)."""
    cleaned = re.sub(r"[^a-zA-Z0-9-]+", "-", name).strip("-")[:54].rstrip("-")
    return cleaned or "aks"
