"""Issue 17's acceptance, read from the planned reference stacks (plan.json and manifests.yaml as `make plan` writes
them): on every cloud the policy engine is on, node credentials are out of pods' reach, Secrets are envelope-
encrypted, the API endpoint is not open to the world, Grafana has no Secret access, monitoring has its policies,
every namespace the platform creates carries Pod Security labels, and every image is pinned by digest."""

import json
import re

import pytest
import yaml
from conftest import write_planned_stacks
from test_workload_security import image_references, repository_of, stack_config

from gpu_platform import catalog, plan, versions
from gpu_platform.autoscaling import autoscaling_plan
from gpu_platform.pools import training_pool
from gpu_platform.serving import workloads
from gpu_platform.serving.gateway_config import https_host, publishes_services

STACKS = sorted(plan.discover_stacks())
MANAGED = [s for s in STACKS if s != "existing"]
RELEASE = "kubernetes:helm.sh/v3:Release"
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """``{stack: (resources by type, manifests)}`` for every reference stack, from the files of `gpu-platform plan`
    (written from the shared plans; tests/test_plan.py checks the command writes the same bytes)."""
    out = write_planned_stacks(tmp_path_factory.mktemp("secure"))
    result = {}
    for stack in STACKS:
        by_type: dict[str, list[dict]] = {}
        for resource in json.loads((out / stack / "plan.json").read_text())["resources"]:
            by_type.setdefault(resource["type"], []).append(resource)
        manifests = [m for m in yaml.safe_load_all((out / stack / "manifests.yaml").read_text()) if m]
        result[stack] = (by_type, manifests)
    return result


def only(by_type, type_):
    assert len(by_type.get(type_, [])) == 1, type_
    return by_type[type_][0]["inputs"]


def cloud_of(stack):
    return plan.discover_stacks()[stack].read_text().split("gpu-platform:cloud: ", 1)[1].split()[0]


VENDOR_NAMESPACES = {catalog.AWS_NEURON: {"aws-neuron"}, catalog.AMD: {"kube-amd-gpu", "cert-manager"},
                     catalog.GOOGLE_TPU: {"jobset-system"}}
"""The namespaces each vendor's software runs in (accelerators/neuron.py, accelerators/amd.py, accelerators/tpu.py)."""
GATEWAY_NAMESPACES = {"gateway", "envoy-gateway-system", "envoy-ai-gateway-system"}
"""The Gateway's namespace, Envoy Gateway's and Envoy AI Gateway's (serving/gateway.py)."""
OPTIONAL_NAMESPACES = {"gpu-optimizer", "inference", "llm", *GATEWAY_NAMESPACES,
                       *(ns for group in VENDOR_NAMESPACES.values() for ns in group)}


def expected_namespaces(stack):
    """The namespaces the stack's configuration makes: monitoring, the optimizer's where it runs (NVIDIA or AMD
    pools), the inference app's where inference is on and has a pool, each accelerator vendor's, and the gateway's
    where the stack publishes a service (Envoy Gateway's off GKE, Envoy AI Gateway's with an LLM service too;
    cert-manager's for an HTTPS listener)."""
    cfg = stack_config(stack)
    pools = cfg.gpu_pools()
    names = {"monitoring"}
    if cfg.runs_optimizer:
        names.add("gpu-optimizer")
    if cfg.inference.enabled and workloads.chosen_pool(cfg, pools) is not None:
        names.add("inference")
    if cfg.llm is not None:
        names.add(cfg.llm.namespace)
    for pool in pools:
        names |= VENDOR_NAMESPACES.get(pool.vendor, set())
    if publishes_services(cfg):
        names.add("gateway")
        if cfg.cloud != "gcp":
            names.add("envoy-gateway-system")
            if cfg.llm is not None:
                names.add("envoy-ai-gateway-system")
        if https_host(cfg) is not None:
            names.add("cert-manager")
    return names


def test_each_stack_expects_the_namespaces_its_configuration_makes():
    # The Gateway in front of the inference app: Envoy Gateway's namespace beside it, GKE's controller outside.
    envoy = {"gateway", "envoy-gateway-system"}
    nvidia = {"monitoring", "gpu-optimizer", "inference", *envoy}
    gke = {"monitoring", "gpu-optimizer", "inference", "gateway"}
    assert {stack: expected_namespaces(stack) for stack in STACKS} == {
        # aws-dev serves an LLM too: Envoy AI Gateway resolves its InferencePool.
        "aws-dev": nvidia | {"llm", "envoy-ai-gateway-system"}, "aws-karpenter": nvidia, "azure-dev": nvidia,
        "existing": nvidia, "gcp-dev": gke, "oci-dev": nvidia,
        "aws-neuron": {"monitoring", "inference", "aws-neuron", *envoy},
        "azure-mi300x": {"monitoring", "gpu-optimizer", "inference", "kube-amd-gpu", "cert-manager", *envoy},
        "oci-mi300x": {"monitoring", "gpu-optimizer", "inference", "kube-amd-gpu", "cert-manager", *envoy},
        "gcp-tpu": {"monitoring", "jobset-system"},
        # Racks: DRA pools add no namespace (the DRA driver runs in the NVIDIA stack's own).
        "aws-gb200": nvidia, "azure-gb200": nvidia, "gcp-a4x": gke, "oci-gb200": nvidia,
        # MultiKueue: the manager runs neither inference app nor Gateway; its GKE workers are like gcp-dev.
        "mk-manager": {"monitoring", "gpu-optimizer"}, "mk-worker-us": gke, "mk-worker-eu": gke,
    }


@pytest.mark.parametrize("stack", STACKS)
def test_a_network_policy_engine_enforces_the_policies(planned, stack):
    by_type, manifests = planned[stack]
    cloud = cloud_of(stack)
    if cloud == "aws":
        addons = {a["inputs"]["addonName"]: a["inputs"] for a in by_type["aws:eks/addon:Addon"]}
        assert json.loads(addons["vpc-cni"]["configurationValues"]) == {"enableNetworkPolicy": "true"}
    elif cloud == "azure":
        profile = only(by_type, "azure-native:containerservice:ManagedCluster")["networkProfile"]
        assert (profile["networkDataplane"], profile["networkPolicy"]) == ("cilium", "cilium")
    elif cloud == "gcp":
        assert only(by_type, "gcp:container/cluster:Cluster")["datapathProvider"] == "ADVANCED_DATAPATH"
    elif cloud == "oci":
        calico = [m for m in manifests if m["kind"] == "DaemonSet" and m["metadata"]["name"] == "calico-node"]
        assert len(calico) == 1
        env = {e["name"]: e.get("value") for e in calico[0]["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["FELIX_INTERFACEPREFIX"] == "oci"  # Oracle's setting for the VCN-native CNI's interfaces
    else:
        text = plan.discover_stacks()[stack].read_text()
        assert "gpu-platform:networkPolicyEnforced: true" in text
    assert any(m["kind"] == "NetworkPolicy" for m in manifests)


@pytest.mark.parametrize("stack", [s for s in STACKS if cloud_of(s) == "aws"])
def test_aws_nodes_keep_imds_from_pods(planned, stack):
    by_type, manifests = planned[stack]
    templates = by_type["aws:ec2/launchTemplate:LaunchTemplate"]
    assert templates
    for template in templates:
        options = template["inputs"]["metadataOptions"]
        assert (options["httpTokens"], options["httpPutResponseHopLimit"]) == ("required", 1), template["name"]
    for node_class in (m for m in manifests if m["kind"] == "EC2NodeClass"):
        assert node_class["spec"]["metadataOptions"]["httpPutResponseHopLimit"] == 1
        assert node_class["spec"]["metadataOptions"]["httpTokens"] == "required"
    attached = {a["inputs"]["policyArn"] for a in by_type["aws:iam/rolePolicyAttachment:RolePolicyAttachment"]
                if "node" in a["name"]}
    assert not any(arn.endswith("/AmazonEKS_CNI_Policy") for arn in attached)
    associations = by_type["aws:eks/addon:Addon"]
    cni = next(a["inputs"] for a in associations if a["inputs"]["addonName"] == "vpc-cni")
    assert cni["podIdentityAssociations"][0]["serviceAccount"] == "aws-node"


@pytest.mark.parametrize("stack", MANAGED)
def test_secrets_are_envelope_encrypted_and_the_api_is_not_open_to_the_world(planned, stack):
    by_type, _ = planned[stack]
    cloud = cloud_of(stack)
    if cloud == "aws":
        eks = only(by_type, "aws:eks/cluster:Cluster")
        assert eks["encryptionConfig"]["resources"] == ["secrets"] and eks["encryptionConfig"]["provider"]["keyArn"]
        allowed = eks["vpcConfig"].get("publicAccessCidrs", []) if eks["vpcConfig"]["endpointPublicAccess"] else []
    elif cloud == "azure":
        aks = only(by_type, "azure-native:containerservice:ManagedCluster")
        assert aks["securityProfile"]["azureKeyVaultKms"]["enabled"] is True
        assert (aks["disableLocalAccounts"], aks["aadProfile"]["enableAzureRBAC"]) == (True, True)
        access = aks["apiServerAccessProfile"]
        allowed = [] if access.get("enablePrivateCluster") else access["authorizedIPRanges"]
    elif cloud == "gcp":
        gke = only(by_type, "gcp:container/cluster:Cluster")
        assert gke["databaseEncryption"]["state"] == "ENCRYPTED" and gke["databaseEncryption"]["keyName"]
        allowed = [] if gke["privateClusterConfig"]["enablePrivateEndpoint"] else [
            b["cidrBlock"] for b in gke["masterAuthorizedNetworksConfig"]["cidrBlocks"]]
        for pool in by_type["gcp:container/nodePool:NodePool"]:
            assert pool["inputs"]["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    else:
        oke = only(by_type, "oci:ContainerEngine/cluster:Cluster")
        assert oke["kmsKeyId"] == only(by_type, "oci:Kms/key:Key").get("id", oke["kmsKeyId"])
        rules = [r for sl in by_type["oci:Core/securityList:SecurityList"]
                 for r in sl["inputs"].get("ingressSecurityRules", [])
                 if r.get("tcpOptions", {}).get("min") == 6443]
        allowed = [r["source"] for r in rules if not r["source"].startswith("10.")]
        assert oke["endpointConfig"]["isPublicIpEnabled"] is bool(allowed)
    assert "0.0.0.0/0" not in allowed
    # Exactly the stack's apiAllowedCidrs; none: a private endpoint (aws-karpenter, aws-neuron).
    raw = plan.load_stack_file(plan.discover_stacks()[stack])
    assert allowed == raw.get("gpu-platform:apiAllowedCidrs", [])


@pytest.mark.parametrize("stack", STACKS)
def test_grafana_reads_configmaps_of_monitoring_only(planned, stack):
    by_type, manifests = planned[stack]
    release = next(r["inputs"] for r in by_type[RELEASE] if r["inputs"]["chart"] == "kube-prometheus-stack")
    grafana = release["values"]["grafana"]
    assert grafana["rbac"]["create"] is False  # the chart's own (Cluster)Role would grant secrets
    for sidecar in ("dashboards", "datasources"):
        assert (grafana["sidecar"][sidecar]["resource"], grafana["sidecar"][sidecar]["searchNamespace"]) == (
            "configmap", "monitoring")
    roles = [m for m in manifests if m["kind"] in ("Role", "ClusterRole")
             and any(s.get("name") == grafana["serviceAccount"]["name"]
                     for b in manifests if b["kind"] in ("RoleBinding", "ClusterRoleBinding")
                     and b["roleRef"]["name"] == m["metadata"]["name"] for s in b.get("subjects", []))]
    assert [r["kind"] for r in roles] == ["Role"]
    assert [rule["resources"] for rule in roles[0]["rules"]] == [["configmaps"]]


@pytest.mark.parametrize("stack", STACKS)
def test_monitoring_denies_by_default_and_every_namespace_has_pod_security(planned, stack):
    _, manifests = planned[stack]
    policies = {m["metadata"]["name"]: m["spec"] for m in manifests
                if m["kind"] == "NetworkPolicy" and m["metadata"].get("namespace") == "monitoring"}
    assert policies["default-deny-ingress"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    assert {"allow-prometheus-api", "allow-alertmanager", "allow-grafana"} <= set(policies)
    namespaces = [m for m in manifests if m["kind"] == "Namespace"]
    assert expected_namespaces(stack) <= {n["metadata"]["name"] for n in namespaces}
    assert not (OPTIONAL_NAMESPACES - expected_namespaces(stack)) & {n["metadata"]["name"] for n in namespaces}
    for namespace in namespaces:
        assert namespace["metadata"]["labels"][PSA_ENFORCE] in ("restricted", "baseline", "privileged")
        assert namespace["metadata"]["annotations"]["gpu-platform.io/pod-security-reason"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_image_is_pinned_by_digest(planned, stack):
    _, manifests = planned[stack]
    images = set(image_references(manifests))
    cfg = stack_config(stack)
    pools = cfg.gpu_pools()
    training = autoscaling_plan.training_namespace(cfg, pools)
    # The vendor's training image, pinned by digest, where the stack runs the reference training job; none else.
    training_images = {image.reference for image in versions.TRAINING_IMAGES.values()}
    if training is not None:
        expected = versions.TRAINING_IMAGES[training_pool(pools).vendor].reference
        assert DIGEST.search(expected)
        assert images & training_images == {expected}
    else:
        assert not images & training_images
    for image in images:
        assert DIGEST.search(image) or repository_of(image) in versions.UNPINNED_IMAGES, image
