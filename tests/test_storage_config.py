"""Issue 23: the ``storage`` section and ``teams[].storageQuota`` as parsed: values, defaults, the cloud's own
``check_storage`` hook, and one-line errors that name the field."""

import types

import pytest

from gpu_platform import clouds as clouds_module
from gpu_platform import config as config_module
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.storage import storage_config as sc


def existing_raw(**extra) -> dict:
    """A small existing-cluster stack (no cloud rules beyond the generic ones)."""
    raw = {"cloud": "existing", "networkPolicyEnforced": True,
           "nodePools": [{"name": "gpu", "gpuModel": "h100", "gpusPerNode": 8, "nodes": ["n1"]}],
           "teams": [{"name": "research", "gpuQuota": 8}]}
    raw.update(extra)
    return raw


@pytest.fixture
def no_cloud_rules(monkeypatch):
    """Clouds' ``check_storage`` hooks out of the way: the generic rules alone (the clouds test their own)."""
    real = clouds_module.options_module

    def options(cloud: str):
        module = real(cloud)
        return types.SimpleNamespace(**{k: v for k, v in vars(module).items() if k != "check_storage"})

    monkeypatch.setattr(clouds_module, "options_module", options)


def parse(section: dict, cloud: str = "aws") -> sc.StorageConfig:
    return sc.parse_storage({"storage": section}, cloud)


def error(section: dict, cloud: str = "aws") -> str:
    with pytest.raises(ConfigError) as err:
        parse(section, cloud)
    text = str(err.value)
    assert "\n" not in text
    return text


def test_without_the_section_nothing_is_enabled():
    storage = sc.parse_storage({}, "aws")
    assert storage == sc.StorageConfig()
    assert not storage.enabled
    assert parse_config(existing_raw(), "s").storage == sc.StorageConfig()


def test_every_key_is_read(no_cloud_rules):
    storage = parse({
        "sharedFileSystem": {"sizeGiB": 4800, "throughputPerTiB": 500},
        "buckets": [{"name": "imagenet", "bucket": "acme-imagenet"},
                    {"name": "ckpt", "bucket": "acme-ckpt", "readOnly": False, "profile": "checkpoint"}],
        "imagePulls": {"streaming": True, "prePull": True, "images": ["nvcr.io/nvidia/pytorch:26.06-py3"]},
    })
    assert storage.shared_file_system == sc.SharedFileSystemConfig(size_gib=4800, throughput_per_tib=500)
    assert storage.buckets == (
        sc.BucketConfig(name="imagenet", bucket="acme-imagenet", read_only=True, profile="training"),
        sc.BucketConfig(name="ckpt", bucket="acme-ckpt", read_only=False, profile="checkpoint"))
    assert storage.image_pulls == sc.ImagePullsConfig(streaming=True, pre_pull=True,
                                                      images=("nvcr.io/nvidia/pytorch:26.06-py3",))
    assert storage.enabled


def test_the_clouds_hook_sees_the_parsed_section_and_its_raw_keys(monkeypatch):
    seen = []
    real = clouds_module.options_module

    def options(cloud: str):
        module = types.SimpleNamespace(**vars(real(cloud)))
        module.check_storage = lambda storage, raw: seen.append((storage, dict(raw)))
        return module

    monkeypatch.setattr(clouds_module, "options_module", options)
    section = {"sharedFileSystem": {"sizeGiB": 2400}}
    storage = parse(section)
    assert seen == [(storage, section)]
    seen.clear()
    parse({})  # nothing configured: nothing for the cloud to check
    assert seen == []


def test_the_clouds_hook_refuses_with_its_own_line(monkeypatch):
    real = clouds_module.options_module

    def refuse(storage, raw):
        raise ConfigError("storage.sharedFileSystem.sizeGiB", "must be a multiple of 2400")

    monkeypatch.setattr(clouds_module, "options_module",
                        lambda cloud: types.SimpleNamespace(**{**vars(real(cloud)), "check_storage": refuse}))
    assert error({"sharedFileSystem": {"sizeGiB": 1000}}) == (
        "storage.sharedFileSystem.sizeGiB: must be a multiple of 2400")


@pytest.mark.parametrize(("section", "cloud", "message"), [
    ({"sharedFileSystems": {}}, "aws", "storage.sharedFileSystems: unknown key; did you mean 'sharedFileSystem'?"),
    ({"sharedFileSystem": {}}, "aws", "storage.sharedFileSystem.sizeGiB: is required"),
    ({"sharedFileSystem": {"sizeGiB": 0}}, "aws", "storage.sharedFileSystem.sizeGiB: must be >= 1, got 0"),
    ({"sharedFileSystem": {"sizeGiB": 1200, "throughputPerTiB": 300}}, "aws",
     "storage.sharedFileSystem.throughputPerTiB: '300' is not one of 125, 250, 500, 1000; did you mean '500'?"),
    ({"sharedFileSystem": {"sizeGiB": 1200, "storageClass": "efs"}}, "aws",
     "storage.sharedFileSystem.storageClass: is for existing clusters; on aws the platform creates the cloud's "
     "parallel file system"),
    ({"sharedFileSystem": {"sizeGiB": 1200}}, "existing",
     "storage.sharedFileSystem.storageClass: is required on an existing cluster: the ReadWriteMany StorageClass the "
     "team and model-cache claims use"),
    ({"sharedFileSystem": {"sizeGiB": 1200, "storageClass": "Ceph_FS"}}, "existing",
     "storage.sharedFileSystem.storageClass: 'Ceph_FS' is not a StorageClass name"),
    ({"sharedFileSystem": {"sizeGiB": 1200, "storageClass": "cephfs", "throughputPerTiB": 250}}, "existing",
     "storage.sharedFileSystem.throughputPerTiB: cannot be honoured on an existing cluster: the StorageClass "
     "decides the throughput"),
    ({"buckets": [{"name": "data", "bucket": "b-123"}]}, "existing",
     "storage.buckets: cannot be honoured on an existing cluster: the platform grants bucket access through a "
     "cloud's workload identity, which it has none of here (mount buckets with your own CSI driver and claims)"),
    ({"buckets": [{"bucket": "acme"}]}, "aws", "storage.buckets[0].name: is required"),
    ({"buckets": [{"name": "Data", "bucket": "acme"}]}, "aws",
     "storage.buckets[0].name: 'Data' is not a DNS label (the claim's name in each namespace)"),
    ({"buckets": [{"name": "data"}]}, "aws", "storage.buckets[0].bucket: is required"),
    ({"buckets": [{"name": "a", "bucket": "acme"}, {"name": "a", "bucket": "acme-2"}]}, "aws",
     "storage.buckets[1].name: duplicate bucket name 'a' (also storage.buckets[0])"),
    ({"buckets": [{"name": "a", "bucket": "acme", "profile": "inference"}]}, "aws",
     "storage.buckets[0].profile: 'inference' is not one of training, checkpoint, serving"),
    ({"buckets": [{"name": "a", "bucket": "acme", "storageAccount": "acme"}]}, "gcp",
     "storage.buckets[0].storageAccount: names an Azure storage account; only azure stacks take it"),
    ({"buckets": [{"name": "a", "bucket": "acme", "storageAccount": "Acme-Data"}]}, "azure",
     "storage.buckets[0].storageAccount: 'Acme-Data' is not a storage account name (3-24 lower-case letters and "
     "digits)"),
    ({"imagePulls": {"images": ["nvcr.io/nvidia/pytorch:26.06-py3"]}}, "aws",
     "storage.imagePulls.images: takes effect only with prePull: true"),
    ({"imagePulls": {"prePull": True, "images": ["NVCR.io/Nvidia/PyTorch"]}}, "aws",
     "storage.imagePulls.images[0]: 'NVCR.io/Nvidia/PyTorch' is not an image reference such as "
     "nvcr.io/nvidia/pytorch:26.06-py3"),
    ({"imagePulls": {"prePull": True, "images": ["a/b:1", "a/b:1"]}}, "aws",
     "storage.imagePulls.images: lists an image twice"),
    ({"imagePulls": {"streaming": True}}, "existing",
     "storage.imagePulls.streaming: turns on a cloud's image-pull acceleration; an existing cluster's nodes are "
     "configured outside the platform (use prePull)"),
])
def test_errors_name_the_field(no_cloud_rules, section, cloud, message):
    assert error(section, cloud) == message


@pytest.mark.parametrize(("cloud", "good", "bad"), [
    ("aws", ["acme-data", "acme.data.v2", "abc"], ["ab", "Acme", "acme..data", "192.168.5.4", "xn--acme",
                                                   "acme-s3alias", "-acme", "a" * 64]),
    ("gcp", ["acme_data", "acme-data", "acme.example.com"], ["ab", "Acme", "goog-data", "acme_"]),
    ("azure", ["acme-data", "abc"], ["acme--data", "Acme", "acme_data", "ab"]),
    ("oci", ["Acme_Data.v2", "a"], ["acme data", "acme/data"]),
])
def test_bucket_names_follow_the_clouds_rules(no_cloud_rules, cloud, good, bad):
    account = {"storageAccount": "acmedata"} if cloud == "azure" else {}
    for name in good:
        assert parse({"buckets": [{"name": "b", "bucket": name, **account}]}, cloud).buckets[0].bucket == name
    for name in bad:
        assert error({"buckets": [{"name": "b", "bucket": name, **account}]}, cloud).startswith(
            f"storage.buckets[0].bucket: '{name}' is not ")


def test_a_bucket_claim_cannot_take_a_team_claims_name(no_cloud_rules):
    raw = {"teams": [{"name": "research"}], "storage": {"buckets": [{"name": "research-datasets",
                                                                       "bucket": "acme"}]}}
    with pytest.raises(ConfigError, match=r"^storage\.buckets\[0\]\.name: 'research-datasets' is team 'research''s "
                                          r"datasets claim$"):
        sc.parse_storage(raw, "aws")


def test_storage_quota_is_read_in_gib():
    assert sc.parse_storage_quota("2Ti", "q") == 2048
    assert sc.parse_storage_quota("500Gi", "q") == 500
    assert sc.parse_storage_quota(None, "q") is None
    config = parse_config(existing_raw(teams=[{"name": "research", "gpuQuota": 8, "storageQuota": "2Ti"}]), "s")
    assert config.teams[0].storage_quota == "2Ti"
    assert parse_config(existing_raw(), "s").teams[0].storage_quota is None


@pytest.mark.parametrize("value", ["2TB", "1.5Ti", "0Gi", "100Mi", "lots"])
def test_storage_quota_errors(value):
    raw = existing_raw(teams=[{"name": "research", "gpuQuota": 8, "storageQuota": value}])
    with pytest.raises(ConfigError, match=rf"^s: teams\[0\]\.storageQuota: '{value}' is not a storage quantity in "
                                          r"whole Gi or Ti such as 500Gi or 2Ti$"):
        parse_config(raw, "s")


def test_a_quota_smaller_than_the_training_checkpoint_claim_is_refused():
    raw = existing_raw(teams=[{"name": "research", "gpuQuota": 8, "storageQuota": "50Gi"}])
    with pytest.raises(ConfigError, match=r"^s: teams\[0\]\.storageQuota: 50Gi cannot hold the reference training "
                                          r"job's checkpoint claim \(100Gi\): 100Gi at least$"):
        parse_config(raw, "s")
    raw["training"] = {"checkpointSize": "40Gi"}
    assert parse_config(raw, "s").teams[0].storage_quota == "50Gi"


def test_a_quota_must_hold_the_team_claims_on_the_shared_file_system():
    raw = existing_raw(teams=[{"name": "research", "gpuQuota": 8, "storageQuota": "1Gi"}],
                       storage={"sharedFileSystem": {"sizeGiB": 1000, "storageClass": "cephfs"}})
    with pytest.raises(ConfigError, match=r"^s: teams\[0\]\.storageQuota: 1Gi cannot hold its datasets and checkpoints "
                                          r"claims \(1Gi at least each\): 2Gi at least$"):
        parse_config(raw, "s")


def test_team_claims_split_the_quota_or_share_the_file_system():
    storage = sc.StorageConfig(shared_file_system=sc.SharedFileSystemConfig(size_gib=12000))
    assert sc.team_claim_gib(storage, 4096, team_count=3) == 2048
    assert sc.team_claim_gib(storage, None, team_count=3) == 2000
    with_buckets = sc.StorageConfig(shared_file_system=storage.shared_file_system,
                                    buckets=(sc.BucketConfig("a", "acme"), sc.BucketConfig("b", "acme-2")))
    assert sc.team_claim_gib(with_buckets, 4096, team_count=3) == 2047  # (4096 - 2 bucket claims of 1Gi) / 2


def test_the_existing_reference_stack_configures_storage():
    from pathlib import Path

    from gpu_platform import plan

    raw = config_module.strip_namespace(plan.load_stack_file(
        Path(__file__).resolve().parent.parent / "stacks" / "Pulumi.existing.yaml"))
    config = parse_config(raw, "existing")
    assert config.storage.shared_file_system == sc.SharedFileSystemConfig(size_gib=20480, storage_class="cephfs")
    assert config.storage.image_pulls.pre_pull
    assert [(t.name, t.storage_quota) for t in config.teams] == [("research", "4Ti"), ("product", "1Ti")]
