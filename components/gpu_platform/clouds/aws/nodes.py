"""What an EKS managed node group of a GPU pool receives: labels, taints, scaling, capacity, launch template
and cluster-autoscaler tags. Pure functions of a `GpuPool` and its AWS options, no SDK."""

from collections.abc import Sequence
from typing import Any, Optional

from ... import catalog, labels
from ...pools import GpuPool
from .efa import efa_network_interfaces
from .options import (
    AL2023_ARM_NVIDIA,
    AL2023_NEURON,
    AL2023_NVIDIA,
    BOTTLEROCKET_NVIDIA,
    CAPACITY_BLOCK,
    MIME_USER_DATA_AMI_TYPES,
)
from .security import LAUNCH_TEMPLATE_METADATA_OPTIONS
from .user_data import launch_template_user_data

CA_TEMPLATE_PREFIX = "k8s.io/cluster-autoscaler/node-template"
"""Cluster autoscaler (AWS provider) reads these ASG tags to build a node from nothing: scale from zero."""

# Bottlerocket's NVIDIA variants put the OS on /dev/xvda and containers on the data volume /dev/xvdb;
# AL2023 keeps everything on its root volume.
AL2023_ROOT_DEVICE = "/dev/xvda"
IMAGE_VOLUME_DEVICE = {AL2023_NVIDIA: AL2023_ROOT_DEVICE, AL2023_ARM_NVIDIA: AL2023_ROOT_DEVICE,
                       BOTTLEROCKET_NVIDIA: "/dev/xvdb", AL2023_NEURON: AL2023_ROOT_DEVICE}
SYSTEM_DISK_GIB = 50
"""Root volume of a system node (AL2023 standard AMI, ``/dev/xvda``): images of the platform's controllers."""


def node_labels(pool: GpuPool, ami_type: str) -> dict[str, str]:
    """The node group's Kubernetes labels: the pool's labels, on NVIDIA device-plugin pools the cluster-autoscaler's
    GPU label (so it waits for a new node's device plugin instead of adding nodes), plus, on Bottlerocket, the GPU
    Operator's switch that keeps its device plugin off nodes whose OS already runs one. A DRA pool's nodes never
    advertise ``nvidia.com/gpu``: with the label the autoscaler would hold them unready for good."""
    result = dict(pool.labels)
    if pool.vendor == catalog.NVIDIA and not pool.dra:
        # The autoscaler's GPU handling waits for nvidia.com/gpu on nodes with this label; no other vendor's node
        # would ever advertise it.
        result[labels.AWS_ACCELERATOR_LABEL] = accelerator_label_value(pool)
    if ami_type == BOTTLEROCKET_NVIDIA:
        result[labels.DEVICE_PLUGIN_DEPLOY_LABEL] = "false"
    return dict(sorted(result.items()))


def accelerator_label_value(pool: GpuPool) -> str:
    """``k8s.amazonaws.com/accelerator`` of a pool's nodes, in the autoscaler's ``nvidia-<gpu>`` form (only its
    presence matters on AWS; the value names the GPU)."""
    return f"nvidia-{pool.gpu_model}"


def node_taints(pool: GpuPool) -> list[dict]:
    """The node group's taints in the EKS API spelling (effect ``NO_SCHEDULE``)."""
    return [{"key": t.key, "value": t.value, "effect": labels.EFFECT_TO_API_ENUM[t.effect]} for t in pool.taints]


def scaling(pool: GpuPool, desired: Optional[int]) -> dict:
    """``scaling_config``: desired starts at ``desired`` (default minNodes); the autoscaler owns it afterwards."""
    return {"min_size": pool.min_nodes, "max_size": pool.max_nodes,
            "desired_size": pool.min_nodes if desired is None else desired}


def autoscaler_tags(pool: GpuPool, node_group_labels: dict[str, str]) -> dict[str, str]:
    """Node-template tags: labels, taints (``value:Effect``) and extended resources of a node not yet running (the
    pool's accelerator resources the catalog can count, and its RDMA NICs). A DRA pool's GPUs are ResourceSlice
    devices, not extended resources, so its template names only the RDMA NICs."""
    tags = {f"{CA_TEMPLATE_PREFIX}/label/{key}": value for key, value in node_group_labels.items()}
    tags.update({f"{CA_TEMPLATE_PREFIX}/taint/{t.key}": f"{t.value}:{t.effect}" for t in pool.taints})
    for resource, count in ({} if pool.dra else pool.resources_per_node).items():
        if count:
            tags[f"{CA_TEMPLATE_PREFIX}/resources/{resource}"] = str(count)
    if pool.rdma_resource:
        tags[f"{CA_TEMPLATE_PREFIX}/resources/{pool.rdma_resource}"] = str(pool.rdma_interfaces)
    return dict(sorted(tags.items()))


def launch_template_data(
    pool: GpuPool,
    options: Any,
    security_group_ids: Sequence[Any] = (),
    placement_group_name: Any = None,
    tags: Optional[dict] = None,
) -> dict:
    """The launch template of a GPU pool (keyword arguments of ``aws.ec2.LaunchTemplate``).

    No ``image_id``: EKS picks the AMI of ``amiType`` and bootstraps it. Labels and taints travel through the node
    group API. User data (a MIME part EKS merges with its bootstrap) only where a node must change its host at boot:
    DRA pools on multi-node NVLink shapes turn the AMI's ``nvidia-imex.service`` off (`user_data`).
    ``security_group_ids`` (cluster SG + EFA SG) and the placement group only apply to EFA pools.
    """
    data: dict[str, Any] = {
        "block_device_mappings": [{
            "device_name": IMAGE_VOLUME_DEVICE[options.ami_type],
            "ebs": {"volume_size": options.disk_size_gib, "volume_type": "gp3", "encrypted": "true",
                    "delete_on_termination": "true"},
        }],
        # IMDSv2 only, one hop: hostNetwork pods (aws-node, the EFA device plugin) still reach it, pods in their
        # own network namespace cannot take the node's credentials (`security.IMDS_HOP_LIMIT`).
        "metadata_options": dict(LAUNCH_TEMPLATE_METADATA_OPTIONS),
        "update_default_version": True,
        "tag_specifications": [{"resource_type": "instance", "tags": dict(tags or {})}],
    }
    if pool.rdma_fabric:
        data["network_interfaces"] = efa_network_interfaces(pool.rdma_interfaces, security_group_ids,
                                                            pool.instance_type)
    user_data = launch_template_user_data(pool)
    if user_data is not None:
        if options.ami_type not in MIME_USER_DATA_AMI_TYPES:
            raise ValueError(f"pool {pool.name}: {options.ami_type} takes no MIME user data; the host setup of a "
                             "DRA multi-node NVLink pool needs an AL2023 AMI type")
        data["user_data"] = user_data
    if placement_group_name is not None:
        data["placement"] = {"group_name": placement_group_name}
    if options.capacity_reservation_id:
        data["capacity_reservation_specification"] = {
            "capacity_reservation_target": {"capacity_reservation_id": options.capacity_reservation_id}}
    if options.capacity_type == CAPACITY_BLOCK:
        # EKS rejects a CAPACITY_BLOCK node group whose launch template lacks these (user guide capacity-blocks-mng).
        data["instance_market_options"] = {"market_type": "capacity-block"}
        data["instance_type"] = pool.instance_type
    return data


def system_launch_template_data(tags: Optional[dict] = None) -> dict:
    """The launch template of the system node group (keyword arguments of ``aws.ec2.LaunchTemplate``): its root
    volume and IMDS settings. Without a launch template EKS picks the hop limit itself, and its guide says both 1
    (``al2023``: "the default hop count for managed node groups is set to 1") and 2 (``launch-templates``: the
    default launch template sets the hop limit containers need); the template makes it 1 whatever the default."""
    return {
        "block_device_mappings": [{
            "device_name": AL2023_ROOT_DEVICE,
            "ebs": {"volume_size": SYSTEM_DISK_GIB, "volume_type": "gp3", "encrypted": "true",
                    "delete_on_termination": "true"},
        }],
        "metadata_options": dict(LAUNCH_TEMPLATE_METADATA_OPTIONS),
        "update_default_version": True,
        "tag_specifications": [{"resource_type": "instance", "tags": dict(tags or {})}],
    }
