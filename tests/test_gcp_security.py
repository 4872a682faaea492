"""GKE secure by default (issue 17): Dataplane V2, Workload Identity with the GKE metadata server on every pool, no
public API endpoint unless ``apiAllowedCidrs`` names who may reach it, and Secrets envelope-encrypted with a Cloud
KMS key the cluster creates. The exact inputs GKE and Cloud KMS would receive, for the stack path and the component."""

import re

import pulumi
import pytest

from gpu_platform import pool_args, testing
from gpu_platform.clouds.gcp import GkeCluster, GkeGpuNodePool, cluster_from_config
from gpu_platform.clouds.gcp import cluster as gke
from gpu_platform.config import parse_config
from gpu_platform.control_plane import ControlPlaneSecurity
from gpu_platform.errors import ConfigError

R = "us-central1"
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
KEY_RING = "gcp:kms/keyRing:KeyRing"
CRYPTO_KEY = "gcp:kms/cryptoKey:CryptoKey"
KEY_MEMBER = "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember"
GKE_AGENT = f"serviceAccount:service-{testing.GCP_PROJECT_NUMBER}@container-engine-robot.iam.gserviceaccount.com"
POOLS = [
    {"name": "infer", "instanceType": "g2-standard-8", "maxNodes": 4, "zones": [f"{R}-a"]},
    {"name": "mega", "instanceType": "a3-megagpu-8g", "rdma": True, "maxNodes": 2, "zones": [f"{R}-c"]},
]


def plan(project="gpu-dev-1", **top) -> testing.Recording:
    """The stack path (`cluster_from_config`) for a GKE stack with the two pools and extra top-level keys."""
    raw = {"cloud": "gcp", "region": R, "nodePools": POOLS, **top}
    if project:
        raw["project"] = project
    config = parse_config(raw, "dev")
    return testing.run_program(lambda: cluster_from_config("dev", config, pulumi.ResourceOptions()), stack="dev")


@pytest.fixture(scope="module")
def default():
    return plan()


@pytest.fixture(scope="module")
def public():
    return plan(apiAllowedCidrs=["203.0.113.0/24", "198.51.100.7/32"])


@pytest.fixture(scope="module")
def unencrypted():
    return plan(secretsEncryption=False)


def cluster_of(recording) -> dict:
    return recording.one(CLUSTER, "dev-cluster").inputs


# ---------------------------------------------------------------------------------------------------------
# Network policy enforcement and Workload Identity


def test_dataplane_v2_enforces_network_policies(default):
    assert cluster_of(default)["datapathProvider"] == "ADVANCED_DATAPATH"


def test_workload_pool_is_the_projects(default):
    assert cluster_of(default)["workloadIdentityConfig"] == {"workloadPool": "gpu-dev-1.svc.id.goog"}


def test_workload_pool_of_the_providers_project():
    recording = plan(project=None)
    assert cluster_of(recording)["workloadIdentityConfig"] == {"workloadPool": "mock-project.svc.id.goog"}


def test_every_pool_uses_the_gke_metadata_server(default):
    pools = {r.name: r.inputs["nodeConfig"]["workloadMetadataConfig"] for r in default.of_type(NODE_POOL)}
    assert pools == {"dev-system": {"mode": "GKE_METADATA"}, "dev-infer-pool": {"mode": "GKE_METADATA"},
                     "dev-mega-pool": {"mode": "GKE_METADATA"}}


def test_a_standalone_pool_uses_the_gke_metadata_server():
    entry = pool_args("gcp", {"name": "solo", "instanceType": "g2-standard-8"})
    recording = testing.run_program(lambda: GkeGpuNodePool("solo", {**entry, "cluster": "c", "location": R}))
    assert recording.one(NODE_POOL).inputs["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}


# ---------------------------------------------------------------------------------------------------------
# Who reaches the API


def test_default_has_no_public_endpoint(default):
    cluster = cluster_of(default)
    assert cluster["privateClusterConfig"] == {"enablePrivateNodes": True, "enablePrivateEndpoint": True}
    assert "masterAuthorizedNetworksConfig" not in cluster
    assert cluster["controlPlaneEndpointsConfig"] == {"dnsEndpointConfig": {"allowExternalTraffic": False}}


def test_allowed_cidrs_open_the_public_endpoint_to_them_only(public):
    cluster = cluster_of(public)
    assert cluster["privateClusterConfig"] == {"enablePrivateNodes": True, "enablePrivateEndpoint": False}
    assert cluster["masterAuthorizedNetworksConfig"] == {
        "cidrBlocks": [{"cidrBlock": "203.0.113.0/24", "displayName": "apiAllowedCidrs[0]"},
                       {"cidrBlock": "198.51.100.7/32", "displayName": "apiAllowedCidrs[1]"}],
        "gcpPublicCidrsAccessEnabled": False,
    }
    assert cluster["controlPlaneEndpointsConfig"] == {"dnsEndpointConfig": {"allowExternalTraffic": False}}


def test_public_nodes_keep_the_endpoint_private():
    cluster = cluster_of(plan(privateNodes=False))
    assert cluster["privateClusterConfig"] == {"enablePrivateNodes": False, "enablePrivateEndpoint": True}


def test_public_nodes_and_a_public_endpoint_leave_the_private_cluster_block_out():
    cluster = cluster_of(plan(privateNodes=False, apiAllowedCidrs=["0.0.0.0/0"]))
    assert "privateClusterConfig" not in cluster
    assert cluster["masterAuthorizedNetworksConfig"]["cidrBlocks"] == [
        {"cidrBlock": "0.0.0.0/0", "displayName": "apiAllowedCidrs[0]"}]


@pytest.mark.parametrize(("private_nodes", "public_endpoint", "expected"), [
    (True, False, {"enable_private_nodes": True, "enable_private_endpoint": True}),
    (True, True, {"enable_private_nodes": True, "enable_private_endpoint": False}),
    (False, False, {"enable_private_nodes": False, "enable_private_endpoint": True}),
    (False, True, None),
])
def test_private_cluster_config(private_nodes, public_endpoint, expected):
    assert gke.private_cluster_config(private_nodes, public_endpoint) == expected


def test_no_authorized_networks_without_a_public_endpoint():
    assert gke.master_authorized_networks([]) is None


# ---------------------------------------------------------------------------------------------------------
# Application-layer Secrets encryption


def test_key_ring_and_key_in_the_clusters_region(default):
    ring = default.one(KEY_RING, "dev-secrets")
    assert ring.inputs == {"project": "gpu-dev-1", "location": R}  # auto-named: rings cannot be deleted
    key = default.one(CRYPTO_KEY, "dev-secrets-key")
    assert key.inputs == {"keyRing": "dev-secrets-id", "purpose": "ENCRYPT_DECRYPT", "rotationPeriod": "7776000s"}


def test_a_zonal_clusters_key_is_in_its_region():
    recording = plan(zone=f"{R}-a")
    assert cluster_of(recording)["location"] == f"{R}-a"
    assert recording.one(KEY_RING).inputs["location"] == R


def test_cluster_encrypts_secrets_with_the_key(default):
    assert cluster_of(default)["databaseEncryption"] == {"state": "ENCRYPTED", "keyName": "dev-secrets-key-id"}


def test_gke_service_agent_may_use_the_key(default):
    member = default.one(KEY_MEMBER, "dev-secrets-key-gke")
    assert member.inputs == {"cryptoKeyId": "dev-secrets-key-id", "role": "roles/cloudkms.cryptoKeyEncrypterDecrypter",
                             "member": GKE_AGENT}


def test_cluster_waits_for_the_key_grant(default):
    assert default.one(KEY_MEMBER).urn in default.one(CLUSTER).dependencies


def test_kms_resources_are_children_of_the_cluster_component(default):
    component = default.one("gpuplatform:index:GkeCluster", "dev")
    assert {r.parent for r in (*default.of_type(KEY_RING), *default.of_type(CRYPTO_KEY),
                               *default.of_type(KEY_MEMBER))} == {component.urn}


def test_opting_out_creates_no_key_and_decrypts(unencrypted):
    assert unencrypted.of_type(KEY_RING) == unencrypted.of_type(CRYPTO_KEY) == unencrypted.of_type(KEY_MEMBER) == []
    assert cluster_of(unencrypted)["databaseEncryption"] == {"state": "DECRYPTED"}


def test_gke_service_agent():
    assert gke.gke_service_agent("42") == "serviceAccount:service-42@container-engine-robot.iam.gserviceaccount.com"


# ---------------------------------------------------------------------------------------------------------
# Stack keys and component args take effect


@pytest.mark.parametrize(("recording", "path", "expected"), [
    ("public", "privateClusterConfig.enablePrivateEndpoint", False),
    ("public", "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled", False),
    ("unencrypted", "databaseEncryption.state", "DECRYPTED"),
])
def test_stack_key_takes_effect(request, default, recording, path, expected):
    def at(inputs):
        for key in path.split("."):
            inputs = (inputs or {}).get(key)
        return inputs

    assert at(cluster_of(default)) != expected
    assert at(cluster_of(request.getfixturevalue(recording))) == expected


def test_component_args_take_effect():
    def cluster(**args):
        rec = testing.run_program(lambda: GkeCluster("dev", {"region": R, "project": "gpu-dev-1", **args}))
        return rec, rec.one(CLUSTER).inputs

    rec, opened = cluster(api_allowed_cidrs=["203.0.113.0/24"], secrets_encryption=False)
    assert opened["privateClusterConfig"]["enablePrivateEndpoint"] is False
    assert opened["masterAuthorizedNetworksConfig"]["cidrBlocks"] == [
        {"cidrBlock": "203.0.113.0/24", "displayName": "apiAllowedCidrs[0]"}]
    assert opened["databaseEncryption"] == {"state": "DECRYPTED"} and rec.of_type(CRYPTO_KEY) == []
    rec, closed = cluster()
    assert closed["privateClusterConfig"]["enablePrivateEndpoint"] is True
    assert closed["databaseEncryption"]["state"] == "ENCRYPTED" and len(rec.of_type(CRYPTO_KEY)) == 1


# ---------------------------------------------------------------------------------------------------------
# Bad input: one line naming the field, before anything is registered

MISUSE = [
    ({"api_allowed_cidrs": ["203.0.113.1/24"]},
     "GkeCluster dev: api_allowed_cidrs[0]: '203.0.113.1/24' is not an IPv4 CIDR block such as 203.0.113.0/24 "
     "(203.0.113.1/24 has host bits set)"),
    ({"api_allowed_cidrs": ["10.0.0.0/8", "office"]},
     "GkeCluster dev: api_allowed_cidrs[1]: 'office' is not an IPv4 CIDR block such as 203.0.113.0/24 "
     "(Expected 4 octets in 'office')"),
    ({"api_allowed_cidrs": ["10.0.0.0/8", "10.0.0.0/8"]}, "GkeCluster dev: api_allowed_cidrs: lists a CIDR twice"),
    ({"api_allowed_cidrs": "203.0.113.0/24"},
     "GkeCluster dev: api_allowed_cidrs: must be a list, got '203.0.113.0/24'"),
    ({"secrets_encryption": "yes"}, "GkeCluster dev: secrets_encryption: must be true or false, got 'yes'"),
]


@pytest.mark.parametrize(("args", "error"), MISUSE, ids=[m[1].split(": ")[1] for m in MISUSE])
def test_component_misuse_is_refused(args, error):
    with pytest.raises(ConfigError, match=f"^{re.escape(error)}$"):
        GkeCluster("dev", {"region": R, **args})


def test_a_refused_cidr_registers_nothing():
    def program():
        with pytest.raises(ConfigError):
            GkeCluster("dev", {"region": R, "api_allowed_cidrs": ["203.0.113.1/24"]})

    assert list(testing.run_program(program)) == []


def test_stack_misuse_names_the_key():
    raw = {"cloud": "gcp", "region": R, "nodePools": POOLS[:1], "apiAllowedCidrs": ["203.0.113.0/33"]}
    with pytest.raises(ConfigError, match=r"^dev: apiAllowedCidrs\[0\]: '203\.0\.113\.0/33' is not an IPv4 CIDR"):
        parse_config(raw, "dev")


def test_stack_keys_parse_into_the_cluster_options():
    raw = {"cloud": "gcp", "region": R, "nodePools": POOLS[:1]}
    assert parse_config(raw, "dev").cluster_options.control_plane == ControlPlaneSecurity((), True)
    options = parse_config({**raw, "apiAllowedCidrs": ["203.0.113.0/24"], "secretsEncryption": False}, "dev")
    assert options.cluster_options.control_plane == ControlPlaneSecurity(("203.0.113.0/24",), False)


def test_stack_secrets_encryption_must_be_a_bool():
    raw = {"cloud": "gcp", "region": R, "nodePools": POOLS[:1], "secretsEncryption": "yes"}
    with pytest.raises(ConfigError, match=r"^dev: secretsEncryption: "):
        parse_config(raw, "dev")
