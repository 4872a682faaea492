"""Issue 23's Kubernetes layer with a fake cloud backend: the static PersistentVolumes and claims of the shared file
system and the buckets, team claims under their quotas, the bucket-access ServiceAccounts, CSI driver charts, the
directories Job, the pre-pull DaemonSets; the workloads' mounts and model caches; and nothing without the keys."""

import dataclasses
from pathlib import Path

import pytest
from conftest import planned_stack

from gpu_platform import plan, versions
from gpu_platform.config import parse_config, strip_namespace
from gpu_platform.errors import ConfigError
from gpu_platform.plan import render_manifests
from gpu_platform.scheduling import tenancy_objects
from gpu_platform.scheduling.teams import team_of, team_spec
from gpu_platform.schemas import validate_manifest
from gpu_platform.security import pod_security
from gpu_platform.serving import inference_objects, llm_objects
from gpu_platform.serving.llm import LlmService, llm_args
from gpu_platform.serving.workloads import InferenceService, inference_args
from gpu_platform.storage import data_plane as storage
from gpu_platform.storage import storage_objects as objects
from gpu_platform.storage.data_plane import DataPlaneStorage
from gpu_platform.storage.storage_backends import (
    BucketBackend,
    CsiDriverChart,
    CsiDriverManifests,
    SharedFileSystemBackend,
    StorageBackends,
)
from gpu_platform.storage.storage_config import BucketConfig, ImagePullsConfig, SharedFileSystemConfig, StorageConfig
from gpu_platform.testing import run_program
from gpu_platform.training import training_objects as tobj
from gpu_platform.versions import Chart

ROOT = Path(__file__).resolve().parent.parent
PV = "kubernetes:core/v1:PersistentVolume"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
SA = "kubernetes:core/v1:ServiceAccount"
DS = "kubernetes:apps/v1:DaemonSet"
JOB = "kubernetes:batch/v1:Job"
RELEASE = "kubernetes:helm.sh/v3:Release"


def lustre_csi(volume: str, sub_directory: str) -> dict:
    """A fake backend's static source: the volume's name keys node staging, the directory is in the mount name."""
    return {"driver": "fsx.csi.aws.com", "volumeHandle": f"fs-0123::{volume}",
            "volumeAttributes": {"dnsname": "fs-0123.fsx.us-west-2.amazonaws.com",
                                 "mountname": f"abcdef/{sub_directory}".rstrip("/")}}


def bucket_csi(name: str, bucket: str):
    return lambda volume: {"driver": "s3.csi.aws.com", "volumeHandle": f"{bucket}-{volume}",
                           "volumeAttributes": {"bucketName": bucket}}


SHARED = SharedFileSystemBackend(kind="fsx-lustre", capacity_gib=4800, driver="fsx.csi.aws.com",
                                 csi_source=lustre_csi, mount_options=("flock",), throughput_mbps_per_tib=250)
BUCKETS = (
    BucketBackend(name="imagenet", bucket="acme-imagenet", driver="s3.csi.aws.com",
                  csi_source=bucket_csi("imagenet", "acme-imagenet"), read_only=True,
                  mount_options=("region us-west-2",), capacity="1200Gi",
                  pod_labels={"azure.workload.identity/use": "true"},
                  pod_annotations={"gke-gcsfuse/volumes": "true"}),
    BucketBackend(name="runs", bucket="acme-runs", driver="s3.csi.aws.com", csi_source=bucket_csi("runs", "acme-runs"),
                  read_only=False),
)
BACKENDS = StorageBackends(shared_file_system=SHARED, buckets=BUCKETS,
                           service_account_annotations={"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/storage"},
                           csi_charts=(CsiDriverChart("fake-csi", {"node": {"enabled": True}}),))


def existing_config(**storage_keys):
    """The existing reference stack's configuration (two teams: research 4Ti, product 1Ti) with ``storage`` replaced
    (buckets come from the fake backend: a cloud's layer would have made them from the same config)."""
    raw = strip_namespace(plan.load_stack_file(ROOT / "stacks" / "Pulumi.existing.yaml"))
    config = parse_config(raw, "existing")
    return dataclasses.replace(config, storage=StorageConfig(**storage_keys)) if storage_keys else config


def with_shared(size_gib=4800, buckets=(), pre_pull=False, images=()):
    return existing_config(shared_file_system=SharedFileSystemConfig(size_gib=size_gib), buckets=buckets,
                           image_pulls=ImagePullsConfig(pre_pull=pre_pull, images=images))


CONFIG_BUCKETS = (BucketConfig("imagenet", "acme-imagenet"), BucketConfig("runs", "acme-runs", read_only=False))


# ---------------------------------------------------------------------------------------------------------
# Bodies


def test_a_static_volume_is_pre_bound_retained_and_classless():
    volume = objects.StorageVolume(name="research-datasets", namespace="research", size="2048Gi",
                                   csi=lustre_csi("research-research-datasets", "teams/research/datasets"),
                                   capacity="4800Gi", mount_options=("flock",))
    assert objects.persistent_volume(volume) == {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": "research-research-datasets", "labels": {
            "app.kubernetes.io/managed-by": "gpu-platform", **objects.APP_LABELS}},
        "spec": {"capacity": {"storage": "4800Gi"}, "accessModes": ["ReadWriteMany"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                 "claimRef": {"namespace": "research", "name": "research-datasets"},
                 "csi": lustre_csi("research-research-datasets", "teams/research/datasets"),
                 "mountOptions": ["flock"]}}
    assert objects.persistent_volume_claim(volume)["spec"] == {
        "accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "2048Gi"}},
        "storageClassName": "", "volumeName": "research-research-datasets"}


def test_a_dynamic_claim_names_its_class_and_has_no_volume():
    volume = objects.StorageVolume(name="research-datasets", namespace="research", size="512Gi",
                                   storage_class="cephfs")
    assert objects.persistent_volume(volume) is None
    assert objects.persistent_volume_claim(volume)["spec"] == {
        "accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "512Gi"}},
        "storageClassName": "cephfs"}


def test_storage_quota_reaches_the_team_resource_quota():
    config = existing_config()
    hard = {t.name: tenancy_objects.resource_quota(team_of(team_spec(t)))["spec"]["hard"] for t in config.teams}
    assert hard["research"]["requests.storage"] == "4Ti"
    assert hard["product"]["requests.storage"] == "1Ti"
    no_quota = dataclasses.replace(config.teams[0], storage_quota=None)
    assert "requests.storage" not in tenancy_objects.resource_quota(no_quota)["spec"]["hard"]


# ---------------------------------------------------------------------------------------------------------
# What a stack asks of the component


def test_team_claims_split_their_quota_on_static_volumes_of_their_directories():
    volumes = storage.team_volumes(with_shared(), StorageBackends(shared_file_system=SHARED))
    assert [(v["namespace"], v["name"], v["size"], v["directory"]) for v in volumes] == [
        ("research", "research-datasets", "2048Gi", "teams/research/datasets"),
        ("research", "research-checkpoints", "2048Gi", "teams/research/checkpoints"),
        ("product", "product-datasets", "512Gi", "teams/product/datasets"),
        ("product", "product-checkpoints", "512Gi", "teams/product/checkpoints"),
    ]
    first = volumes[0]
    assert first["csi"] == lustre_csi("research-research-datasets", "teams/research/datasets")
    assert first["capacity"] == "4800Gi" and first["mount_options"] == ["flock"] and first["keep"] is True
    assert {v["csi"]["volumeHandle"] for v in volumes} == {  # one node staging per volume
        "fs-0123::research-research-datasets", "fs-0123::research-research-checkpoints",
        "fs-0123::product-product-datasets", "fs-0123::product-product-checkpoints"}


def test_without_quotas_the_teams_share_the_file_system():
    config = with_shared(size_gib=6000)
    config = dataclasses.replace(config, teams=tuple(dataclasses.replace(t, storage_quota=None) for t in config.teams))
    sizes = {v["name"]: v["size"] for v in storage.team_volumes(config, StorageBackends(shared_file_system=SHARED))}
    assert sizes == {"research-datasets": "1500Gi", "research-checkpoints": "1500Gi", "product-datasets": "1500Gi",
                     "product-checkpoints": "1500Gi"}


def test_a_storage_class_backend_gives_dynamic_claims():
    class_backend = StorageBackends(shared_file_system=SharedFileSystemBackend(
        kind="storage-class", capacity_gib=20480, storage_class="cephfs"))
    volumes = storage.team_volumes(existing_config(), class_backend)
    assert volumes[0] == {"name": "research-datasets", "namespace": "research", "size": "2048Gi",
                          "storage_class": "cephfs", "keep": True}
    assert "root_csi" not in storage.storage_args(existing_config(), class_backend, [])


def test_buckets_get_a_claim_in_each_team_namespace():
    config = with_shared(buckets=CONFIG_BUCKETS)
    volumes = [v for v in storage.team_volumes(config, BACKENDS) if v["name"] in ("imagenet", "runs")]
    assert [(v["namespace"], v["name"], v["access_mode"]) for v in volumes] == [
        ("research", "imagenet", "ReadOnlyMany"), ("research", "runs", "ReadWriteMany"),
        ("product", "imagenet", "ReadOnlyMany"), ("product", "runs", "ReadWriteMany")]
    imagenet = volumes[0]
    assert imagenet == {"name": "imagenet", "namespace": "research", "size": "1Gi", "capacity": "1200Gi",
                        "access_mode": "ReadOnlyMany", "mount_options": ["region us-west-2"],
                        "csi": {"driver": "s3.csi.aws.com", "volumeHandle": "acme-imagenet-research-imagenet",
                                "volumeAttributes": {"bucketName": "acme-imagenet"}}}
    # With two bucket claims of 1Gi in the namespace, the team claims split what is left of the quota.
    sizes = {v["name"]: v["size"] for v in storage.team_volumes(config, BACKENDS)}
    assert sizes["research-datasets"] == "2047Gi" and sizes["product-checkpoints"] == "511Gi"


def test_the_services_namespaces_get_the_buckets_and_the_account():
    config = with_shared(buckets=CONFIG_BUCKETS)
    args = storage.service_storage_args(config, BACKENDS, ["inference"])
    assert args["service_account_namespaces"] == ["inference"]
    assert args["service_account_annotations"] == {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/storage"}
    assert [(v["namespace"], v["name"], v["access_mode"]) for v in args["volumes"]] == [
        ("inference", "imagenet", "ReadOnlyMany"), ("inference", "runs", "ReadWriteMany")]
    assert storage.service_storage_args(config, StorageBackends(shared_file_system=SHARED), ["inference"]) == {}


def test_storage_args_from_a_stack():
    config = with_shared(buckets=CONFIG_BUCKETS, pre_pull=True, images=("docker.io/library/busybox:1.37",))
    args = storage.storage_args(config, BACKENDS, list(config.gpu_pools()))
    assert args["root_csi"] == lustre_csi("gpu-storage-shared-file-system-root", "")
    assert args["root_mount_options"] == ["flock"]
    assert args["csi_charts"] == [{"name": "fake-csi", "values": {"node": {"enabled": True}}}]
    assert args["service_account_namespaces"] == ["research", "product"]
    assert args["service_account_annotations"] == {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/storage"}
    pre_pulls = {p["pool"]["name"]: p["images"] for p in args["pre_pulls"]}
    assert pre_pulls == {
        # The sentiment app runs on the inference pool; the training image goes to every NVIDIA pool.
        "a100-infer": [versions.TRAINING_IMAGE.reference, versions.INFERENCE_IMAGE.reference,
                       "docker.io/library/busybox:1.37"],
        "h100-train": [versions.TRAINING_IMAGE.reference, "docker.io/library/busybox:1.37"],
    }
    # The sentiment app's model cache: a static volume of the models directory, its claim the app's own.
    cache = [v for v in args["volumes"] if v["namespace"] == "inference"]
    assert cache == [{"name": "sentiment-model-cache", "namespace": "inference", "size": "20Gi",
                      "keep": False, "directory": "models", "csi": lustre_csi("inference-sentiment-model-cache",
                                                                               "models"),
                      "capacity": "4800Gi", "claim": False, "mount_options": ["flock"]}]


def test_each_key_changes_what_is_asked():
    backends = StorageBackends(shared_file_system=SHARED)
    base = storage.storage_args(with_shared(), backends, [])
    assert storage.storage_args(with_shared(size_gib=9600), backends, []) == base  # quotas size the claims...
    no_quota = dataclasses.replace(with_shared(), teams=tuple(dataclasses.replace(t, storage_quota=None)
                                                              for t in with_shared().teams))
    bigger = dataclasses.replace(no_quota, storage=with_shared(size_gib=9600).storage)
    sizes = {v["size"] for v in storage.storage_args(bigger, backends, [])["volumes"] if v.get("keep")}
    assert sizes == {"2400Gi"}  # ...and without them sizeGiB does
    assert "pre_pulls" not in base
    pools = list(with_shared().gpu_pools())
    assert len(storage.storage_args(with_shared(pre_pull=True), backends, pools)["pre_pulls"]) == 2
    assert storage.storage_args(with_shared(pre_pull=True, images=("a/b:1",)), backends, pools)["pre_pulls"][1][
        "images"][-1] == "a/b:1"


def test_training_mounts_from_a_stack():
    assert storage.training_storage(with_shared(buckets=CONFIG_BUCKETS), BACKENDS, "research") == {
        "datasets_claim": "research-datasets", "checkpoint_claim": "research-checkpoints",
        "bucket_claims": ["imagenet", "runs"], "service_account": "storage-access",
        "pod_labels": {"azure.workload.identity/use": "true"},
        "pod_annotations": {"gke-gcsfuse/volumes": "true"}}
    assert storage.training_storage(existing_config(), StorageBackends(), "research") == {}


# ---------------------------------------------------------------------------------------------------------
# The component


@pytest.fixture
def fake_chart(monkeypatch):
    monkeypatch.setitem(versions.CSI_DRIVER_CHARTS, "fake-csi", Chart("fake-csi", "1.2.3", "https://example.com"))


def built(args):
    return run_program(lambda: DataPlaneStorage("storage", args))


def test_the_component_registers_volumes_claims_accounts_charts_and_pre_pulls(fake_chart):
    config = with_shared(buckets=CONFIG_BUCKETS, pre_pull=True)
    rec = built(storage.storage_args(config, BACKENDS, list(config.gpu_pools())))
    volumes = {r.inputs["metadata"]["name"]: r for r in rec.of_type(PV)}
    assert sorted(volumes) == sorted([
        "gpu-storage-shared-file-system-root", "inference-sentiment-model-cache",
        *(f"{team}-{team}-{claim}" for team in ("research", "product") for claim in ("datasets", "checkpoints")),
        *(f"{team}-{bucket}" for team in ("research", "product") for bucket in ("imagenet", "runs"))])
    claims = {(r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"]): r for r in rec.of_type(PVC)}
    assert ("inference", "sentiment-model-cache") not in claims  # the app creates it
    assert claims[("research", "research-checkpoints")].retain_on_delete
    assert not claims[("research", "imagenet")].retain_on_delete
    accounts = {r.inputs["metadata"]["namespace"]: r.inputs["metadata"] for r in rec.of_type(SA)}
    assert sorted(accounts) == ["product", "research"]
    assert accounts["research"]["name"] == "storage-access"
    assert accounts["research"]["annotations"] == {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/storage"}
    release = rec.one(RELEASE)
    assert (release.inputs["chart"], release.inputs["version"], release.inputs["namespace"],
            release.inputs["values"]) == ("fake-csi", "1.2.3", "kube-system", {"node": {"enabled": True}})
    # The team volumes wait for the driver and for their directories.
    job = rec.one(JOB)
    assert {release.urn, job.urn} <= set(volumes["research-research-datasets"].dependencies)
    script = job.inputs["spec"]["template"]["spec"]["containers"][0]["command"][2]
    assert script == ("mkdir -p '/fs/teams/research/datasets' '/fs/teams/research/checkpoints' "
                      "'/fs/teams/product/datasets' '/fs/teams/product/checkpoints' '/fs/models' && chmod 1777 "
                      "'/fs/teams/research/datasets' '/fs/teams/research/checkpoints' '/fs/teams/product/datasets' "
                      "'/fs/teams/product/checkpoints' '/fs/models'")
    assert sorted(r.inputs["metadata"]["name"] for r in rec.of_type(DS)) == ["pre-pull-a100-infer",
                                                                             "pre-pull-h100-train"]


def test_every_manifest_is_valid(fake_chart):
    config = with_shared(buckets=CONFIG_BUCKETS, pre_pull=True)
    rec = built(storage.storage_args(config, BACKENDS, list(config.gpu_pools())))
    manifests = render_manifests(rec)
    assert {m["kind"] for m in manifests} == {"Namespace", "PersistentVolume", "PersistentVolumeClaim",
                                              "ServiceAccount", "Job", "DaemonSet"}
    for manifest in manifests:
        validate_manifest(manifest, "1.33")  # raises ManifestError naming the object


def test_the_pre_pull_holder_runs_on_the_pools_architecture():
    pool = with_shared().gpu_pools()[1]
    assert objects.holder_image(pool) == versions.PLATFORM_IMAGE.reference
    arm = dataclasses.replace(pool, architecture="arm64")
    assert objects.holder_image(arm) == versions.TRAINING_IMAGE.reference
    assert versions.TRAINING_IMAGE.tagged in versions.ARM64_WORKLOAD_IMAGES


def test_the_pre_pull_daemon_set_meets_restricted_on_its_pool():
    pool = with_shared().gpu_pools()[1]
    body = objects.pre_pull_daemon_set(objects.PrePull(pool, ("nvcr.io/nvidia/pytorch:26.06-py3",)))
    spec = body["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"gpu-platform.io/pool": "h100-train"}
    assert spec["tolerations"] == [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Equal",
                                    "value": "present"}]
    assert [(c["image"], c["command"]) for c in spec["initContainers"]] == [
        ("nvcr.io/nvidia/pytorch:26.06-py3", ["true"])]
    assert spec["containers"][0]["command"] == ["sleep", "infinity"]
    for container in [*spec["initContainers"], *spec["containers"]]:
        context = container["securityContext"]
        assert context == pod_security.container_security_context()  # UID 10001, read-only root, drop ALL
        assert container["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
        assert container["resources"]["requests"] == {"cpu": "1m", "memory": "8Mi"}


@pytest.mark.parametrize(("args", "message"), [
    ({"volumes": [{"name": "a", "namespace": "research", "size": "1Gi"}]},
     "volumes[0]: give either csi (a static volume) or storage_class (a dynamic claim)"),
    ({"volumes": [{"name": "a", "namespace": "research", "size": "1Gi", "storage_class": "x", "csi": {}}]},
     "volumes[0]: give either csi (a static volume) or storage_class (a dynamic claim)"),
    ({"volumes": [{"name": "a", "namespace": "research", "size": "1Gi", "storage_class": "x",
                   "directory": "data"}]}, "volumes[0].directory: takes effect only with csi (a static volume)"),
    ({"volumes": [{"name": "a", "namespace": "research", "size": "lots", "storage_class": "x"}]},
     "volumes[0].size: 'lots' is not a storage quantity such as 50Gi"),
    ({"volumes": [{"name": "a", "namespace": "research", "size": "1Gi", "storage_class": "x"},
                  {"name": "a", "namespace": "research", "size": "2Gi", "storage_class": "x"}]},
     "volumes[1].name: claim research/a is also volumes[0]"),
    ({"volumes": [{"name": "a", "namespace": "r", "size": "1Gi", "csi": {}, "directory": "../etc"}]},
     "volumes[0].directory: must be a relative path inside the file system, without '..'"),
    ({"volumes": [{"name": "team-data", "namespace": "ml", "size": "1Gi", "csi": {}},
                  {"name": "data", "namespace": "ml-team", "size": "1Gi", "csi": {}}]},
     "volumes[1].name: its volume 'ml-team-data' is also volumes[0]'s (volumes are named <namespace>-<claim>): "
     "rename one claim"),
    ({"csi_charts": [{"name": "nope"}]}, "csi_charts[0].name: no CSI driver chart 'nope' is pinned"),
    ({"pre_pulls": [{"images": ["a/b:1"]}]}, "pre_pulls[0].pool: is required"),
    ({"root_mount_options": ["flock"]}, "root_mount_options: takes effect only with root_csi"),
])
def test_bad_args_are_refused_before_anything_is_registered(args, message):
    with pytest.raises(ConfigError) as err:
        storage.checked_args("storage", args)
    assert message in str(err.value)
    assert str(err.value).startswith("DataPlaneStorage storage: ")


# ---------------------------------------------------------------------------------------------------------
# Workloads


def plan_with(**extra):
    pool = with_shared().gpu_pools()[1]
    return tobj.TrainingPlan(namespace="research", pool=pool, nodes=1, gpus_per_pod=8, image="i", local_queue=None,
                             topology_level=None, job_priority_class="p", retrain_priority_class="p",
                             schedule="0 3 * * 0", checkpoint_size="100Gi", checkpoint_storage_class=None, **extra)


def test_the_training_job_mounts_the_team_claims_and_buckets():
    spec = tobj.pod_template(plan_with(datasets_claim="research-datasets",
                                       shared_checkpoint_claim="research-checkpoints", bucket_claims=("imagenet",),
                                       service_account="storage-access",
                                       pod_labels={"azure.workload.identity/use": "true"},
                                       pod_annotations={"gke-gcsfuse/volumes": "true"}), "p")
    pod = spec["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["checkpoints"] == {"name": "checkpoints",
                                      "persistentVolumeClaim": {"claimName": "research-checkpoints"}}
    assert volumes["datasets"] == {"name": "datasets", "persistentVolumeClaim": {"claimName": "research-datasets",
                                                                                 "readOnly": True}}
    assert volumes["bucket-imagenet"] == {"name": "bucket-imagenet",
                                          "persistentVolumeClaim": {"claimName": "imagenet"}}
    mounts = {m["name"]: m for m in pod["containers"][0]["volumeMounts"]}
    assert mounts["datasets"] == {"name": "datasets", "mountPath": "/data", "readOnly": True}
    assert mounts["bucket-imagenet"] == {"name": "bucket-imagenet", "mountPath": "/buckets/imagenet"}
    assert pod["serviceAccountName"] == "storage-access"
    assert spec["metadata"]["labels"]["azure.workload.identity/use"] == "true"
    assert spec["metadata"]["annotations"] == {"gke-gcsfuse/volumes": "true"}


def test_without_storage_the_training_pod_is_unchanged():
    pod = tobj.pod_template(plan_with(), "p")
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["scripts", "checkpoints", "dshm", "tmp"]
    assert pod["spec"]["volumes"][1]["persistentVolumeClaim"] == {"claimName": tobj.CHECKPOINT_CLAIM}
    assert "serviceAccountName" not in pod["spec"]


def test_the_training_workload_uses_the_team_checkpoints_instead_of_its_own():
    from gpu_platform.training.workload import TrainingWorkload

    pool = with_shared().gpu_pools()[1]
    rec = run_program(lambda: TrainingWorkload("t", {"pool": pool.spec(), "namespace": "research", "gpu_quota": 8,
                                                     "checkpoint_claim": "research-checkpoints",
                                                     "datasets_claim": "research-datasets"}))
    assert rec.of_type(PVC) == []
    with pytest.raises(ConfigError, match="checkpoint_size: sizes the job's own checkpoint volume; with "
                                          "checkpoint_claim there is none"):
        TrainingWorkload("t", {"pool": pool.spec(), "namespace": "research", "gpu_quota": 8,
                               "checkpoint_claim": "c", "checkpoint_size": "1Gi"})


def test_the_sentiment_app_binds_its_cache_to_the_shared_volume():
    config = with_shared()
    cache = storage.inference_cache(config, BACKENDS)
    assert cache == {"model_cache_size": "20Gi", "model_cache_access_mode": "ReadWriteMany",
                     "model_cache_volume": "inference-sentiment-model-cache"}
    pool = config.gpu_pools()[0]
    rec = run_program(lambda: InferenceService("inf", inference_args(config, pool, model_cache=cache)))
    claim = rec.one(PVC)
    assert claim.inputs["metadata"]["name"] == "sentiment-model-cache"
    assert claim.inputs["spec"] == {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "20Gi"}},
                                    "storageClassName": "", "volumeName": "inference-sentiment-model-cache"}
    assert inference_objects.MODEL_CACHE_PATH == "/model-cache"
    assert storage.inference_cache(existing_config(), StorageBackends()) is None


def llm_config_with_shared(shared_backend):
    from gpu_platform.serving.llm_config import LlmConfig

    config = with_shared()
    config = dataclasses.replace(config, llm=LlmConfig(model="Qwen/Qwen3-0.6B", pool="a100-infer"))
    return config, storage.llm_cache(config, StorageBackends(shared_file_system=shared_backend))


def test_the_llm_shares_one_cache_and_downloads_only_a_missing_model():
    config, cache = llm_config_with_shared(SHARED)
    assert cache == {"cache_size": "20Gi", "cache_access_mode": "ReadWriteMany", "skip_cached_model": True,
                     "cache_volume": "llm-llm-model-cache"}
    pool = config.gpu_pools()[0]
    rec = run_program(lambda: LlmService("llm", llm_args(config, pool, cache=cache)))
    claim = rec.one(PVC)
    assert claim.inputs["spec"] == {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "20Gi"}},
                                    "storageClassName": "", "volumeName": "llm-llm-model-cache"}
    deployment = rec.one("kubernetes:apps/v1:Deployment", "llm-deployment")
    download = deployment.inputs["spec"]["template"]["spec"]["initContainers"][0]
    assert download["command"] == ["python3", "-c", llm_objects.CACHED_DOWNLOAD_SCRIPT]
    assert 'done = pathlib.Path(os.environ["HF_HOME"], "complete", model.replace("/", "--"))' in download["command"][2]
    assert download["command"][2].endswith("done.touch()\n")


def test_the_llm_cache_on_a_storage_class():
    _, cache = llm_config_with_shared(SharedFileSystemBackend(kind="storage-class", capacity_gib=20480,
                                                              storage_class="cephfs"))
    assert cache == {"cache_size": "20Gi", "cache_access_mode": "ReadWriteMany", "skip_cached_model": True,
                     "cache_storage_class": "cephfs"}


def test_the_cached_download_skips_a_marked_model(tmp_path):
    import subprocess
    import sys

    marker = tmp_path / "complete" / "org--model"
    marker.parent.mkdir()
    marker.touch()
    done = subprocess.run([sys.executable, "-c", llm_objects.CACHED_DOWNLOAD_SCRIPT], capture_output=True, text=True,
                          env={"MODEL_ID": "org/model", "HF_HOME": str(tmp_path)}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "org/model: in the shared cache, nothing to download\n"


# ---------------------------------------------------------------------------------------------------------
# Stacks


def test_the_existing_stack_plans_its_storage():
    stack_plan = planned_stack("existing")
    assert stack_plan.errors == []
    claims = {(m["metadata"]["namespace"], m["metadata"]["name"]): m["spec"] for m in stack_plan.manifests
              if m["kind"] == "PersistentVolumeClaim"}
    assert claims[("research", "research-datasets")] == {
        "accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "2048Gi"}},
        "storageClassName": "cephfs"}
    assert claims[("product", "product-checkpoints")]["resources"] == {"requests": {"storage": "512Gi"}}
    assert claims[("inference", "sentiment-model-cache")]["storageClassName"] == "cephfs"
    assert ("research", tobj.CHECKPOINT_CLAIM) not in claims  # the job checkpoints to the team's claim
    quotas = {m["metadata"]["namespace"]: m["spec"]["hard"]["requests.storage"] for m in stack_plan.manifests
              if m["kind"] == "ResourceQuota"}
    assert quotas == {"research": "4Ti", "product": "1Ti"}
    pre_pulls = sorted(m["metadata"]["name"] for m in stack_plan.manifests if m["kind"] == "DaemonSet"
                       and m["metadata"].get("namespace") == "gpu-storage")
    assert pre_pulls == ["pre-pull-a100-infer", "pre-pull-h100-train"]
    assert not [m for m in stack_plan.manifests if m["kind"] == "PersistentVolume"]  # a class provisions them


STORAGE_KINDS = {"PersistentVolume"}


@pytest.mark.parametrize("stack", sorted(p.name.split(".")[1] for p in (ROOT / "stacks").glob("Pulumi.*.yaml")))
def test_without_the_keys_a_stack_plans_no_storage(stack, tmp_path):
    import yaml

    # The file as written (secure values stay ciphertext), less every storage key: the section, a cloud's own
    # storage keys (storageResourceGroup...) and the teams' quotas.
    document = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    raw = {k: v for k, v in document["config"].items() if not k.startswith("gpu-platform:storage")}
    for team in raw.get("gpu-platform:teams") or []:
        team.pop("storageQuota", None)
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump({**document, "config": raw}))
    stack_plan = plan.plan_stack(stack, path)
    assert not [r for r in stack_plan.recording.registrations if r.type == "gpuplatform:index:DataPlaneStorage"]
    pinned = {url for urls in versions.CSI_DRIVER_MANIFESTS.values() for url in urls}
    assert not [r for r in stack_plan.recording.registrations if r.type == "kubernetes:yaml/v2:ConfigFile"
                and r.inputs["file"] in pinned]
    assert not [m for m in stack_plan.manifests for c in m.get("spec", {}).get("template", {}).get("spec", {}).get(
        "containers", []) for mount in c.get("volumeMounts", []) if "subPath" in mount]
    assert not [m for m in stack_plan.manifests if m["kind"] in STORAGE_KINDS]
    assert not [m for m in stack_plan.manifests if m["kind"] == "ResourceQuota"
                and "requests.storage" in m["spec"]["hard"]]
    assert not [m for m in stack_plan.manifests if m["metadata"].get("namespace") == objects.DEFAULT_NAMESPACE
                or m["metadata"]["name"] == objects.DEFAULT_NAMESPACE or m["metadata"]["name"] == "storage-access"]
    claims = {m["metadata"]["name"] for m in stack_plan.manifests if m["kind"] == "PersistentVolumeClaim"}
    assert not {n for n in claims if n.endswith(("-datasets", "-checkpoints")) and n != tobj.CHECKPOINT_CLAIM}
    for m in stack_plan.manifests:
        if m["kind"] == "PersistentVolumeClaim":
            assert "volumeName" not in m["spec"], m["metadata"]["name"]


def test_an_existing_cluster_offers_its_named_class():
    from gpu_platform.clouds.existing.cluster import storage_backends

    backends = storage_backends(existing_config())
    assert backends == StorageBackends(shared_file_system=SharedFileSystemBackend(
        kind="storage-class", capacity_gib=20480, storage_class="cephfs"))
    # The class is what the team claims name: another class, other claims.
    other = existing_config(shared_file_system=SharedFileSystemConfig(size_gib=20480, storage_class="nfs-rwx"))
    volumes = storage.team_volumes(other, storage_backends(other))
    assert {v["storage_class"] for v in volumes} == {"nfs-rwx"}
    assert storage_backends(existing_config(image_pulls=ImagePullsConfig(pre_pull=True))) == StorageBackends()


# ---------------------------------------------------------------------------------------------------------
# A file system whose driver mounts only its root (GKE Managed Lustre): the workloads keep to their directories

ROOT_ONLY = dataclasses.replace(SHARED, sub_directory_mounts=False)


def mounts_of(recording, name):
    """Every ``volumeMounts`` entry named ``name`` in any container of any registered object."""
    found = []

    def walk(value):
        if isinstance(value, dict):
            if value.get("name") == name and "mountPath" in value:
                found.append(value)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for registration in recording.registrations:
        walk(registration.inputs)
    return found


def test_root_only_mounts_give_the_training_job_its_team_directories():
    config = with_shared()
    assert storage.training_storage(config, StorageBackends(shared_file_system=ROOT_ONLY), "research") == {
        "datasets_claim": "research-datasets", "checkpoint_claim": "research-checkpoints",
        "datasets_sub_path": "teams/research/datasets", "checkpoint_sub_path": "teams/research/checkpoints"}
    assert "datasets_sub_path" not in storage.training_storage(config, StorageBackends(shared_file_system=SHARED),
                                                               "research")
    from gpu_platform.training.workload import TrainingWorkload

    pool = config.gpu_pools()[1]
    args = {"pool": pool.spec(), "namespace": "research", "gpu_quota": 8,
            **storage.training_storage(config, StorageBackends(shared_file_system=ROOT_ONLY), "research")}
    rec = run_program(lambda: TrainingWorkload("t", args))
    datasets, checkpoints = mounts_of(rec, "datasets"), mounts_of(rec, "checkpoints")
    assert datasets and all(m == {"name": "datasets", "mountPath": "/data", "readOnly": True,
                                  "subPath": "teams/research/datasets"} for m in datasets)
    assert checkpoints and all(m == {"name": "checkpoints", "mountPath": "/checkpoints",
                                     "subPath": "teams/research/checkpoints"} for m in checkpoints)
    pod = tobj.pod_template(plan_with(datasets_claim="d", shared_checkpoint_claim="c"), "p")["spec"]
    assert not [m for m in pod["containers"][0]["volumeMounts"] if "subPath" in m]  # subdirectory volumes: none


def test_root_only_mounts_keep_the_model_caches_in_models():
    config = with_shared()
    cache = storage.inference_cache(config, StorageBackends(shared_file_system=ROOT_ONLY))
    assert cache == {"model_cache_size": "20Gi", "model_cache_access_mode": "ReadWriteMany",
                     "model_cache_volume": "inference-sentiment-model-cache", "model_cache_sub_path": "models"}
    rec = run_program(lambda: InferenceService("inf", inference_args(config, config.gpu_pools()[0],
                                                                     model_cache=cache)))
    assert mounts_of(rec, "model-cache") == [{"name": "model-cache", "mountPath": "/model-cache",
                                              "subPath": "models"}]
    config, llm_cache = llm_config_with_shared(ROOT_ONLY)
    assert llm_cache["cache_sub_path"] == "models"
    rec = run_program(lambda: LlmService("llm", llm_args(config, config.gpu_pools()[0], cache=llm_cache)))
    llm_mounts = mounts_of(rec, "model-cache")
    assert len(llm_mounts) == 2  # the download step and the server
    assert all(m == {"name": "model-cache", "mountPath": "/model-cache", "subPath": "models"} for m in llm_mounts)
    _, shared_cache = llm_config_with_shared(SHARED)
    assert "cache_sub_path" not in shared_cache


@pytest.mark.parametrize(("build", "message"), [
    (lambda pool: __import__("gpu_platform.training.workload", fromlist=["x"]).TrainingWorkload(
        "t", {"pool": pool.spec(), "namespace": "r", "gpu_quota": 8, "datasets_sub_path": "teams/r/datasets"}),
     "datasets_sub_path: takes effect only with datasets_claim"),
    (lambda pool: __import__("gpu_platform.training.workload", fromlist=["x"]).TrainingWorkload(
        "t", {"pool": pool.spec(), "namespace": "r", "gpu_quota": 8, "checkpoint_claim": "c",
              "checkpoint_sub_path": "../other"}),
     "checkpoint_sub_path: must be a relative path inside the file system, without '..'"),
    (lambda pool: InferenceService("i", {**inference_args(with_shared(), pool), "model_cache_sub_path": "models"}),
     "model_cache_sub_path: takes effect only with model_cache_size"),
])
def test_sub_paths_are_refused_where_they_mean_nothing(build, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        run_program(lambda: build(with_shared().gpu_pools()[0] if "model_cache" in message
                                  else with_shared().gpu_pools()[1]))


def test_llm_cache_sub_path_needs_the_shared_cache():
    config, _ = llm_config_with_shared(SHARED)
    args = {**llm_args(config, config.gpu_pools()[0]), "cache_sub_path": "models"}
    with pytest.raises(ConfigError, match="cache_sub_path: takes effect only with cache_access_mode ReadWriteMany"):
        LlmService("llm", args)


# ---------------------------------------------------------------------------------------------------------
# A CSI driver applied from pinned manifests (the Azure Lustre driver: no add-on, no released chart)

CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"


def test_a_backend_names_pinned_manifests_and_the_component_applies_them_in_order():
    manifests = dataclasses.replace(SHARED, csi_manifests=CsiDriverManifests("azurelustre-csi-driver"))
    args = storage.storage_args(with_shared(), StorageBackends(shared_file_system=manifests), [])
    assert args["csi_manifests"] == ["azurelustre-csi-driver"]
    assert "csi_manifests" not in storage.storage_args(with_shared(), StorageBackends(shared_file_system=SHARED), [])
    rec = built(args)
    files = {r.inputs["file"]: r for r in rec.of_type(CONFIG_FILE)}
    expected = versions.CSI_DRIVER_MANIFESTS["azurelustre-csi-driver"]
    assert expected == tuple(
        "https://raw.githubusercontent.com/kubernetes-sigs/azurelustre-csi-driver/v0.4.0/deploy/" + f for f in (
            "rbac-csi-azurelustre-controller.yaml", "rbac-csi-azurelustre-node.yaml", "csi-azurelustre-driver.yaml",
            "csi-azurelustre-controller.yaml", "csi-azurelustre-node-jammy.yaml", "csi-azurelustre-node-noble.yaml"))
    assert sorted(files) == sorted(expected)
    assert files[expected[4]].name == "storage-csi-azurelustre-node-jammy"
    for before, after in zip(expected, expected[1:], strict=False):
        assert files[before].urn in files[after].dependencies
    for volume in rec.of_type(PV):  # the node plugin is up before a volume is created for it
        assert files[expected[-1]].urn in volume.dependencies


@pytest.mark.parametrize(("args", "message"), [
    ({"csi_manifests": ["nope"]}, "csi_manifests[0]: no CSI driver manifests 'nope' are pinned "
                                  "(versions.CSI_DRIVER_MANIFESTS has azurelustre-csi-driver)"),
    ({"csi_manifests": ["azurelustre-csi-driver", "azurelustre-csi-driver"]}, "csi_manifests"),
])
def test_unpinned_or_repeated_manifests_are_refused(args, message):
    with pytest.raises(ConfigError) as err:
        storage.checked_args("storage", args)
    assert message in str(err.value)
