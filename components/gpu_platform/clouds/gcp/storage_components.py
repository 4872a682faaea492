"""Google Cloud storage as components a program composes with `GkeCluster`: `GkeSharedFileSystem` (a Managed Lustre
instance, with private services access and a Lustre firewall rule in the cluster's own VPC) and `GkeBucketAccess`
(a bucket role for each namespace's ``storage-access`` ServiceAccount, as a Workload Identity Federation
principal). The stack path (`storage.storage_from_config`) builds through these same components, so a stack file and
a composed program plan the same resources.

The decisions are `storage_options`' (pure). The CSI drivers are GKE add-ons: `GkeCluster`'s ``lustre_csi_driver``
and ``gcs_fuse_csi_driver`` turn them on.
"""

from typing import Any, Optional, TypedDict

import pulumi
from typing_extensions import Required

from ...component_args import Args, KeywordArgs, matching
from ...kubernetes_base.common import child_opts
from ...labels import GKE_GCSFUSE_VOLUMES_ANNOTATION
from ...storage.bucket_args import BucketArgs, bucket_configs, checked_bucket_access
from ...storage.composition import BucketClaims, FileSystemClaims, check_capacity, former_parent
from ...storage.storage_backends import BucketBackend, SharedFileSystemBackend
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


class GkeSharedFileSystemArgs(TypedDict, total=False):
    """Arguments of `GkeSharedFileSystem`: the cluster's project and network (a `GkeCluster`'s outputs), the
    instance's zone and size."""

    project: Required[pulumi.Input[str]]
    """The project (``GkeCluster.project``)."""
    zone: Required[str]
    """The instance's zone (Managed Lustre is zonal): the zone of the nodes that read most."""
    network: Required[pulumi.Input[str]]
    """The cluster's VPC network by name, path or self link (``GkeCluster.network.name``, or the existing network's
    name)."""
    network_id: pulumi.Input[str]
    """The network's id (``GkeCluster.network.id``) when the program owns it: the component then also creates
    private services access (a ``VPC_PEERING`` range and a ``servicenetworking`` connection) and the firewall rule
    admitting Lustre from that range. Without it the network's owner provides both ("Configure a VPC network")."""
    size_gib: Required[int]
    """Capacity in GiB: the tier's minimum, maximum and steps (docs/storage.md)."""
    throughput_per_tib: int
    """MB/s per TiB: 125, 250, 500 or 1000 (default)."""
    filesystem: str
    """The file system name clients mount (letters and digits, at most 8, starting with a letter). Default: from
    the component's name."""
    description: str
    """The instance's description. Default ``Shared file system of the <name> GPU platform``."""


FILESYSTEM = matching(r"[a-z][a-z0-9]{0,7}", "a file system name (a letter, then letters and digits, at most 8)")


class GkeSharedFileSystem(FileSystemClaims, pulumi.ComponentResource, metaclass=KeywordArgs):
    """A Google Cloud Managed Lustre instance (``lustre.Instance``) in one zone of a GKE cluster's network, with
    private services access and a firewall rule for Lustre's port when ``network_id`` says the program owns the
    network.

    ``backend`` is the `SharedFileSystemBackend` `DataPlaneStorage` mounts (the GKE driver mounts a file system's
    root only: ``sub_directory_mounts`` is false, workloads keep to their directory with ``subPath``)."""

    instance: gcp.lustre.Instance
    mount_point: pulumi.Output[str]

    def __init__(self, name: str, args: GkeSharedFileSystemArgs, opts: Optional[pulumi.ResourceOptions] = None):
        checker = Args("GkeSharedFileSystem", name, cloud="gcp")
        args = checker.check(args, GkeSharedFileSystemArgs,  # type: ignore[assignment]
                             {"zone": matching(gcp_options.ZONE.pattern.strip("^$"), "a zone such as us-central1-c"),
                              "filesystem": FILESYSTEM})
        check_capacity(checker, so.lustre_capacity_problem(args["size_gib"], args.get("throughput_per_tib")))
        super().__init__("gpuplatform:index:GkeSharedFileSystem", name, {}, opts)
        aliases = former_parent(opts)
        tier = so.lustre_tier(args.get("throughput_per_tib"))
        zone = args["zone"]
        prefix = gcp_pools.resource_name(gcp_pools.resource_name(name), 30)
        project = pulumi.Output.from_input(args["project"])
        depends: list[Any] = []
        self.network_objects: list[Any] = []
        """Private services access and the firewall rule (empty without ``network_id``)."""
        if args.get("network_id") is not None:
            peering_ip, peering_prefix = LUSTRE_PEERING_CIDR.split("/")
            peering_range = gcp.compute.GlobalAddress(
                f"{name}-lustre-range", name=f"{prefix}-lustre-range", project=project, purpose="VPC_PEERING",
                address_type="INTERNAL", address=peering_ip, prefix_length=int(peering_prefix),
                network=args["network_id"], description="Managed Lustre private services access",
                opts=child_opts(self, opts, aliases=aliases))
            peering = gcp.servicenetworking.Connection(
                f"{name}-lustre-peering", network=args["network_id"], service=so.SERVICE_NETWORKING,
                reserved_peering_ranges=[peering_range.name], opts=child_opts(self, opts, aliases=aliases))
            firewall = gcp.compute.Firewall(
                f"{name}-lustre", name=f"{prefix}-lustre", project=project, network=args["network"],
                direction="INGRESS", source_ranges=[LUSTRE_PEERING_CIDR],
                allows=[{"protocol": "tcp", "ports": [str(so.LUSTRE_PORT)]}],
                description="Lustre (LNet) traffic of the Managed Lustre instance",
                opts=child_opts(self, opts, aliases=aliases))
            depends = [peering, firewall]
            self.network_objects = [peering_range, peering, firewall]
        instance_id = f"{prefix}-lustre"
        self.instance = gcp.lustre.Instance(
            f"{name}-lustre", instance_id=instance_id, location=zone, project=project,
            network=pulumi.Output.all(project, args["network"]).apply(lambda a: network_path(a[0], a[1])),
            filesystem=args.get("filesystem", so.lustre_filesystem_name(name)), capacity_gib=str(args["size_gib"]),
            per_unit_storage_throughput=str(tier.throughput),
            description=args.get("description", f"Shared file system of the {name} GPU platform"),
            opts=child_opts(self, opts, depends, aliases=aliases))
        instance = self.instance
        self.mount_point = instance.mount_point

        def csi_source(volume_name: str, sub_directory: str) -> dict[str, Any]:
            """A static PersistentVolume on the instance: ``mountpoint`` is its ``IP@tcp:/FILESYSTEM`` (the driver's
            attribute that stands for ``ip`` and ``filesystem``). ``sub_directory`` cannot narrow the mount: the
            driver mounts a file system's root only (``mountpoint`` must match ``^(.+)@tcp:/([^/]+)$``,
            ``pkg/csi_driver/node.go``, and it has no subdirectory attribute), so every volume shows the whole file
            system and workloads keep to their directory (``volumeMounts[].subPath``)."""
            del sub_directory
            return {
                "driver": so.LUSTRE_CSI_DRIVER,
                "volumeHandle": project.apply(lambda p: so.lustre_volume_handle(p, zone, instance_id, volume_name)),
                "volumeAttributes": {"mountpoint": instance.mount_point},
            }

        self.backend = SharedFileSystemBackend(
            kind="gcp-managed-lustre", capacity_gib=args["size_gib"], driver=so.LUSTRE_CSI_DRIVER,
            csi_source=csi_source, throughput_mbps_per_tib=tier.throughput, sub_directory_mounts=False)
        """How `DataPlaneStorage` mounts the instance (Python only)."""
        self.register_outputs({"mount_point": self.mount_point})


class GkeBucketAccessArgs(TypedDict, total=False):
    """Arguments of `GkeBucketAccess`: the cluster's project (a `GkeCluster`'s output) and the buckets."""

    project: Required[pulumi.Input[str]]
    """The cluster's project (``GkeCluster.project``): its Workload Identity pool names the principals."""
    namespaces: Required[list[str]]
    """The namespaces whose ``storage-access`` ServiceAccount may mount the buckets (`DataPlaneStorage` creates
    them)."""
    buckets: Required[list[BucketArgs]]
    """The Cloud Storage buckets: ``roles/storage.objectViewer`` on read-only ones, ``roles/storage.objectUser`` on
    read-write ones."""


class GkeBucketAccess(BucketClaims, pulumi.ComponentResource, metaclass=KeywordArgs):
    """Cloud Storage FUSE with Workload Identity Federation: one ``storage.BucketIAMMember`` per bucket and namespace
    for that namespace's ``storage-access`` ServiceAccount as a principal. No Google service account, no keys.

    ``buckets`` are the `BucketBackend`s `DataPlaneStorage` mounts (pods carry ``gke-gcsfuse/volumes: "true"``)."""

    def __init__(self, name: str, args: GkeBucketAccessArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_bucket_access("GkeBucketAccess", name, "gcp", args, GkeBucketAccessArgs)  # type: ignore
        super().__init__("gpuplatform:index:GkeBucketAccess", name, {}, opts)
        project = pulumi.Output.from_input(args["project"])
        number = gcp.organizations.get_project_output(project_id=project,
                                                      opts=pulumi.InvokeOptions(parent=self)).number
        self.namespaces: list[str] = list(args["namespaces"])
        self.members: dict[str, gcp.storage.BucketIAMMember] = {}
        """Each grant, by ``<bucket name>-<namespace>``."""
        backends = []
        for bucket in bucket_configs(args["buckets"]):  # type: ignore[arg-type]
            for namespace in self.namespaces:
                self.members[f"{bucket.name}-{namespace}"] = gcp.storage.BucketIAMMember(
                    f"{name}-{bucket.name}-{namespace}", bucket=bucket.bucket, role=so.bucket_role(bucket.read_only),
                    member=pulumi.Output.all(number, project).apply(
                        lambda a, ns=namespace: so.workload_principal(a[0], a[1], ns)),
                    opts=child_opts(self, opts, aliases=former_parent(opts)))
            backends.append(BucketBackend(
                name=bucket.name, bucket=bucket.bucket, driver=so.GCSFUSE_CSI_DRIVER,
                csi_source=lambda _volume, b=bucket: so.gcsfuse_csi_source(b.bucket, b.read_only),
                read_only=bucket.read_only, mount_options=so.GCSFUSE_MOUNT_OPTIONS[bucket.profile],
                pod_annotations={GKE_GCSFUSE_VOLUMES_ANNOTATION: "true"}))
        self.buckets: tuple[BucketBackend, ...] = tuple(backends)
        """How `DataPlaneStorage` mounts each bucket (Python only)."""
        self.service_account_annotations: dict[str, Any] = {}  # the principal names the ServiceAccount itself
        self.csi_charts: tuple = ()  # GKE's Cloud Storage FUSE add-on is the driver
        self.register_outputs({})
