"""Where the nodes of an RDMA pool (EFA, InfiniBand, RoCE, GPUDirect) land: one zone, and packed together.

RDMA traffic between nodes of different zones, or of one zone but far apart in its network, loses what the fabric
is for; each cloud has its own way to keep a pool's nodes close:

- EKS node group (EFA interfaces in its launch template): its ``subnetIds`` in one availability zone, and a
  ``cluster`` placement group in the launch template (``placement.groupName``), or reserved capacity, which AWS
  places for the reservation (``capacityReservationSpecification``, ``instanceMarketOptions.marketType:
  capacity-block``);
- Karpenter EC2NodeClass (EFA ``networkInterfaces``): ``subnetSelectorTerms`` of one zone (one subnet id), and a
  ``placementGroupSelector`` or ``capacityReservationSelectorTerms``;
- GKE node pool (extra networks in ``networkConfig.additionalNodeNetworkConfigs``): one ``nodeLocations`` zone,
  and ``placementPolicy.type: COMPACT`` or a specific reservation;
- AKS agent pool (an InfiniBand ``vmSize``): at most one ``availabilityZones`` entry; InfiniBand joins the VMs of
  one scale set, which an AKS pool is, so a ``proximityPlacementGroupID`` is accepted but not required;
- OKE node pool (a ``nodeConfigDetails.computeClusterId``, or the platform's RDMA label): its
  ``placementConfigs`` in one availability domain, and the compute cluster (OCI's RDMA placement).

Each function returns the problems of one pool resource, given the stack's resources by id where it must follow
a reference (an EKS node group's launch template and subnets).
"""

from collections.abc import Mapping
from typing import Any, Optional

from .. import catalog, labels
from .pool_view import AKS_AGENT_POOL, EKS_NODE_GROUP, GKE_NODE_POOL, OKE_NODE_POOL
from .props import Resource, get, items, string_map

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
SUBNET = "aws:ec2/subnet:Subnet"
EC2_NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
EFA_INTERFACE_TYPES = ("efa", "efa-only")
PLACEMENT_TYPES = (EKS_NODE_GROUP, EC2_NODE_CLASS, GKE_NODE_POOL, AKS_AGENT_POOL, OKE_NODE_POOL)


def _has_efa(interfaces: Any) -> bool:
    return any(get(i, "interfaceType") in EFA_INTERFACE_TYPES for i in items(interfaces))


def _by_id(resources: Mapping[str, Resource], reference: Any) -> Optional[Resource]:
    """The stack's resource a reference names (by its id, else by its physical name)."""
    if not isinstance(reference, str) or not reference:
        return None
    found = resources.get(reference)
    if found is None:
        found = next((r for r in resources.values() if get(r.props, "name") == reference), None)
    return found


def _eks(pool: Resource, by_id: Mapping[str, Resource]) -> list[str]:
    template = _by_id(by_id, get(pool.props, "launchTemplate", "id")) or _by_id(
        by_id, get(pool.props, "launchTemplate", "name"))
    efa_label = string_map(get(pool.props, "labels")).get(labels.RDMA_LABEL) == catalog.EFA
    if not efa_label and (template is None or not _has_efa(get(template.props, "networkInterfaces"))):
        return []
    problems = []
    subnets = [str(s) for s in items(get(pool.props, "subnetIds"))]
    zones = {get(_by_id(by_id, s).props, "availabilityZone") if _by_id(by_id, s) else s for s in subnets}
    if len(zones) != 1:
        problems.append(f"subnetIds span {len(zones)} availability zones ({', '.join(sorted(map(str, zones)))}); "
                        "an EFA node group belongs in one")
    if template is None:
        problems.append("its launch template is not in the stack, so no cluster placement group can be shown")
    elif not (get(template.props, "placement", "groupName")
              or get(template.props, "capacityReservationSpecification", "capacityReservationTarget")
              or get(template.props, "instanceMarketOptions", "marketType") == "capacity-block"
              or get(pool.props, "capacityType") == "CAPACITY_BLOCK"):
        problems.append(f"launch template {template.name} sets no placement.groupName (a cluster placement group) "
                        "and targets no capacity reservation or Capacity Block")
    return problems


def _karpenter(node_class: Resource) -> list[str]:
    spec = get(node_class.props, "spec")
    if not _has_efa(get(spec, "networkInterfaces")):
        return []
    problems = []
    terms = items(get(spec, "subnetSelectorTerms"))
    if len(terms) != 1 or not get(terms[0], "id"):
        problems.append(f"subnetSelectorTerms select {len(terms)} terms; an EFA node class names one subnet (id) "
                        "so its nodes share a zone")
    if not get(spec, "placementGroupSelector") and not items(get(spec, "capacityReservationSelectorTerms")):
        problems.append("no placementGroupSelector (a cluster placement group) and no "
                        "capacityReservationSelectorTerms")
    return problems


def _gke(pool: Resource) -> list[str]:
    extra_networks = items(get(pool.props, "networkConfig", "additionalNodeNetworkConfigs"))
    if not extra_networks and labels.RDMA_LABEL not in string_map(get(pool.props, "nodeConfig", "labels")):
        return []
    problems = []
    zones = items(get(pool.props, "nodeLocations"))
    if not zones:
        problems.append("no nodeLocations: the pool takes the cluster's zones; an RDMA node pool belongs in one")
    elif len(zones) > 1:
        problems.append(f"nodeLocations spans {len(zones)} zones ({', '.join(map(str, zones))}); an RDMA node pool "
                        "belongs in one")
    reservation = get(pool.props, "nodeConfig", "reservationAffinity", "consumeReservationType")
    if get(pool.props, "placementPolicy", "type") != "COMPACT" and reservation != "SPECIFIC_RESERVATION":
        problems.append("placementPolicy.type is not COMPACT and the pool consumes no specific reservation")
    return problems


def _aks(pool: Resource) -> list[str]:
    shape = catalog.SHAPES.get(("azure", str(get(pool.props, "vmSize") or "")))
    infiniband = (shape is not None and shape.rdma_fabric == catalog.INFINIBAND) or \
        string_map(get(pool.props, "nodeLabels")).get(labels.RDMA_LABEL) == catalog.INFINIBAND
    zones = items(get(pool.props, "availabilityZones"))
    if infiniband and len(zones) > 1:
        return [f"availabilityZones spans {len(zones)} zones ({', '.join(map(str, zones))}); InfiniBand joins the "
                "VMs of one scale set, in one zone"]
    return []


def _oke(pool: Resource) -> list[str]:
    compute_cluster = get(pool.props, "nodeConfigDetails", "computeClusterId")
    pool_labels = {str(get(i, "key")): str(get(i, "value")) for i in items(get(pool.props, "initialNodeLabels"))}
    if not compute_cluster and labels.RDMA_LABEL not in pool_labels:
        return []
    problems = []
    domains = {str(get(p, "availabilityDomain")) for p in items(get(pool.props, "nodeConfigDetails",
                                                                      "placementConfigs"))}
    if len(domains) != 1:
        problems.append(f"placementConfigs span {len(domains)} availability domains; an RDMA node pool belongs in one")
    if not compute_cluster:
        problems.append("no nodeConfigDetails.computeClusterId: RoCE nodes reach each other only inside a compute "
                        "cluster")
    return problems


def placement_problems(resource: Resource, by_id: Mapping[str, Resource]) -> list[str]:
    """Why an RDMA pool resource's nodes are not kept in one zone and close together (empty: they are, or the
    resource is no RDMA pool). ``by_id``: the stack's resources by id."""
    if resource.type == EKS_NODE_GROUP:
        return _eks(resource, by_id)
    if resource.type == EC2_NODE_CLASS:
        return _karpenter(resource)
    if resource.type == GKE_NODE_POOL:
        return _gke(resource)
    if resource.type == AKS_AGENT_POOL:
        return _aks(resource)
    if resource.type == OKE_NODE_POOL:
        return _oke(resource)
    return []
