"""OKE secure by default (issue 17): a private API endpoint unless ``apiAllowedCidrs`` names who may reach it,
Secrets envelope-encrypted with the stack's own Vault key, node pool access through workload identity only, and a
NetworkPolicy engine (Calico, policy-only) beside the VCN-native CNI. Exact inputs the providers would receive."""

import pulumi
import pytest
from conftest import planned_stack

from gpu_platform import schemas, testing, versions
from gpu_platform.clouds.oci import OkeCluster, OkeClusterAutoscaler, cluster_from_config
from gpu_platform.clouds.oci import network as oci_network
from gpu_platform.clouds.oci.autoscaler import oke_autoscaler_from_config, policy_statements
from gpu_platform.clouds.oci.cluster import kubeconfig_endpoint, network_policy_engine_args
from gpu_platform.clouds.oci.iam import secrets_key_statement
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.pool_builder import gpu_pool
from gpu_platform.security.network_policy_engine import CalicoPolicyEngine, calico_objects, felix_env
from gpu_platform.testing import run_program

COMPARTMENT = "ocid1.compartment.oc1..aaaaaaaaexamplecompartment"
CLUSTER = "oci:ContainerEngine/cluster:Cluster"
SECURITY_LIST = "oci:Core/securityList:SecurityList"
VAULT, KEY, POLICY = "oci:Kms/vault:Vault", "oci:Kms/key:Key", "oci:Identity/policy:Policy"
NSG, NSG_RULE = "oci:Core/networkSecurityGroup:NetworkSecurityGroup", \
    "oci:Core/networkSecurityGroupSecurityRule:NetworkSecurityGroupSecurityRule"
KUBECONFIG_CALL = "oci:ContainerEngine/getClusterKubeConfig:getClusterKubeConfig"
A10 = {"name": "a10", "instanceType": "VM.GPU.A10.1", "minNodes": 1, "maxNodes": 3}
EXISTING_VCN = {"vcnId": "ocid1.vcn.oc1.iad.aaaaaaaavcn", "endpointSubnetId": "ocid1.subnet.oc1.iad.aaaaaaaaapi",
                "workerSubnetId": "ocid1.subnet.oc1.iad.aaaaaaaaworkers",
                "podSubnetId": "ocid1.subnet.oc1.iad.aaaaaaaapods",
                "loadBalancerSubnetId": "ocid1.subnet.oc1.iad.aaaaaaaalb"}


def management_endpoint(vault: str) -> str:
    return f"https://{vault}-management.kms.us-ashburn-1.oraclecloud.com"


@pytest.fixture(autouse=True)
def oci_mocks(monkeypatch):
    """Kubeconfig calls are kept (vaults answer with their endpoints from `testing.OUTPUTS`)."""
    calls: list[dict] = []
    answer = testing.CALLS[KUBECONFIG_CALL]

    def kubeconfig(args: dict) -> dict:
        calls.append(args)
        return answer(args)

    monkeypatch.setitem(testing.CALLS, KUBECONFIG_CALL, kubeconfig)
    return calls


def run_stack(**top):
    """`cluster_from_config` of a one-pool OCI stack with these top-level keys; (recording, handle)."""
    config = parse_config({"cloud": "oci", "region": "us-ashburn-1", "compartmentId": COMPARTMENT,
                           "nodePools": [dict(A10)], **top}, "oke")
    seen = {}

    def program():
        seen["handle"] = cluster_from_config("oke", config, pulumi.ResourceOptions())

    return run_program(program, stack="oke"), seen["handle"]


def endpoint_ingress(rec) -> list[dict]:
    return rec.one(SECURITY_LIST, "oke-network-endpoint-rules").inputs["ingressSecurityRules"]


# ---------------------------------------------------------------------------------------------------------
# The API endpoint


def test_default_endpoint_has_no_public_ip_no_internet_rule_and_a_private_kubeconfig(oci_mocks):
    rec, _ = run_stack()
    assert rec.one(CLUSTER).inputs["endpointConfig"] == {
        "subnetId": "ocid1.subnet.oc1.iad.oke-network-endpoint", "isPublicIpEnabled": False}
    # Only the VCN's own worker and pod subnets reach the API server.
    assert sorted({r["source"] for r in endpoint_ingress(rec)}) == ["10.0.16.0/20", "10.0.64.0/18"]
    endpoint = rec.one("oci:Core/subnet:Subnet", "oke-network-endpoint").inputs
    assert endpoint["routeTableId"] == "ocid1.routetable.oc1.iad.oke-network-private"
    assert [c["endpoint"] for c in oci_mocks] == ["PRIVATE_ENDPOINT"]


def test_allowed_cidrs_give_a_public_ip_and_6443_from_them_only(oci_mocks):
    rec, _ = run_stack(apiAllowedCidrs=["203.0.113.0/24"])
    assert rec.one(CLUSTER).inputs["endpointConfig"] == {
        "subnetId": "ocid1.subnet.oc1.iad.oke-network-endpoint", "isPublicIpEnabled": True}
    external = [r for r in endpoint_ingress(rec) if r["source"] not in ("10.0.16.0/20", "10.0.64.0/18")]
    assert external == [{"protocol": "6", "source": "203.0.113.0/24", "sourceType": "CIDR_BLOCK", "stateless": False,
                         "description": "Clients (kubectl, Pulumi) to the Kubernetes API",
                         "tcpOptions": {"min": 6443, "max": 6443}}]
    endpoint = rec.one("oci:Core/subnet:Subnet", "oke-network-endpoint").inputs
    assert endpoint["routeTableId"] == "ocid1.routetable.oc1.iad.oke-network-public"
    # The subnet may hold a public IP either way: opening or closing the endpoint never replaces it.
    assert endpoint["prohibitPublicIpOnVnic"] is False
    assert [c["endpoint"] for c in oci_mocks] == ["PUBLIC_ENDPOINT"]
    assert rec.of_type(NSG) == []


def test_existing_vcn_gets_a_network_security_group_for_the_allowed_cidrs_only():
    rec, _ = run_stack(apiAllowedCidrs=["203.0.113.0/24", "198.51.100.0/24"], **EXISTING_VCN)
    nsg = rec.one(NSG, "oke-api-clients")
    assert nsg.inputs == {"compartmentId": COMPARTMENT, "vcnId": EXISTING_VCN["vcnId"],
                          "displayName": "oke-api-clients"}
    rules = sorted(rec.of_type(NSG_RULE), key=lambda r: r.name)
    assert [r.inputs for r in rules] == [
        {"networkSecurityGroupId": "ocid1.networksecuritygroup.oc1.iad.oke-api-clients", "direction": "INGRESS",
         "protocol": "6", "source": cidr, "sourceType": "CIDR_BLOCK", "stateless": False,
         "description": "Clients (kubectl, Pulumi) to the Kubernetes API",
         "tcpOptions": {"destinationPortRange": {"min": 6443, "max": 6443}}}
        for cidr in ("203.0.113.0/24", "198.51.100.0/24")]
    cluster = rec.one(CLUSTER)
    assert cluster.inputs["endpointConfig"] == {
        "subnetId": EXISTING_VCN["endpointSubnetId"], "isPublicIpEnabled": True,
        "nsgIds": ["ocid1.networksecuritygroup.oc1.iad.oke-api-clients"]}
    assert {r.urn for r in rules} <= set(cluster.dependencies)


def test_existing_vcn_without_allowed_cidrs_stays_private_and_creates_no_network_resource():
    rec, _ = run_stack(**EXISTING_VCN)
    assert rec.one(CLUSTER).inputs["endpointConfig"] == {"subnetId": EXISTING_VCN["endpointSubnetId"],
                                                         "isPublicIpEnabled": False}
    assert [r.type for r in rec if r.type.startswith("oci:Core/")] == []


def test_kubeconfig_targets_the_endpoint_that_exists():
    assert (kubeconfig_endpoint(False), kubeconfig_endpoint(True)) == ("PRIVATE_ENDPOINT", "PUBLIC_ENDPOINT")


def test_nsg_rule_args_are_pulumi_oci_argument_names():
    import pulumi_oci as oci

    for rule in oci_network.api_client_rules(("203.0.113.0/24",)):
        oci.core.NetworkSecurityGroupSecurityRuleArgs(network_security_group_id="ocid1.nsg",
                                                      **oci_network.nsg_rule_args(rule))


# ---------------------------------------------------------------------------------------------------------
# Secrets encryption


def test_secrets_are_encrypted_with_an_hsm_aes256_key_only_oke_clusters_may_use():
    rec, handle = run_stack()
    vault = rec.one(VAULT, "oke-vault")
    assert vault.inputs == {"compartmentId": COMPARTMENT, "displayName": "oke-secrets", "vaultType": "DEFAULT"}
    key = rec.one(KEY, "oke-secrets-key")
    assert key.inputs == {"compartmentId": COMPARTMENT, "displayName": "oke-secrets",
                          "keyShape": {"algorithm": "AES", "length": 32}, "protectionMode": "HSM",
                          "managementEndpoint": management_endpoint("oke-vault")}
    policy = rec.one(POLICY, "oke-secrets-key-policy")
    assert policy.inputs["compartmentId"] == COMPARTMENT
    assert policy.inputs["statements"] == [
        f"Allow any-user to use keys in compartment id {COMPARTMENT} where ALL "
        "{request.principal.type = 'cluster', target.key.id = 'ocid1.key.oc1.iad.oke-secrets-key'}"]
    cluster = rec.one(CLUSTER)
    assert cluster.inputs["kmsKeyId"] == "ocid1.key.oc1.iad.oke-secrets-key"
    assert policy.urn in cluster.dependencies  # OKE checks the grant when it creates the cluster
    assert handle.outputs["secrets_key_id"] is not None


def test_secrets_encryption_false_creates_no_vault_key_or_policy():
    rec, _ = run_stack(secretsEncryption=False)
    assert rec.of_type(VAULT) == rec.of_type(KEY) == rec.of_type(POLICY) == []
    assert "kmsKeyId" not in rec.one(CLUSTER).inputs


def test_secrets_key_statement_is_oracles_documented_grant():
    assert secrets_key_statement("ocid1.compartment.oc1..c", "ocid1.key.oc1.iad.k") == (
        "Allow any-user to use keys in compartment id ocid1.compartment.oc1..c where ALL "
        "{request.principal.type = 'cluster', target.key.id = 'ocid1.key.oc1.iad.k'}")


def test_statements_in_the_root_compartment_say_tenancy():
    # `compartmentId` may be the tenancy OCID; the policy language calls the root compartment `tenancy`.
    assert secrets_key_statement("ocid1.tenancy.oc1..t", "k").startswith("Allow any-user to use keys in tenancy where")
    assert policy_statements("ocid1.tenancy.oc1..t", "c")[0].startswith(
        "Allow any-user to manage cluster-node-pools in tenancy where ALL")


# ---------------------------------------------------------------------------------------------------------
# Component arguments


def _refused(program, monkeypatch) -> str:
    """The one-line error of ``program``, checking that no resource of ours was registered before it."""
    registered: list[str] = []
    init = pulumi.ComponentResource.__init__

    def recording_init(self, t, name, *args, **kwargs):
        if t.startswith("gpuplatform:"):
            registered.append(name)
        init(self, t, name, *args, **kwargs)

    monkeypatch.setattr(pulumi.ComponentResource, "__init__", recording_init)
    with pytest.raises(ConfigError) as err:
        run_program(program)
    assert registered == []
    return str(err.value)


def test_bad_allowed_cidr_is_refused_with_its_index(monkeypatch):
    line = _refused(lambda: OkeCluster("edge", {"compartment_id": COMPARTMENT,
                                               "api_allowed_cidrs": ["203.0.113.0/24", "10.0.0.1/8"]}), monkeypatch)
    assert line == ("OkeCluster edge: api_allowed_cidrs[1]: '10.0.0.1/8' is not an IPv4 CIDR block such as "
                    "203.0.113.0/24 (10.0.0.1/8 has host bits set)")


def test_first_round_public_endpoint_argument_names_its_replacement(monkeypatch):
    line = _refused(lambda: OkeCluster("edge", {"compartment_id": COMPARTMENT, "public_endpoint": True}),
                    monkeypatch)
    assert line == ("OkeCluster edge: public_endpoint: was replaced by api_allowed_cidrs (empty: private endpoint "
                    "only; a list of CIDRs: a public endpoint open to those CIDRs only)")


def test_first_round_public_endpoint_stack_key_is_refused():
    with pytest.raises(ConfigError, match=r"^s: publicEndpoint: "):
        parse_config({"cloud": "oci", "region": "us-ashburn-1", "compartmentId": COMPARTMENT,
                      "nodePools": [dict(A10)], "publicEndpoint": True}, "s")


@pytest.mark.parametrize(("args", "path", "expected"), [
    ({}, ("endpointConfig", "isPublicIpEnabled"), False),
    ({"api_allowed_cidrs": ["192.0.2.0/24"]}, ("endpointConfig", "isPublicIpEnabled"), True),
    ({"secrets_encryption": False}, ("kmsKeyId",), None),
    ({}, ("kmsKeyId",), "ocid1.key.oc1.iad.edge-secrets-key"),
])
def test_every_control_plane_argument_reaches_the_cluster(args, path, expected):
    inputs = run_program(lambda: OkeCluster("edge", {"compartment_id": COMPARTMENT, **args})).one(CLUSTER).inputs
    for key in path:
        inputs = inputs.get(key) if isinstance(inputs, dict) else None
    assert inputs == expected


# ---------------------------------------------------------------------------------------------------------
# Node pool access: workload identity, no instance principals


def test_autoscaler_uses_workload_identity_with_oracles_six_compartment_scoped_statements():
    config = parse_config({"cloud": "oci", "region": "us-ashburn-1", "compartmentId": COMPARTMENT,
                           "nodePools": [dict(A10)]}, "oke")

    def program():
        handle = cluster_from_config("oke", config, pulumi.ResourceOptions())
        oke_autoscaler_from_config("oke", config, handle, pulumi.ResourceOptions())

    rec = run_program(program, stack="oke")
    principal = ("{request.principal.type='workload', request.principal.namespace='kube-system', "
                 "request.principal.service_account='cluster-autoscaler', "
                 "request.principal.cluster_id='ocid1.cluster.oc1.iad.oke-oke'}")
    assert rec.one(POLICY, "oke-cluster-autoscaler-policy").inputs["statements"] == [
        f"Allow any-user to {permission} in compartment id {COMPARTMENT} where ALL {principal}"
        for permission in ("manage cluster-node-pools", "manage instance-family", "use subnets",
                           "read virtual-network-family", "use vnics", "inspect compartments")]
    settings = {c["key"]: c["value"] for c in rec.one("oci:ContainerEngine/addon:Addon").inputs["configurations"]}
    assert settings["authType"] == "workload"
    # Nothing grants node instances (instance principals) anything.
    assert [r for r in rec if r.type == "oci:Identity/dynamicGroup:DynamicGroup"] == []
    assert all("dynamic-group" not in s for p in rec.of_type(POLICY) for s in p.inputs["statements"])


def test_reference_oci_stack_plans_allow_listed_encrypted_and_without_instance_principals():
    result = planned_stack("oci-dev")
    assert result.errors == []
    cluster = result.recording.one(CLUSTER).inputs
    # The stack lists one example range: a public IP, reachable on 6443 from that range only.
    assert cluster["endpointConfig"]["isPublicIpEnabled"] is True
    api_rules = [rule for sl in result.recording.of_type("oci:Core/securityList:SecurityList")
                 for rule in sl.inputs.get("ingressSecurityRules", []) if rule.get("tcpOptions", {}).get("min") == 6443]
    # Besides the VCN's own worker and pod subnets, only the listed range.
    assert {rule["source"] for rule in api_rules if not rule["source"].startswith("10.20.")} == {"203.0.113.0/24"}
    assert cluster["kmsKeyId"] == "ocid1.key.oc1.iad.oci-dev-secrets-key"
    assert result.recording.of_type("oci:Identity/dynamicGroup:DynamicGroup") == []
    # The Key is created against the vault's management endpoint (a mock that answers like KMS).
    assert result.recording.one(KEY).inputs["managementEndpoint"] == management_endpoint("oci-dev-vault")
    # The platform installs the NetworkPolicy engine the OKE cluster asks for, first of its Kubernetes layers.
    engine = result.recording.one("gpuplatform:index:CalicoPolicyEngine", "oci-dev-network-policy")
    assert engine.parent_name == "oci-dev"
    daemonset = result.recording.one("kubernetes:apps/v1:DaemonSet", "oci-dev-network-policy-daemon-set-calico-node")
    env = daemonset.inputs["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "FELIX_INTERFACEPREFIX", "value": "oci"} in env


def test_autoscaler_component_is_unchanged_by_the_cluster_security():
    # The add-on's policy waits for nothing of the Secrets key: it only needs the cluster's OCID.
    rec = run_program(lambda: OkeClusterAutoscaler("ca", {
        "cluster_id": "ocid1.cluster.oc1.iad.aaaaaaaac", "compartment_id": COMPARTMENT,
        "node_pools": [{"node_pool_id": "ocid1.nodepool.oc1.iad.aaaaaaaanp", "min_nodes": 0, "max_nodes": 2}]}))
    assert rec.of_type(VAULT) == [] and len(rec.of_type(POLICY)) == 1


# ---------------------------------------------------------------------------------------------------------
# NetworkPolicy engine


def test_oke_hands_the_kubernetes_layer_calico_for_its_vcn_native_cni():
    _, handle = run_stack()
    assert handle.outputs["network_policy_engine"] == network_policy_engine_args() == {"interface_prefix": "oci"}


def test_calico_node_runs_oracles_vcn_native_policy_only_configuration():
    daemonset = next(o for o in calico_objects("oci") if o["kind"] == "DaemonSet")
    pod = daemonset["spec"]["template"]["spec"]
    assert "initContainers" not in pod  # the OCI CNI owns /opt/cni/bin and /etc/cni/net.d
    (container,) = pod["containers"]
    assert container["image"] == versions.CALICO_NODE_IMAGE.reference
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert {k: env[k] for k in ("FELIX_INTERFACEPREFIX", "NO_DEFAULT_POOLS", "FELIX_CHAININSERTMODE",
                                "FELIX_IPTABLESMANGLEALLOWACTION", "CALICO_NETWORKING_BACKEND",
                                "CALICO_MANAGE_CNI", "DATASTORE_TYPE")} == {
        "FELIX_INTERFACEPREFIX": "oci", "NO_DEFAULT_POOLS": "true", "FELIX_CHAININSERTMODE": "Append",
        "FELIX_IPTABLESMANGLEALLOWACTION": "Return", "CALICO_NETWORKING_BACKEND": "none",
        "CALICO_MANAGE_CNI": "false", "DATASTORE_TYPE": "kubernetes"}
    assert "FELIX_TYPHAK8SSERVICENAME" not in env and "envFrom" not in container
    # v3.31.3's calico-node volumes less the CNI installer's and ebpf-bootstrap's (sys-fs, nodeproc); no
    # sys-kernel-security, which only v3.31.7's Felix reads.
    assert [v["name"] for v in pod["volumes"]] == [
        "lib-modules", "var-run-calico", "var-lib-calico", "xtables-lock", "bpffs", "policysync"]
    assert [m["name"] for m in container["volumeMounts"]] == [
        "lib-modules", "xtables-lock", "var-run-calico", "var-lib-calico", "policysync", "bpffs"]
    assert pod["tolerations"] == [{"effect": "NoSchedule", "operator": "Exists"},
                                  {"effect": "NoExecute", "operator": "Exists"}]
    assert (pod["hostNetwork"], pod["priorityClassName"]) == (True, "system-node-critical")
    assert felix_env("oci") == container["env"]


def test_calico_is_one_release_pinned_by_digest():
    assert versions.CALICO_NODE_IMAGE.reference == (
        "quay.io/calico/node:v3.31.3@sha256:f2339c4ff3a57228cbc39a1f67ab81abded1997d843e0e0b1e86664c7c4eb6c0")
    assert versions.CALICO_KUBE_CONTROLLERS_IMAGE.reference == (
        "docker.io/calico/kube-controllers:v3.31.3"
        "@sha256:65a824efe37bad955e45a9a37492d8db862f6b7c99bc58ac99cf18915a23ee26")
    # The CRDs of the same release: the commit tag v3.31.3 points to.
    assert versions.CALICO_CRDS_MANIFEST == ("https://raw.githubusercontent.com/projectcalico/calico/"
                                             "2e3c880bcabff580ddd7a08340878ede207f37be/manifests/crds.yaml")
    (controllers,) = [o for o in calico_objects("oci") if o["kind"] == "Deployment"]
    assert controllers["spec"]["template"]["spec"]["containers"][0]["image"] == (
        versions.CALICO_KUBE_CONTROLLERS_IMAGE.reference)


def test_calico_objects_match_the_kubernetes_schemas():
    objects = calico_objects("oci", [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "calico-kube-controllers"), ("ServiceAccount", "calico-node"),
        ("ClusterRole", "calico-kube-controllers"), ("ClusterRole", "calico-node"),
        ("ClusterRole", "calico-tier-getter"), ("ClusterRoleBinding", "calico-kube-controllers"),
        ("ClusterRoleBinding", "calico-node"), ("ClusterRoleBinding", "calico-tier-getter"),
        ("DaemonSet", "calico-node"), ("Deployment", "calico-kube-controllers"),
        ("PodDisruptionBudget", "calico-kube-controllers")]
    for obj in objects:
        schemas.validate_manifest(obj, "1.34")


def test_calico_engine_registers_the_release_crds_and_tolerates_the_gpu_pools():
    pool = gpu_pool("oci", dict(A10)).spec()
    rec = run_program(lambda: CalicoPolicyEngine("np", {"interface_prefix": "oci", "pools": [pool]}))
    crds = rec.one("kubernetes:yaml/v2:ConfigFile", "np-crds")
    assert crds.inputs["file"] == versions.CALICO_CRDS_MANIFEST
    daemonset = rec.one("kubernetes:apps/v1:DaemonSet", "np-daemon-set-calico-node")
    assert crds.urn in daemonset.dependencies
    env = daemonset.inputs["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "FELIX_INTERFACEPREFIX", "value": "oci"} in env
    controllers = rec.one("kubernetes:apps/v1:Deployment", "np-deployment-calico-kube-controllers")
    assert controllers.inputs["spec"]["template"]["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]
    assert rec.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
                   "np-cluster-role-binding-calico-node").inputs["subjects"] == [
        {"kind": "ServiceAccount", "name": "calico-node", "namespace": "kube-system"}]


def test_calico_engine_refuses_a_bad_interface_prefix(monkeypatch):
    line = _refused(lambda: CalicoPolicyEngine("np", {"interface_prefix": "OCI*"}), monkeypatch)
    assert line == "CalicoPolicyEngine np: interface_prefix: 'OCI*' is not a host interface name prefix such as oci"
