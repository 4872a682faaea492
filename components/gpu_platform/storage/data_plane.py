"""`DataPlaneStorage`: the stack's data plane in Kubernetes (issue 23): CSI drivers the cloud offers as no add-on, the
shared file system's and the buckets' PersistentVolumes and claims, the bucket-access ServiceAccounts, the Job that
creates the file system's directories, and the image pre-pull DaemonSets (`storage_objects` says why each is so).

Its args are plain data, so a program without the platform's cloud layers uses it too: give ``volumes`` with a
``storage_class`` (dynamic ReadWriteMany claims of a class the cluster has) or with a rendered ``csi`` source (static
volumes of a file system created elsewhere). `build_storage_layer` derives them from the stack's ``storage`` section
and the `StorageBackends` its cloud layer put in ``ClusterHandle.outputs["storage"]``.
"""

import re
from collections.abc import Sequence
from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from .. import versions
from ..component_args import (
    DNS_LABEL,
    NON_EMPTY,
    STORAGE_QUANTITY,
    Args,
    KeywordArgs,
    Rule,
    choice,
    storage_bytes,
    storage_text,
)
from ..config_model import PlatformConfig
from ..kubernetes_base.common import DNS_SUBDOMAIN, child_opts, helm_release, register_body
from ..pools import GpuPool, GpuPoolSpec

# The team record of the program (what its TeamNamespaces took) lives in scheduling; storage may import it: it
# imports only the configuration model, so no module cycle closes (scheduling imports storage's section parser only).
from ..scheduling import program_teams
from . import storage_objects as objects
from .storage_backends import (
    BucketBackend,
    CsiDriverChart,
    SharedFileSystemBackend,
    StorageBackends,
    bucket_namespaces,
)
from .storage_config import BUCKET_CLAIM_GIB, IMAGE_REFERENCE, TEAM_CLAIMS, parse_storage_quota, team_claim_gib


class StorageVolumeArgs(TypedDict, total=False):
    """One claim: a static PersistentVolume bound to it (``csi``) or a dynamic claim of ``storage_class``."""

    name: Required[str]
    """The claim's name."""
    namespace: Required[str]
    """The claim's namespace (it must exist before the component: team namespaces do)."""
    size: Required[str]
    """The claim's request (what counts against the namespace's ``requests.storage`` quota), e.g. ``500Gi``."""
    access_mode: str
    """``ReadWriteMany`` (default) or ``ReadOnlyMany``."""
    csi: dict[str, Any]
    """``spec.csi`` of the claim's static PersistentVolume (``driver``, ``volumeHandle``, ``volumeAttributes``);
    values may be Outputs. Without it the claim is provisioned by ``storage_class``."""
    capacity: str
    """The static volume's capacity. Default: ``size``."""
    mount_options: list[str]
    """The static volume's ``mountOptions``."""
    storage_class: str
    """StorageClass of a dynamic claim (ReadWriteMany)."""
    claim: bool
    """Create the claim (default true); false: only the static volume, pre-bound to ``namespace/name`` for a claim
    a workload creates itself."""
    keep: bool
    """Keep the claim when the stack is deleted (default false; volumes are always retained)."""
    directory: str
    """The directory of the file system the volume mounts: created by the directories Job (with ``root_csi``)."""


class CsiChartArgs(TypedDict, total=False):
    """A CSI driver chart to install (pinned in `versions.CSI_DRIVER_CHARTS` by name)."""

    name: Required[str]
    """The release name and the pin's key."""
    values: dict[str, Any]
    """The chart's values."""


class PrePullArgs(TypedDict, total=False):
    """One GPU pool's images to pull onto every node when it joins."""

    pool: Required[GpuPoolSpec]
    """The GPU pool whose nodes pull the images."""
    images: Required[list[str]]
    """Image references (each image needs a ``true`` executable: the init step it runs)."""


class DataPlaneStorageArgs(TypedDict, total=False):
    """Arguments of `DataPlaneStorage`."""

    volumes: list[StorageVolumeArgs]
    """The claims (and static volumes) to create."""
    root_csi: dict[str, Any]
    """``spec.csi`` of a static volume of the whole shared file system: with it, a Job creates the ``directory`` of
    every volume first (drivers mount a directory; they do not create it). Default: none (directories exist)."""
    root_mount_options: list[str]
    """``mountOptions`` of that root volume."""
    service_account_namespaces: list[str]
    """Namespaces that get the ``storage-access`` ServiceAccount (those whose pods mount buckets)."""
    service_account_annotations: dict[str, pulumi.Input[str]]
    """Annotations of those ServiceAccounts (the cloud identity they act as)."""
    csi_charts: list[CsiChartArgs]
    """CSI drivers to install with Helm (into ``kube-system``)."""
    csi_manifests: list[str]
    """CSI drivers to apply from pinned upstream manifests, by their `versions.CSI_DRIVER_MANIFESTS` name (the
    manifests choose their namespace: ``kube-system`` for the Azure Lustre driver)."""
    pre_pulls: list[PrePullArgs]
    """Image pre-pull DaemonSets, one per GPU pool."""
    namespace: str
    """Namespace of the directories Job and the pre-pull DaemonSets. Default ``gpu-storage``."""
    storage_quotas: dict[str, str]
    """The ``requests.storage`` quota of namespaces the claims go to, by namespace (a `TeamNamespace`'s team
    ``storage_quota``): claims that together request more than their namespace's quota are refused when the
    component is constructed (Kubernetes would refuse the last of them at deploy time). A namespace whose team a
    `TeamNamespace` (or `SchedulingPolicy`) of the program took is checked against that team's ``storage_quota``
    without this; a different quantity here is refused. Default: none checked."""


RULES: dict[str, Rule] = {
    "volumes[].name": DNS_SUBDOMAIN,
    "volumes[].namespace": DNS_LABEL,
    "volumes[].size": STORAGE_QUANTITY,
    "volumes[].capacity": STORAGE_QUANTITY,
    "volumes[].access_mode": choice(*objects.ACCESS_MODES),
    "volumes[].storage_class": DNS_SUBDOMAIN,
    "volumes[].directory": objects.SUB_PATH,
    "service_account_namespaces[]": DNS_LABEL,
    "csi_charts[].name": Rule(check=lambda n: None if n in versions.CSI_DRIVER_CHARTS else
                              f"no CSI driver chart '{n}' is pinned (versions.CSI_DRIVER_CHARTS has "
                              f"{', '.join(sorted(versions.CSI_DRIVER_CHARTS)) or 'none'})"),
    "csi_manifests[]": Rule(check=lambda n: None if n in versions.CSI_DRIVER_MANIFESTS else
                            f"no CSI driver manifests '{n}' are pinned (versions.CSI_DRIVER_MANIFESTS has "
                            f"{', '.join(sorted(versions.CSI_DRIVER_MANIFESTS)) or 'none'})"),
    "pre_pulls[].images": Rule(check=lambda images: None if images else "must list at least one image"),
    "pre_pulls[].images[]": Rule(check=lambda i: None if IMAGE_REFERENCE.match(i) else
                                 f"'{i}' is not an image reference such as nvcr.io/nvidia/pytorch:26.06-py3"),
    "namespace": DNS_LABEL,
    "root_mount_options[]": NON_EMPTY,
    "storage_quotas": Rule(check=lambda quotas: quotas_problem(quotas)),
}


def quotas_problem(quotas: dict[str, str]) -> Optional[str]:
    """What is wrong with ``storage_quotas`` (namespace names, quantities), or None."""
    for namespace, quota in quotas.items():
        if not re.fullmatch(DNS_LABEL.pattern or "", namespace):
            return f"'{namespace}' is not a namespace name (a DNS label)"
        if not re.fullmatch(STORAGE_QUANTITY.pattern or "", quota):
            return f"{namespace}: '{quota}' is not {STORAGE_QUANTITY.what}"
    return None


def checked_args(name: str, args: DataPlaneStorageArgs) -> dict[str, Any]:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised."""
    checker = Args("DataPlaneStorage", name)
    checked = checker.check(args, DataPlaneStorageArgs, RULES)
    volumes = checked.get("volumes", [])
    seen: dict[tuple[str, str], int] = {}
    for i, volume in enumerate(volumes):
        key = (volume["namespace"], volume["name"])
        if key in seen:
            checker.fail(f"volumes[{i}].name", f"claim {key[0]}/{key[1]} is also volumes[{seen[key]}]")
        seen[key] = i
        static = "csi" in volume
        if static == bool(volume.get("storage_class")):
            checker.fail(f"volumes[{i}]", "give either csi (a static volume) or storage_class (a dynamic claim)")
        for key_name in ("capacity", "mount_options", "directory"):
            if key_name in volume and not static:
                checker.fail(f"volumes[{i}].{key_name}", "takes effect only with csi (a static volume)")
        if volume.get("claim") is False and not static:
            checker.fail(f"volumes[{i}].claim", "false leaves only a static volume: give csi")
    # Volumes are cluster-wide, named <namespace>-<claim>: two claims may not end up with one volume name.
    names: dict[str, int] = {}
    for i, volume in enumerate(volumes):
        if "csi" not in volume:
            continue
        pv = objects.volume_name(volume["namespace"], volume["name"])
        if pv in names:
            checker.fail(f"volumes[{i}].name", f"its volume '{pv}' is also volumes[{names[pv]}]'s (volumes are "
                                               "named <namespace>-<claim>): rename one claim")
        names[pv] = i
    check_quotas(checker, volumes, checked.get("storage_quotas", {}))
    if "root_csi" not in checked and "root_mount_options" in checked:
        checker.fail("root_mount_options", "takes effect only with root_csi")
    checker.unique([c["name"] for c in checked.get("csi_charts", [])], "csi_charts", "chart")
    checker.unique(checked.get("csi_manifests", []), "csi_manifests", "driver")
    checker.unique([p["pool"]["name"] for p in checked.get("pre_pulls", [])], "pre_pulls", "pool")
    checker.unique(checked.get("service_account_namespaces", []), "service_account_namespaces", "namespace")
    remember_quotas(checker.where, volumes, checked.get("storage_quotas", {}))  # accepted: nothing fails after this
    return checked


def quantity_bytes(quantity: str) -> int:
    """A checked storage quantity (``500Gi``, ``2Ti``) in bytes."""
    return storage_bytes(quantity)


def quantity_text(size: int) -> str:
    """Bytes as the largest whole binary unit (``5Ti``, ``1537Gi``)."""
    return storage_text(size)


def team_quotas(checker: Args, volumes: list[dict[str, Any]], quotas: dict[str, str]) -> dict[str, tuple[str, str]]:
    """The ``requests.storage`` quota of each namespace the claims or ``quotas`` name, with whose it is (for the
    refusal): the team's ``storage_quota`` where a `TeamNamespace` or `SchedulingPolicy` of this program took the team
    owning the namespace (so the two cannot disagree: one line naming both ends where ``quotas`` says otherwise),
    else ``quotas``'s."""
    found: dict[str, tuple[str, str]] = {}
    for namespace in dict.fromkeys([*quotas, *(v["namespace"] for v in volumes)]):
        team = program_teams.team_storage_quota(namespace)
        given = quotas.get(namespace)
        if team is None:
            if given is not None:
                found[namespace] = (given, f"storage_quotas.{namespace}: the TeamNamespace's requests.storage")
            continue
        where, quota = team
        if given is not None and (quota is None or quantity_bytes(quota) != quantity_bytes(given)):
            checker.fail(f"storage_quotas.{namespace}", f"{given}, but {where} says storage_quota "
                                                         f"{quota or 'none'}; give one quota (the Team's)")
        if quota is not None:
            found[namespace] = (quota, f"{where}'s storage_quota")
    return found


def remember_quotas(where: str, volumes: list[dict[str, Any]], quotas: dict[str, str]) -> None:
    """Record, for the program, what the accepted component ``where`` assumed of each namespace (its quota in
    ``quotas``, what its claims request), so a `TeamNamespace` constructed later with another quota is refused."""
    totals: dict[str, int] = {}
    for volume in volumes:
        if volume.get("claim") is not False:
            totals[volume["namespace"]] = totals.get(volume["namespace"], 0) + quantity_bytes(volume["size"])
    for namespace in dict.fromkeys([*quotas, *totals]):
        program_teams.remember_storage(where, namespace, quotas.get(namespace), totals.get(namespace, 0))


def check_quotas(checker: Args, volumes: list[dict[str, Any]], quotas: dict[str, str]) -> None:
    """The claims of each namespace fit its ``requests.storage`` quota (`team_quotas`): one line naming the claim
    that goes over and the quota's owner (both ends of the misuse)."""
    known = team_quotas(checker, volumes, quotas)
    totals: dict[str, int] = {}
    for i, volume in enumerate(volumes):
        namespace = volume["namespace"]
        if volume.get("claim") is False:  # a volume alone requests nothing
            continue
        totals[namespace] = totals.get(namespace, 0) + quantity_bytes(volume["size"])
        if namespace in known and totals[namespace] > quantity_bytes(known[namespace][0]):
            quota, owner = known[namespace]
            checker.fail(f"volumes[{i}].size", f"claim {namespace}/{volume['name']} brings the claims in namespace "
                                               f"'{namespace}' to {quantity_text(totals[namespace])}, more than its "
                                               f"storage quota {quota} ({owner})")


def volume_of(args: StorageVolumeArgs) -> objects.StorageVolume:
    """The `storage_objects.StorageVolume` of one checked ``volumes`` entry."""
    return objects.StorageVolume(
        name=args["name"], namespace=args["namespace"], size=args["size"],
        access_mode=args.get("access_mode", "ReadWriteMany"), csi=args.get("csi"), capacity=args.get("capacity"),
        mount_options=tuple(args.get("mount_options", ())), storage_class=args.get("storage_class"),
        claim=args.get("claim", True), keep=args.get("keep", False), directory=args.get("directory"))


class DataPlaneStorage(pulumi.ComponentResource, metaclass=KeywordArgs):
    """CSI driver releases, PersistentVolumes and claims, bucket-access ServiceAccounts, the directories Job and the
    image pre-pull DaemonSets of a stack's data plane.

    Attributes: ``claims`` and ``volumes`` (by ``namespace/name``), ``service_accounts`` (by namespace),
    ``csi_releases`` and ``csi_manifests`` (the applied ConfigFiles, by name), ``pre_pulls`` (by pool), ``ready``
    (what a pod mounting the volumes waits for)."""

    def __init__(self, name: str, args: DataPlaneStorageArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_args(name, args)  # type: ignore[assignment]  # before anything is registered
        super().__init__("gpuplatform:index:DataPlaneStorage", name, {}, opts)
        ns = args.get("namespace", objects.DEFAULT_NAMESPACE)
        self.csi_releases = {
            chart["name"]: helm_release(
                f"{name}-{chart['name']}", versions.CSI_DRIVER_CHARTS[chart["name"]], chart["name"],
                objects.CSI_DRIVER_NAMESPACE, dict(chart.get("values", {})), child_opts(self, opts),
                create_namespace=False)
            for chart in args.get("csi_charts", [])}
        self.csi_manifests: dict[str, list[Any]] = {}
        for driver in args.get("csi_manifests", []):
            applied: list[Any] = []
            for url in versions.CSI_DRIVER_MANIFESTS[driver]:
                # One after another, in the upstream installer's order (RBAC, CSIDriver, controller, node plugins).
                applied.append(k8s.yaml.v2.ConfigFile(
                    f"{name}-{objects.manifest_name(url)}", file=url,
                    opts=child_opts(self, opts, depends_on=applied[-1:])))
            self.csi_manifests[driver] = applied
        drivers = [*self.csi_releases.values(), *(m for ms in self.csi_manifests.values() for m in ms)]
        volumes = [volume_of(v) for v in args.get("volumes", [])]
        paths = objects.directories(volumes)
        needs_namespace = bool(args.get("pre_pulls")) or ("root_csi" in args and bool(paths))
        self.namespace = (register_body(k8s.core.v1.Namespace, f"{name}-ns", objects.namespace(ns),
                                        child_opts(self, opts)) if needs_namespace else None)
        in_ns = child_opts(self, opts, depends_on=[self.namespace] if self.namespace is not None else [])
        self.directories_job = None
        if "root_csi" in args and paths:
            root = objects.StorageVolume(name=objects.ROOT_CLAIM, namespace=ns, size="1Gi", csi=args["root_csi"],
                                         mount_options=tuple(args.get("root_mount_options", ())))
            root_volume = register_body(k8s.core.v1.PersistentVolume, f"{name}-root",
                                        objects.persistent_volume(root), child_opts(self, opts, depends_on=drivers))
            root_claim = register_body(k8s.core.v1.PersistentVolumeClaim, f"{name}-root-claim",
                                       objects.persistent_volume_claim(root),
                                       child_opts(self, opts, depends_on=[*in_ns.depends_on, root_volume]))
            self.directories_job = register_body(
                k8s.batch.v1.Job, f"{name}-directories",
                objects.directories_job(ns, paths, versions.PLATFORM_IMAGE.reference),
                child_opts(self, opts, depends_on=[root_claim]))
        before_volumes = [*drivers, *([self.directories_job] if self.directories_job is not None else [])]
        self.volumes: dict[str, Any] = {}
        self.claims: dict[str, Any] = {}
        for volume in volumes:
            key = f"{volume.namespace}/{volume.name}"
            body = objects.persistent_volume(volume)
            pv = None
            if body is not None:
                pv = register_body(k8s.core.v1.PersistentVolume, f"{name}-{volume.volume_name}", body,
                                   child_opts(self, opts, depends_on=before_volumes))
                self.volumes[key] = pv
            claim = objects.persistent_volume_claim(volume)
            if claim is not None:
                self.claims[key] = register_body(
                    k8s.core.v1.PersistentVolumeClaim, f"{name}-{volume.namespace}-{volume.name}-claim", claim,
                    child_opts(self, opts, depends_on=[pv] if pv is not None else drivers,
                               **({"retain_on_delete": True} if volume.keep else {})))
        annotations = args.get("service_account_annotations", {})
        self.service_accounts = {
            namespace: register_body(k8s.core.v1.ServiceAccount, f"{name}-{namespace}-storage-access",
                                     objects.service_account(namespace, annotations), child_opts(self, opts))
            for namespace in args.get("service_account_namespaces", [])}
        self.pre_pulls = {}
        for pre_pull in args.get("pre_pulls", []):
            pool = GpuPool.from_spec(pre_pull["pool"])
            self.pre_pulls[pool.name] = register_body(
                k8s.apps.v1.DaemonSet, f"{name}-{objects.pre_pull_name(pool)}",
                objects.pre_pull_daemon_set(objects.PrePull(pool, tuple(pre_pull["images"])), ns), in_ns)
        self.ready = [*self.claims.values(), *self.volumes.values(), *self.service_accounts.values()]
        self.register_outputs({"claims": sorted(self.claims), "volumes": sorted(self.volumes),
                               "pre_pull_pools": sorted(self.pre_pulls)})


# ---------------------------------------------------------------------------------------------------------
# From a stack: what the platform asks of the component, and what its workloads mount


def backends_of(platform: Any) -> StorageBackends:
    """The cloud layer's `StorageBackends` (empty when it gave none)."""
    backends = platform.cluster.outputs.get("storage")
    return backends if isinstance(backends, StorageBackends) else StorageBackends()


def team_volumes(config: PlatformConfig, backends: StorageBackends) -> list[StorageVolumeArgs]:
    """Every team's ``<team>-datasets`` and ``<team>-checkpoints`` claims on the shared file system (sizes:
    `storage_config.team_claim_gib`) and a claim of each bucket in its namespace."""
    shared, out = backends.shared_file_system, []
    for i, team in enumerate(config.teams):
        quota = parse_storage_quota(team.storage_quota, f"teams[{i}].storageQuota")
        if shared is not None and config.storage.shared_file_system is not None:
            size = f"{team_claim_gib(config.storage, quota, len(config.teams))}Gi"
            for claim in TEAM_CLAIMS:
                out.append(_shared_volume(backends, objects.team_claim(team.name, claim), team.name, size,
                                          objects.TEAM_DIRECTORY.format(team=team.name, claim=claim), keep=True))
    out += bucket_volumes(config, backends, [t.name for t in config.teams])
    return out


def bucket_volumes(config: PlatformConfig, backends: StorageBackends,
                   namespaces: list[str]) -> list[StorageVolumeArgs]:
    """A static volume and claim of each bucket in each of ``namespaces`` that mounts buckets
    (`storage_backends.bucket_namespaces`)."""
    return [bucket_volume(bucket, ns) for ns in bucket_namespaces(config) if ns in namespaces
            for bucket in backends.buckets]


def bucket_volume(bucket: BucketBackend, namespace: str) -> StorageVolumeArgs:
    """The static volume and claim ``<bucket.name>`` of one bucket in ``namespace`` (requesting
    `storage_config.BUCKET_CLAIM_GIB`: object storage has no size)."""
    volume = StorageVolumeArgs(
        name=bucket.name, namespace=namespace, size=f"{BUCKET_CLAIM_GIB}Gi", capacity=bucket.capacity,
        access_mode="ReadOnlyMany" if bucket.read_only else "ReadWriteMany",
        csi=dict(bucket.csi_source(objects.volume_name(namespace, bucket.name))))
    if bucket.mount_options:
        volume["mount_options"] = list(bucket.mount_options)
    return volume


def _shared_volume(backends: StorageBackends, claim: str, namespace: str, size: str, directory: str,
                   keep: bool = False, create_claim: bool = True) -> StorageVolumeArgs:
    assert backends.shared_file_system is not None
    return file_system_volume(backends.shared_file_system, namespace, claim, size, directory, keep, create_claim)


def file_system_volume(shared: SharedFileSystemBackend, namespace: str, claim: str, size: str, directory: str,
                       keep: bool = False, create_claim: bool = True) -> StorageVolumeArgs:
    """The claim ``namespace/claim`` of ``size`` on the shared file system: a static volume of ``directory``
    pre-bound to it (``create_claim`` false: only the volume, for a claim a workload creates), or a dynamic claim
    of the backend's StorageClass. ``keep``: the claim outlives the stack."""
    if shared.storage_class:
        return StorageVolumeArgs(name=claim, namespace=namespace, size=size, storage_class=shared.storage_class,
                                 keep=keep)
    assert shared.csi_source is not None, f"the {shared.kind} backend gives no csi_source"
    volume = StorageVolumeArgs(name=claim, namespace=namespace, size=size, keep=keep, directory=directory,
                               csi=dict(shared.csi_source(objects.volume_name(namespace, claim), directory)),
                               capacity=f"{shared.capacity_gib}Gi", claim=create_claim)
    if shared.mount_options:
        volume["mount_options"] = list(shared.mount_options)
    return volume


def model_cache_volume(config: PlatformConfig, backends: StorageBackends, namespace: str, claim: str,
                       size: str) -> Optional[StorageVolumeArgs]:
    """The static volume of a service's model cache on the shared file system (``models``), pre-bound to the claim
    the service creates; None without a shared file system or with a StorageClass (the service's claim names it)."""
    shared = backends.shared_file_system
    if shared is None or config.storage.shared_file_system is None or shared.storage_class:
        return None
    return _shared_volume(backends, claim, namespace, size, objects.MODELS_DIRECTORY, create_claim=False)


def pre_pull_images(config: PlatformConfig, pool: GpuPool, pools: list[GpuPool]) -> list[str]:
    """The images a GPU pool's nodes pull when they join: the reference training image of its vendor (when the stack
    trains: any team's job may use it on any of the vendor's pools), the sentiment app's image on the pool it runs on,
    vLLM's on the LLM service's pool, and ``storage.imagePulls.images`` everywhere."""
    from ..serving import llm_config
    from ..serving.workloads import chosen_pool

    images: list[str] = []
    if config.training.enabled and pool.vendor in versions.TRAINING_IMAGES:
        images.append(versions.TRAINING_IMAGES[pool.vendor].reference)
    serving = chosen_pool(config, pools)
    if config.inference.enabled and serving is not None and serving.name == pool.name:
        images.append(config.inference.image or versions.INFERENCE_IMAGES[pool.vendor].reference)
    llm_pool = llm_config.llm_pool(config.llm, pools) if config.llm is not None else None
    if config.llm is not None and llm_pool is not None and llm_pool.name == pool.name:
        images.append(config.llm.image or versions.VLLM_IMAGE.reference)
    images += config.storage.image_pulls.images
    return list(dict.fromkeys(images))


def storage_args(config: PlatformConfig, backends: StorageBackends, pools: list[GpuPool]) -> DataPlaneStorageArgs:
    """`DataPlaneStorage` args from a stack's configuration and its cloud layer's backends."""
    args = DataPlaneStorageArgs()
    volumes = team_volumes(config, backends)
    volumes += [v for v in service_cache_volumes(config, backends, pools) if v is not None]
    if volumes:
        args["volumes"] = volumes
    shared = backends.shared_file_system
    if shared is not None and volumes:
        args.update(file_system_root(shared))
    args.update(csi_driver_args(shared, backends.csi_charts))
    if backends.buckets:
        teams = {t.name for t in config.teams}
        args["service_account_namespaces"] = [ns for ns in bucket_namespaces(config) if ns in teams]
        if backends.service_account_annotations:
            args["service_account_annotations"] = dict(backends.service_account_annotations)
    quotas = {t.name: t.storage_quota for t in config.teams if t.storage_quota is not None}
    if quotas and volumes:
        args["storage_quotas"] = quotas
    if config.storage.image_pulls.pre_pull:
        pre_pulls = [PrePullArgs(pool=p.spec(), images=pre_pull_images(config, p, pools)) for p in pools]
        args["pre_pulls"] = [p for p in pre_pulls if p["images"]]
    return args


def file_system_root(shared: SharedFileSystemBackend) -> DataPlaneStorageArgs:
    """``root_csi`` and ``root_mount_options`` of a file system with static volumes (the directories Job mounts
    its root to create every volume's directory); none for a StorageClass backend."""
    args = DataPlaneStorageArgs()
    if shared.csi_source is not None and not shared.storage_class:
        args["root_csi"] = dict(shared.csi_source(objects.volume_name(objects.DEFAULT_NAMESPACE, objects.ROOT_CLAIM),
                                                  ""))
        if shared.mount_options:
            args["root_mount_options"] = list(shared.mount_options)
    return args


def csi_driver_args(shared: Optional[SharedFileSystemBackend],
                    charts: Sequence[CsiDriverChart] = ()) -> DataPlaneStorageArgs:
    """``csi_charts`` and ``csi_manifests``: the CSI drivers no cloud add-on installs, of the file system
    (``shared``) and of the buckets (``charts``), each once."""
    args = DataPlaneStorageArgs()
    wanted = [c for c in (shared.csi_chart if shared is not None else None, *charts) if c is not None]
    if wanted:
        args["csi_charts"] = [CsiChartArgs(name=c.name, values=dict(c.values)) for c in
                              {c.name: c for c in wanted}.values()]
    if shared is not None and shared.csi_manifests is not None:
        args["csi_manifests"] = [shared.csi_manifests.name]
    return args


def service_cache_volumes(config: PlatformConfig, backends: StorageBackends,
                          pools: list[GpuPool]) -> list[Optional[StorageVolumeArgs]]:
    """The model caches of the sentiment app and the LLM service on the shared file system (their services create
    the claims: `inference_cache`, `llm_cache`)."""
    from ..serving.workloads import chosen_pool

    out: list[Optional[StorageVolumeArgs]] = []
    inference = inference_cache(config, backends)
    if config.inference.enabled and chosen_pool(config, pools) is not None and inference is not None:
        out.append(model_cache_volume(config, backends, config.inference.namespace, inference_cache_claim(),
                                      inference["model_cache_size"]))
    llm = llm_cache(config, backends)
    if config.llm is not None and llm is not None:
        out.append(model_cache_volume(config, backends, config.llm.namespace, llm_cache_claim(), llm["cache_size"]))
    return out


DEFAULT_INFERENCE_CACHE = "20Gi"
"""The sentiment app's model cache on the shared file system when ``inference.modelCacheSize`` gives none."""


def inference_cache(config: PlatformConfig, backends: StorageBackends) -> Optional[dict[str, Any]]:
    """The sentiment app's model-cache args with a shared file system (one ReadWriteMany claim on it: a new replica
    finds the model there), None otherwise or when the stack chose its own cache class."""
    shared = backends.shared_file_system
    if shared is None or config.storage.shared_file_system is None or config.inference.model_cache_storage_class:
        return None
    cache: dict[str, Any] = {"model_cache_size": config.inference.model_cache_size or DEFAULT_INFERENCE_CACHE,
                             "model_cache_access_mode": "ReadWriteMany"}
    if shared.storage_class:
        cache["model_cache_storage_class"] = shared.storage_class
    else:
        cache["model_cache_volume"] = objects.volume_name(config.inference.namespace, inference_cache_claim())
        if not shared.sub_directory_mounts:
            cache["model_cache_sub_path"] = objects.MODELS_DIRECTORY
    return cache


def inference_cache_claim() -> str:
    """The sentiment app's model-cache claim (`inference_objects.model_cache_name` of the platform's app)."""
    from ..serving import inference_objects

    return f"{inference_objects.APP_NAME}-model-cache"


def llm_cache_claim() -> str:
    """The LLM service's shared cache claim (`llm_objects.model_cache_name` of the platform's service)."""
    from ..serving import llm_objects

    return f"{llm_objects.DEFAULT_NAME}-model-cache"


def llm_cache(config: PlatformConfig, backends: StorageBackends) -> Optional[dict[str, Any]]:
    """The LLM service's cache args with a shared file system: one ReadWriteMany claim on it that the download step
    fills once (it skips a model already there), so a new replica reads the weights from the file system instead of
    the Hub. None without one, with ``modelSource: pvc`` or when the stack chose its own cache class."""
    from ..serving import llm_config

    llm, shared = config.llm, backends.shared_file_system
    if (llm is None or shared is None or config.storage.shared_file_system is None or llm.model_source != "huggingface"
            or llm.cache_storage_class):
        return None
    cache: dict[str, Any] = {"cache_size": llm_config.cache_size(llm), "cache_access_mode": "ReadWriteMany",
                             "skip_cached_model": True}
    if shared.storage_class:
        cache["cache_storage_class"] = shared.storage_class
    else:
        cache["cache_volume"] = objects.volume_name(llm.namespace, llm_cache_claim())
        if not shared.sub_directory_mounts:
            cache["cache_sub_path"] = objects.MODELS_DIRECTORY
    return cache


def training_storage(config: PlatformConfig, backends: StorageBackends, team: str) -> dict[str, Any]:
    """The reference training job's storage args in ``team``'s namespace: its datasets (read-only at ``/data``) and
    checkpoints claims on the shared file system (each kept to the team's directory with ``subPath`` where the
    driver mounts only the file system's root), and the buckets at ``/buckets/<name>`` with the ServiceAccount and
    pod labels/annotations their driver needs. Empty without storage."""
    out: dict[str, Any] = {}
    shared = backends.shared_file_system
    if shared is not None and config.storage.shared_file_system is not None:
        out["datasets_claim"] = objects.team_claim(team, "datasets")
        out["checkpoint_claim"] = objects.team_claim(team, "checkpoints")
        if not shared.sub_directory_mounts and not shared.storage_class:
            out["datasets_sub_path"] = objects.TEAM_DIRECTORY.format(team=team, claim="datasets")
            out["checkpoint_sub_path"] = objects.TEAM_DIRECTORY.format(team=team, claim="checkpoints")
    if backends.buckets:
        out["bucket_claims"] = [b.name for b in backends.buckets]
        out["service_account"] = objects.STORAGE_SERVICE_ACCOUNT
        labels = {k: v for b in backends.buckets for k, v in b.pod_labels.items()}
        annotations = {k: v for b in backends.buckets for k, v in b.pod_annotations.items()}
        if labels:
            out["pod_labels"] = labels
        if annotations:
            out["pod_annotations"] = annotations
    return out


def service_storage_args(config: PlatformConfig, backends: StorageBackends,
                         namespaces: list[str]) -> DataPlaneStorageArgs:
    """`DataPlaneStorage` args for the services' namespaces (``namespaces``: those of the sentiment app and the LLM
    service the stack deploys): each bucket's claim and the ``storage-access`` ServiceAccount the cloud granted the
    buckets to. Empty without buckets."""
    namespaces = [ns for ns in bucket_namespaces(config) if ns in namespaces]
    if not backends.buckets or not namespaces:
        return DataPlaneStorageArgs()
    args = DataPlaneStorageArgs(volumes=bucket_volumes(config, backends, namespaces),
                                service_account_namespaces=namespaces)
    if backends.service_account_annotations:
        args["service_account_annotations"] = dict(backends.service_account_annotations)
    return args


def build_service_storage(platform: Any, name: str) -> Optional[DataPlaneStorage]:
    """Adds ``platform.layers["service_storage"]``: the buckets' claims and ServiceAccounts in the namespaces of the
    sentiment app and the LLM service, after those services (which create their namespaces). Nothing without
    buckets."""
    config: PlatformConfig = platform.config
    services = [layer for layer in (platform.layers.get("workloads"), platform.layers.get("llm")) if layer is not None]
    if not config.storage.buckets or not services:
        return None
    args = service_storage_args(config, backends_of(platform), [s.namespace for s in services])
    if not args:
        return None
    platform.layers["service_storage"] = DataPlaneStorage(f"{name}-service-storage", args,
                                                          opts=platform._k8s_opts(depends_on=services))
    return platform.layers["service_storage"]


def build_storage_layer(platform: Any, name: str) -> Optional[DataPlaneStorage]:
    """Adds ``platform.layers["storage"]`` when the stack configures ``storage`` (nothing otherwise): after the team
    namespaces its claims live in."""
    config: PlatformConfig = platform.config
    if not config.storage.enabled:
        return None
    args = storage_args(config, backends_of(platform), list(platform.pools))
    if not args:
        return None  # e.g. image streaming only: the cloud layer did all of it
    tenancy = list(platform.layers.get("tenancy", {}).values())
    platform.layers["storage"] = DataPlaneStorage(f"{name}-storage", args,
                                                  opts=platform._k8s_opts(depends_on=tenancy))
    return platform.layers["storage"]
