"""Google Cloud resources of a GKE stack's ``storage`` (`storage_from_config`), and what the Kubernetes layer mounts.

The decisions (tiers, names, principals, mount options) are the pure functions of `storage_options`; this module
registers the resources they describe, after the `GkeCluster` (whose VPC, project and add-ons they use):

- a Managed Lustre instance (``lustre.Instance``) with, in the cluster's own VPC, private services access (a global
  ``VPC_PEERING`` address range and a ``servicenetworking.Connection``) and a firewall rule admitting Lustre's TCP
  port from that range. In an existing network (``network``) only the instance is created: the network's owner
  provides private services access and the firewall rule, as Managed Lustre "Configure a VPC network" describes.
- one ``storage.BucketIAMMember`` per bucket and namespace that mounts it, for the namespace's ``storage-access``
  ServiceAccount as a Workload Identity Federation principal.

`GkeCluster` turns the CSI driver add-ons and image streaming on (``lustre_csi_driver``, ``gcs_fuse_csi_driver``,
pools' ``image_streaming``); `cluster_from_config` passes them from the stack's ``storage``.
"""

from typing import Any, Optional

import pulumi

from ...config_model import PlatformConfig
from ...kubernetes_base.common import child_opts
from ...labels import GKE_GCSFUSE_VOLUMES_ANNOTATION
from ...storage.storage_backends import BucketBackend, SharedFileSystemBackend, StorageBackends, bucket_namespaces
from .. import missing_extra
from . import options as gcp_options
from . import pools as gcp_pools
from . import storage_options as so

try:
    import pulumi_gcp as gcp
except ModuleNotFoundError as err:  # the cloud's extra is not installed: name it
    raise missing_extra(err) from None

LUSTRE_PEERING_CIDR = "10.10.0.0/20"
"""The private services access range of a new VPC (Managed Lustre instances take /24s from it): clear of the new
VPC's default node (10.0.0.0/20), Pod (10.4.0.0/14), Service (10.8.0.0/20) and proxy-only (10.9.0.0/23) ranges and
of the GPU NIC range (192.168.0.0/16)."""


def network_path(project: str, network: str) -> str:
    """``projects/<project>/global/networks/<name>`` (the form ``lustre.Instance.network`` takes) of a network given
    by name, by that path or by self link."""
    marker = "projects/"
    if "/global/networks/" in network and marker in network:
        return network[network.index(marker):]
    return f"projects/{project}/global/networks/{network}"


def storage_from_config(name: str, config: PlatformConfig, cluster: Any,
                        opts: Optional[pulumi.ResourceOptions] = None) -> StorageBackends:
    """The stack's Managed Lustre instance and bucket grants (children of ``cluster``, a `GkeCluster`), and how to
    mount them. Call only with ``config.storage.enabled``."""
    options: gcp_options.GcpClusterOptions = config.cluster_options or gcp_options.GcpClusterOptions()
    storage = config.storage
    shared = None
    if storage.shared_file_system is not None:
        shared = _managed_lustre(name, config, cluster, options, opts)
    buckets = _bucket_access(name, config, cluster, opts) if storage.buckets else ()
    return StorageBackends(shared_file_system=shared, buckets=buckets,
                           image_streaming=storage.image_pulls.streaming)


def _managed_lustre(name: str, config: PlatformConfig, cluster: Any, options: gcp_options.GcpClusterOptions,
                    opts: Optional[pulumi.ResourceOptions]) -> SharedFileSystemBackend:
    fs = config.storage.shared_file_system
    assert fs is not None
    tier = so.lustre_tier(fs.throughput_per_tib)
    zone = so.lustre_zone(options.zone, config.node_pools)
    assert zone is not None  # gcp_options.parse_cluster_options refused the stack otherwise
    prefix = gcp_pools.resource_name(gcp_pools.resource_name(name), 30)
    project = cluster.project
    depends: list[Any] = []
    if cluster.network is not None:
        network = pulumi.Output.all(project, cluster.network.name).apply(lambda a: network_path(a[0], a[1]))
        peering_ip, peering_prefix = LUSTRE_PEERING_CIDR.split("/")
        peering_range = gcp.compute.GlobalAddress(
            f"{name}-lustre-range", name=f"{prefix}-lustre-range", project=project, purpose="VPC_PEERING",
            address_type="INTERNAL", address=peering_ip, prefix_length=int(peering_prefix),
            network=cluster.network.id, description="Managed Lustre private services access",
            opts=child_opts(cluster, opts))
        peering = gcp.servicenetworking.Connection(
            f"{name}-lustre-peering", network=cluster.network.id, service=so.SERVICE_NETWORKING,
            reserved_peering_ranges=[peering_range.name], opts=child_opts(cluster, opts))
        firewall = gcp.compute.Firewall(
            f"{name}-lustre", name=f"{prefix}-lustre", project=project, network=cluster.network.name,
            direction="INGRESS", source_ranges=[LUSTRE_PEERING_CIDR],
            allows=[{"protocol": "tcp", "ports": [str(so.LUSTRE_PORT)]}],
            description="Lustre (LNet) traffic of the Managed Lustre instance", opts=child_opts(cluster, opts))
        depends = [peering, firewall]
    else:
        network = project.apply(lambda p: network_path(p, options.network or ""))
    instance_id = f"{prefix}-lustre"
    instance = gcp.lustre.Instance(
        f"{name}-lustre", instance_id=instance_id, location=zone, project=project, network=network,
        filesystem=so.lustre_filesystem_name(name), capacity_gib=str(fs.size_gib),
        per_unit_storage_throughput=str(tier.throughput),
        description=f"Shared file system of the {name} GPU platform",
        opts=child_opts(cluster, opts, depends))

    def csi_source(volume_name: str, sub_directory: str) -> dict[str, Any]:
        """A static PersistentVolume on the instance: ``mountpoint`` is its ``IP@tcp:/FILESYSTEM`` (the driver's
        attribute that stands for ``ip`` and ``filesystem``). ``sub_directory`` cannot narrow the mount: the driver
        mounts a file system's root only (``mountpoint`` must match ``^(.+)@tcp:/([^/]+)$``, ``pkg/csi_driver/
        node.go``, and it has no subdirectory attribute), so every volume shows the whole file system and workloads
        keep to their directory (``volumeMounts[].subPath``)."""
        del sub_directory
        return {
            "driver": so.LUSTRE_CSI_DRIVER,
            "volumeHandle": project.apply(lambda p: so.lustre_volume_handle(p, zone, instance_id, volume_name)),
            "volumeAttributes": {"mountpoint": instance.mount_point},
        }

    return SharedFileSystemBackend(kind="gcp-managed-lustre", capacity_gib=fs.size_gib, driver=so.LUSTRE_CSI_DRIVER,
                                   csi_source=csi_source, throughput_mbps_per_tib=tier.throughput,
                                   sub_directory_mounts=False)


def _bucket_access(name: str, config: PlatformConfig, cluster: Any,
                   opts: Optional[pulumi.ResourceOptions]) -> tuple[BucketBackend, ...]:
    """Each bucket's role for the ``storage-access`` principal of every namespace that mounts it."""
    project = cluster.project
    number = gcp.organizations.get_project_output(project_id=project, opts=pulumi.InvokeOptions(parent=cluster)).number
    backends = []
    for bucket in config.storage.buckets:
        for namespace in bucket_namespaces(config):
            gcp.storage.BucketIAMMember(
                f"{name}-{bucket.name}-{namespace}", bucket=bucket.bucket, role=so.bucket_role(bucket.read_only),
                member=pulumi.Output.all(number, project).apply(
                    lambda a, ns=namespace: so.workload_principal(a[0], a[1], ns)),
                opts=child_opts(cluster, opts))
        backends.append(BucketBackend(
            name=bucket.name, bucket=bucket.bucket, driver=so.GCSFUSE_CSI_DRIVER,
            csi_source=lambda _volume, b=bucket: so.gcsfuse_csi_source(b.bucket, b.read_only),
            read_only=bucket.read_only, mount_options=so.GCSFUSE_MOUNT_OPTIONS[bucket.profile],
            pod_annotations={GKE_GCSFUSE_VOLUMES_ANNOTATION: "true"}))
    return tuple(backends)
