"""Names AKS imposes, derived deterministically from the platform's DNS-label names (pure, no SDK).

AKS agent pool names may only hold lower-case letters and digits, must start with a letter, and are at most 12
characters for Linux pools (AKS docs, ``create-node-pools.md``). Our pool names are DNS labels (up to 63
characters, with ``-``), so each GPU pool gets a derived agent pool name; a stack may also set one explicitly
(``agentPoolName``). The cluster's DNS prefix and the KMS key vault's name follow the same idea.
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
KEY_VAULT_NAME = re.compile(r"^[a-zA-Z](?!.*--)[a-zA-Z0-9-]{1,22}[a-zA-Z0-9]$")
"""A key vault name: 3-24 letters, digits and hyphens, starting with a letter, ending with a letter or digit, no
two hyphens in a row (Key Vault ``VaultNameNotValid``; Azure resource naming rules for ``Microsoft.KeyVault``)."""
_KEY_VAULT_PREFIX = "kv"
_KEY_VAULT_HASH_CHARS = 8
_KEY_VAULT_MAX = 24


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


def key_vault_name(name: str, subscription_id: str, resource_group: str) -> str:
    """The KMS key vault's name: ``kv`` + the component name's letters and digits + 8 hex characters of a hash.

    Vault names are global across Azure and a deleted vault keeps its name through soft delete (90 days here), so a
    fixed name would collide with another stack's vault or with this stack's own deleted one. The hash covers the
    subscription, the resource group (case-insensitive in Azure) and the name: deterministic for one deployment,
    different between deployments; a new auto-named resource group gives a new name.
    """
    digest = hashlib.sha256(f"{subscription_id}/{resource_group.lower()}/{name}".encode()).hexdigest()
    room = _KEY_VAULT_MAX - len(_KEY_VAULT_PREFIX) - _KEY_VAULT_HASH_CHARS
    compact = re.sub(r"[^a-z0-9]", "", name.lower())[:room]
    return f"{_KEY_VAULT_PREFIX}{compact}{digest[:_KEY_VAULT_HASH_CHARS]}"
