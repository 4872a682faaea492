"""A small NetworkPolicy evaluator for tests: would a connection be admitted by a set of planned policies?

It follows the networking.k8s.io/v1 semantics the platform's policies use: a pod is isolated for a direction when
a policy of its namespace selects it with that policy type; it then accepts only what some rule of those policies
admits (rules add up). Peers: ``podSelector`` alone means the policy's namespace; ``namespaceSelector`` (with an
optional ``podSelector``) other namespaces, by their labels (``kubernetes.io/metadata.name`` is set to the name);
``ipBlock`` only addresses, which an ``Endpoint`` outside the cluster carries. Only ``matchLabels`` selectors and
numeric ports are supported: a policy with anything else fails the test rather than being misread.
"""

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class Endpoint:
    """A pod (``namespace`` and ``labels``) or an address outside the pod network (``ip``, namespace None)."""

    namespace: Optional[str] = None
    labels: dict = field(default_factory=dict)
    ip: Optional[str] = None


def _matches(selector: dict, labels: dict) -> bool:
    assert set(selector) <= {"matchLabels"}, f"unsupported selector {selector}"
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def _peer_matches(peer: dict, policy_namespace: str, other: Endpoint) -> bool:
    if "ipBlock" in peer:
        if other.ip is None:
            return False  # the platform's ipBlocks name addresses outside the pod ranges
        address = ipaddress.ip_address(other.ip)
        block = peer["ipBlock"]
        return address in ipaddress.ip_network(block["cidr"]) and not any(
            address in ipaddress.ip_network(e) for e in block.get("except", []))
    if other.namespace is None:
        return False
    if "namespaceSelector" in peer:
        namespace_labels = {"kubernetes.io/metadata.name": other.namespace}
        if not _matches(peer["namespaceSelector"], namespace_labels):
            return False
    elif other.namespace != policy_namespace:
        return False
    return _matches(peer.get("podSelector", {}), other.labels)


def _port_matches(ports: Optional[list], port: int, protocol: str) -> bool:
    if not ports:
        return True
    for p in ports:
        assert isinstance(p.get("port", 0), int), f"named port {p} unsupported"
        if p.get("protocol", "TCP") == protocol and p.get("port") in (None, port):
            return True
    return False


def admitted(policies: Iterable[dict], source: Endpoint, destination: Endpoint, port: int,
             protocol: str = "TCP") -> bool:
    """Whether ``source`` may open a connection to ``destination`` on ``port``: the destination's ingress
    policies and the source's egress policies must both admit it (each only when it is isolated that way)."""
    policies = list(policies)
    return (_direction_admits(policies, "Ingress", destination, source, port, protocol)
            and _direction_admits(policies, "Egress", source, destination, port, protocol))


def _direction_admits(policies: list[dict], direction: str, subject: Endpoint, other: Endpoint, port: int,
                      protocol: str) -> bool:
    if subject.namespace is None:
        return True  # not a pod: no policy isolates it
    selecting = [p for p in policies if p["metadata"]["namespace"] == subject.namespace
                 and direction in p["spec"].get("policyTypes", ["Ingress"])
                 and _matches(p["spec"]["podSelector"], subject.labels)]
    if not selecting:
        return True
    key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
    for policy in selecting:
        for rule in policy["spec"].get(key, []):
            peers = rule.get(peers_key)
            if (not peers or any(_peer_matches(peer, subject.namespace, other) for peer in peers)) and \
                    _port_matches(rule.get("ports"), port, protocol):
                return True
    return False
