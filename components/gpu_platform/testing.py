"""Mock harness: run a Pulumi program in-process and record every registration.

Public, so platform teams unit-test their own stacks with it::

    from gpu_platform.testing import run_program

    def test_my_pool_is_tainted():
        rec = run_program(lambda: EksGpuNodePool("train", {...}), stack="dev")
        group = rec.one("aws:eks/nodeGroup:NodeGroup")
        assert group.inputs["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]

or, with pytest, the ``pulumi_mocks`` fixture (``pytest_plugins = ["gpu_platform.testing"]``) which yields a
`Recorder` and pumps the program for you::

    def test_it(pulumi_mocks):
        EksGpuNodePool("train", {...})
        rec = pulumi_mocks.finish()

Each `Registration` holds what the engine would receive: type, name, parent URN, ``custom``, ``protect``,
dependencies and the inputs in wire form (camelCase, ints as ints, secrets redacted). The mocks answer with
realistic outputs (ids, ARNs, endpoints, kubeconfigs) so Outputs that depend on them resolve.
"""

import asyncio
import base64
import concurrent.futures
import contextlib
import contextvars
import gc
import json
import sys
import threading
import typing
from collections import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import pulumi
from google.protobuf import struct_pb2
from pulumi import _types as pulumi_types
from pulumi import resource as pulumi_resource
from pulumi.runtime import known_types, resource_cycle_breaker, rpc, settings
from pulumi.runtime import mocks as pulumi_mocks_module
from pulumi.runtime import resource as resource_runtime
from pulumi.runtime.config import set_all_config
from pulumi.runtime.proto import resource_pb2, source_pb2
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

REDACTED = "[secret]"
ACCOUNT_ID = "123456789012"
DEFAULT_REGION = "us-east-1"

# ---------------------------------------------------------------------------------------------------------
# Wire-form clean-up


def clean(value: Any) -> Any:
    """Inputs as a manifest needs them: integral floats to ints, secrets redacted leaf by leaf."""
    if rpc.is_rpc_secret(value):
        return _redact(clean(rpc.unwrap_rpc_secret(value)))
    if isinstance(value, Mapping):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _redact(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return REDACTED


# ---------------------------------------------------------------------------------------------------------
# Realistic outputs


def sample_kubeconfig(cluster: str, server: str = "https://127.0.0.1:6443") -> str:
    """A syntactically valid kubeconfig the mocks hand back wherever a cloud would."""
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMOCK\n-----END CERTIFICATE-----\n").decode()
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": cluster,
        "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority-data": ca}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}],
        "users": [{"name": cluster, "user": {"token": "mock-token"}}],
    })


OFFLINE_TOKEN = "offline-plan-stand-in"
"""The token of every kubeconfig the mocks make up for another stack's outputs: no stack is read offline."""


def offline_stack_outputs(stack: str) -> dict:
    """What the mocks answer a `pulumi.StackReference` to ``stack`` (``org/project/name``) with: stand-ins for the
    outputs a platform stack exports (``kubeconfig``, ``clusterName``, a MultiKueue worker's
    ``multikueueKubeconfig``), with a server under ``.offline.invalid`` and the token `OFFLINE_TOKEN`, so that
    nothing taken from them can be mistaken for a real cluster's. Offline, no stack exists to read."""
    name = stack.rsplit("/", 1)[-1]
    kubeconfig = sample_kubeconfig(name, server=f"https://{name}.offline.invalid").replace("mock-token",
                                                                                           OFFLINE_TOKEN)
    return {"kubeconfig": kubeconfig, "multikueueKubeconfig": kubeconfig, "clusterName": name}


OFFLINE_SECRET_OUTPUTS = ["kubeconfig", "multikueueKubeconfig"]
"""The stand-in outputs that are secret, as the platform's program exports them."""


def _stack_reference(name: str, inputs: dict) -> dict:
    stack = str(inputs.get("name") or name)
    return {"name": stack, "outputs": offline_stack_outputs(stack), "secretOutputNames": OFFLINE_SECRET_OUTPUTS}


def _service_account_token(name: str, inputs: dict) -> dict:
    """A ``kubernetes.io/service-account-token`` Secret as the token controller fills it (other Secrets: nothing)."""
    if inputs.get("type") != "kubernetes.io/service-account-token":
        return {}
    namespace = (inputs.get("metadata") or {}).get("namespace", "default")
    data = {"token": f"mock-token-{name}", "namespace": namespace,
            "ca.crt": "-----BEGIN CERTIFICATE-----\nMOCK\n-----END CERTIFICATE-----\n"}
    return {"data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}}


GCP_PROJECT_NUMBER = "123456789012"
"""The number the mocks give every GCP project (``gcp.organizations.get_project``)."""

AZURE_SUBSCRIPTION_ID = "00000000-0000-0000-0000-000000000003"
AZURE_TENANT_ID = "00000000-0000-0000-0000-000000000004"


def _arm_id(group: Optional[str], kind: str = "", name: str = "") -> str:
    """An ARM resource ID in the mock subscription (the group alone when ``kind`` is empty)."""
    base = f"/subscriptions/{AZURE_SUBSCRIPTION_ID}/resourceGroups/{group}"
    return f"{base}/providers/{kind}/{name}" if kind else base


def _aks_identity(inputs: dict) -> dict:
    """A managed cluster's ``identity`` as Azure returns it: user-assigned identities become a map by ID."""
    identity = inputs.get("identity")
    if not isinstance(identity, dict):
        return {}
    assigned = {
        identity_id: {"principalId": "00000000-0000-0000-0000-0000000000a1",
                      "clientId": "00000000-0000-0000-0000-0000000000a2"}
        for identity_id in identity.get("userAssignedIdentities") or []
    }
    return {"identity": {**identity, "userAssignedIdentities": assigned, "tenantId": AZURE_TENANT_ID}
            if assigned else {**identity, "tenantId": AZURE_TENANT_ID}}


def _aws_arn(service: str, kind: str) -> Callable[[str, dict], dict]:
    return lambda name, inputs: {"arn": f"arn:aws:{service}:{DEFAULT_REGION}:{ACCOUNT_ID}:{kind}/{name}"}


def _eks_cluster(name: str, inputs: dict) -> dict:
    cluster = inputs.get("name", name)
    return {
        "arn": f"arn:aws:eks:{DEFAULT_REGION}:{ACCOUNT_ID}:cluster/{cluster}",
        "name": cluster,
        "endpoint": f"https://{cluster.upper()}.gr7.{DEFAULT_REGION}.eks.amazonaws.com",
        "certificateAuthority": {"data": base64.b64encode(b"mock-ca").decode()},
        "identities": [{"oidcs": [{"issuer": f"https://oidc.eks.{DEFAULT_REGION}.amazonaws.com/id/MOCK"}]}],
        "clusterSecurityGroupId": f"sg-{cluster}",
        "vpcConfig": {**(inputs.get("vpcConfig") or {}), "clusterSecurityGroupId": f"sg-{cluster}"},
        "status": "ACTIVE",
    }


OUTPUTS: dict[str, Callable[[str, dict], dict]] = {
    # Another stack's outputs (offline stand-ins: `offline_stack_outputs`), a ServiceAccount's token Secret.
    "pulumi:pulumi:StackReference": _stack_reference,
    "kubernetes:core/v1:Secret": _service_account_token,
    # AWS
    "aws:eks/cluster:Cluster": _eks_cluster,
    "aws:iam/role:Role": lambda n, i: {"arn": f"arn:aws:iam::{ACCOUNT_ID}:role/{i.get('name', n)}",
                                       "name": i.get("name", n)},
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": _aws_arn("iam", "oidc-provider"),
    "aws:eks/nodeGroup:NodeGroup": lambda n, i: {
        "arn": f"arn:aws:eks:{DEFAULT_REGION}:{ACCOUNT_ID}:nodegroup/{n}", "nodeGroupName": i.get("nodeGroupName", n),
        "resources": [{"autoscalingGroups": [{"name": f"eks-{n}-asg"}]}], "status": "ACTIVE"},
    "aws:ec2/launchTemplate:LaunchTemplate": lambda n, i: {"latestVersion": 1, "defaultVersion": 1,
                                                           "arn": f"arn:aws:ec2:{DEFAULT_REGION}:{ACCOUNT_ID}"
                                                                  f":launch-template/lt-{n}"},
    "aws:ec2/vpc:Vpc": _aws_arn("ec2", "vpc"),
    "aws:ec2/subnet:Subnet": _aws_arn("ec2", "subnet"),
    "aws:kms/key:Key": _aws_arn("kms", "key"),
    "aws:ec2/securityGroup:SecurityGroup": _aws_arn("ec2", "security-group"),
    "aws:ec2/placementGroup:PlacementGroup": lambda n, i: {
        **_aws_arn("ec2", "placement-group")(n, i), "name": i.get("name", n), "placementGroupId": f"pg-{n}"},
    "aws:iam/instanceProfile:InstanceProfile": lambda n, i: {
        "arn": f"arn:aws:iam::{ACCOUNT_ID}:instance-profile/{i.get('name', n)}", "name": i.get("name", n)},
    "aws:cloudwatch/eventRule:EventRule": lambda n, i: {
        "arn": f"arn:aws:events:{DEFAULT_REGION}:{ACCOUNT_ID}:rule/{i.get('name', n)}", "name": i.get("name", n)},
    "aws:fsx/lustreFileSystem:LustreFileSystem": lambda n, i: {
        "arn": f"arn:aws:fsx:{DEFAULT_REGION}:{ACCOUNT_ID}:file-system/fs-{n}",
        "dnsName": f"fs-{n}.fsx.{DEFAULT_REGION}.amazonaws.com", "mountName": "abcdefgh"},
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": lambda n, i: {
        "associationArn": f"arn:aws:eks:{DEFAULT_REGION}:{ACCOUNT_ID}:podidentityassociation/{n}",
        "associationId": f"a-{n}"},
    "aws:sqs/queue:Queue": lambda n, i: {"arn": f"arn:aws:sqs:{DEFAULT_REGION}:{ACCOUNT_ID}:{n}",
                                         "url": f"https://sqs.{DEFAULT_REGION}.amazonaws.com/{ACCOUNT_ID}/{n}",
                                         "name": i.get("name", n)},
    # Azure (ids are ARM resource IDs, as azure-native returns them)
    "azure-native:resources:ResourceGroup": lambda n, i: {
        "name": i.get("resourceGroupName", n), "id": _arm_id(i.get("resourceGroupName", n))},
    "azure-native:network:VirtualNetwork": lambda n, i: {
        "name": i.get("virtualNetworkName", n),
        "id": _arm_id(i.get("resourceGroupName"), "Microsoft.Network/virtualNetworks", i.get("virtualNetworkName", n))},
    "azure-native:network:Subnet": lambda n, i: {
        "name": i.get("subnetName", n),
        "id": _arm_id(i.get("resourceGroupName"), "Microsoft.Network/virtualNetworks",
                      f"{i.get('virtualNetworkName')}/subnets/{i.get('subnetName', n)}")},
    "azure-native:managedidentity:UserAssignedIdentity": lambda n, i: {
        "name": i.get("resourceName", n),
        "id": _arm_id(i.get("resourceGroupName"), "Microsoft.ManagedIdentity/userAssignedIdentities",
                      i.get("resourceName", n)),
        "principalId": "00000000-0000-0000-0000-0000000000a1", "clientId": "00000000-0000-0000-0000-0000000000a2",
        "tenantId": AZURE_TENANT_ID},
    "azure-native:authorization:RoleAssignment": lambda n, i: {
        "id": f"{i.get('scope', '')}/providers/Microsoft.Authorization/roleAssignments/{n}"},
    "azure-native:containerservice:ManagedCluster": lambda n, i: {
        **_aks_identity(i),
        "name": i.get("resourceName", n), "fqdn": f"{n}.hcp.westeurope.azmk8s.io",
        "id": _arm_id(i.get("resourceGroupName"), "Microsoft.ContainerService/managedClusters",
                      i.get("resourceName", n)),
        "oidcIssuerProfile": {"enabled": True, "issuerURL": f"https://westeurope.oic.prod-aks.azure.com/{n}/"},
        "nodeResourceGroup": f"MC_{n}", "provisioningState": "Succeeded"},
    "azure-native:containerservice:AgentPool": lambda n, i: {
        "name": i.get("agentPoolName", n),
        "id": _arm_id(i.get("resourceGroupName"), "Microsoft.ContainerService/managedClusters",
                      f"{i.get('resourceName')}/agentPools/{i.get('agentPoolName', n)}"),
        "provisioningState": "Succeeded", "nodeImageVersion": "AKSUbuntu-2204gen2containerd-202611.01.0"},
    "azure-native:keyvault:Vault": lambda n, i: {
        "name": i.get("vaultName", n),
        "id": _arm_id(i.get("resourceGroupName"), "Microsoft.KeyVault/vaults", i.get("vaultName", n)),
        "properties": {**(i.get("properties") or {}), "vaultUri": f"https://{i.get('vaultName', n)}.vault.azure.net/"}},
    "azure-native:keyvault:Key": lambda n, i: {
        "name": i.get("keyName", n),
        "id": _arm_id(i.get("resourceGroupName"), "Microsoft.KeyVault/vaults",
                      f"{i.get('vaultName')}/keys/{i.get('keyName', n)}"),
        "keyUri": f"https://{i.get('vaultName')}.vault.azure.net/keys/{i.get('keyName', n)}",
        # Key Vault versions are 32 hex characters; a fixed one keeps plans deterministic.
        "keyUriWithVersion": f"https://{i.get('vaultName')}.vault.azure.net/keys/{i.get('keyName', n)}/"
                             "0123456789abcdef0123456789abcdef"},
    "azure-native:features:SubscriptionFeatureRegistration": lambda n, i: {
        "name": i.get("featureName", n),
        "id": f"/subscriptions/{AZURE_SUBSCRIPTION_ID}/providers/Microsoft.Features/featureProviders/"
              f"{i.get('providerNamespace')}/subscriptionFeatureRegistrations/{i.get('featureName', n)}",
        "properties": {"state": "Registered", "featureName": i.get("featureName", n),
                       "providerNamespace": i.get("providerNamespace")}},
    # An Azure Managed Lustre file system tells clients its MGS address (the first address after Azure's reserved
    # ones in its subnet) and the driver-facing details.
    "azure-native:storagecache:AmlFilesystem": lambda n, i: {
        "name": i.get("amlFilesystemName", n),
        "id": _arm_id(i.get("resourceGroupName"), "Microsoft.StorageCache/amlFilesystems", n),
        "clientInfo": {"mgsAddress": "10.225.0.4", "lustreVersion": "2.15.7",
                       "mountCommand": "sudo mount -t lustre -o noatime,flock 10.225.0.4@tcp:/lustrefs /lustrefs"}},
    # GCP
    "gcp:container/cluster:Cluster": lambda n, i: {
        "name": i.get("name", n), "endpoint": "34.1.2.3",
        # GKE runs the newest patch of the minor asked for; offline the minor stands for it.
        "masterVersion": i.get("minMasterVersion") or "",
        "masterAuth": {"clusterCaCertificate": base64.b64encode(b"mock-ca").decode()},
        "selfLink": f"https://container.googleapis.com/v1/projects/mock/locations/x/clusters/{n}"},
    "gcp:compute/network:Network": lambda n, i: {
        "name": i.get("name", n),
        "selfLink": f"https://www.googleapis.com/compute/v1/projects/{i.get('project', 'mock-project')}"
                    f"/global/networks/{i.get('name', n)}"},
    "gcp:compute/subnetwork:Subnetwork": lambda n, i: {
        "name": i.get("name", n),
        "selfLink": f"https://www.googleapis.com/compute/v1/projects/{i.get('project', 'mock-project')}/regions/"
                    f"{i.get('region', 'us-central1')}/subnetworks/{i.get('name', n)}"},
    "gcp:compute/firewall:Firewall": lambda n, i: {
        "name": i.get("name", n),
        "selfLink": f"https://www.googleapis.com/compute/v1/projects/{i.get('project', 'mock-project')}"
                    f"/global/firewalls/{i.get('name', n)}"},
    "gcp:compute/router:Router": lambda n, i: {"name": i.get("name", n)},
    "gcp:compute/routerNat:RouterNat": lambda n, i: {"name": i.get("name", n)},
    "gcp:container/nodePool:NodePool": lambda n, i: {
        "name": i.get("name", n), "instanceGroupUrls": [
            f"https://www.googleapis.com/compute/v1/projects/mock-project/zones/us-central1-a/instanceGroupManagers/"
            f"gke-{i.get('name', n)}-grp"]},
    "gcp:projects/iAMMember:IAMMember": lambda n, i: {"etag": "BwYmock="},
    "gcp:serviceaccount/account:Account": lambda n, i: {
        "email": f"{i.get('accountId', n)}@mock.iam.gserviceaccount.com"},
    # Managed Lustre reports where clients mount it (``IP_ADDRESS@tcp:/FILESYSTEM``), from its peering range.
    "gcp:lustre/instance:Instance": lambda n, i: {
        "name": f"projects/{i.get('project', 'mock-project')}/locations/{i.get('location')}/instances/"
                f"{i.get('instanceId', n)}",
        "mountPoint": f"10.10.0.2@tcp:/{i.get('filesystem')}"},
    # OCI (ids come from `outputs_for`; mock resources are in us-ashburn-1, "iad")
    # A vault's endpoints as KMS returns them (``https://<vault prefix>-management.kms.<region>.oraclecloud.com``):
    # keys are created against the management endpoint.
    "oci:Kms/vault:Vault": lambda n, i: {
        "managementEndpoint": f"https://{n}-management.kms.us-ashburn-1.oraclecloud.com",
        "cryptoEndpoint": f"https://{n}-crypto.kms.us-ashburn-1.oraclecloud.com"},
    # A mount target's private IP (OCI assigns one from the subnet) and the export set it creates.
    "oci:FileStorage/mountTarget:MountTarget": lambda n, i: {
        "ipAddress": i.get("ipAddress") or "10.0.16.200", "exportSetId": f"ocid1.exportset.oc1.iad.{n}"},
    # pulumi-random: a deterministic stand-in with the requested length (the real one is random and secret).
    "random:index/randomPassword:RandomPassword": lambda n, i: {
        "result": ("mock" + n.replace("-", ""))[: int(i.get("length", 16))].ljust(int(i.get("length", 16)), "x"),
        "bcryptHash": "$2a$10$mockmockmockmockmockmu"},
}
"""Extra outputs per resource type token, on top of the inputs echoed back. Extend it for your own types."""


def _oci_id(kind: str) -> Callable[[str], str]:
    return lambda name: f"ocid1.{kind}.oc1.iad.{name}"


OKE_VERSIONS = ("v1.32.1", "v1.33.1", "v1.34.1", "v1.34.2", "v1.35.2", "v1.36.1")
"""Kubernetes versions the OKE option mocks offer (v1.35.2 and v1.36.1: OKE's own node images of 2026-06-15 are
built for them, ``Oracle-Linux-9.7-Gen2-GPU-2026.06.15-0-OKE-1.35.2-1505``, ``...-OKE-1.36.1-1505``)."""


def _oke_node_pool_options(args: dict) -> dict:
    """OKE node pool options as the API lists them: per version an Oracle Linux 8 and 9 GPU image (older and
    newer build), a CPU image and an Arm image, named the way OKE names its images."""
    wanted = args.get("nodePoolK8sVersion")
    sources = []
    for version in OKE_VERSIONS:
        if wanted and wanted != version:
            continue
        plain, build = version.lstrip("v"), 1000 + int(version.rsplit(".", 1)[-1])
        tag = plain.replace(".", "-")
        sources += [
            {"sourceType": "IMAGE", "imageId": f"ocid1.image.oc1.iad.ol8-gpu-{tag}",
             "sourceName": f"Oracle-Linux-8.10-Gen2-GPU-2026.09.15-0-OKE-{plain}-{build}"},
            {"sourceType": "IMAGE", "imageId": f"ocid1.image.oc1.iad.ol9-gpu-{tag}",
             "sourceName": f"Oracle-Linux-9.6-Gen2-GPU-2026.10.01-0-OKE-{plain}-{build}"},
            {"sourceType": "IMAGE", "imageId": f"ocid1.image.oc1.iad.ol8-cpu-{tag}",
             "sourceName": f"Oracle-Linux-8.10-2026.10.01-0-OKE-{plain}-{build}"},
            {"sourceType": "IMAGE", "imageId": f"ocid1.image.oc1.iad.ol8-arm-{tag}",
             "sourceName": f"Oracle-Linux-8.10-aarch64-2026.10.01-0-OKE-{plain}-{build}"},
        ]
    return {"id": args.get("nodePoolOptionId", "all"), "nodePoolOptionId": args.get("nodePoolOptionId", "all"),
            "sources": sources, "kubernetesVersions": list(OKE_VERSIONS),
            "shapes": ["VM.GPU.A10.1", "VM.GPU.A10.2", "BM.GPU.A10.4", "BM.GPU.H100.8", "BM.GPU.H200.8"],
            "images": []}


def _aks_credentials(args: dict) -> dict:
    kubeconfig = sample_kubeconfig(args.get("resourceName", "aks"))
    return {"kubeconfigs": [{"name": "clusterUser", "value": base64.b64encode(kubeconfig.encode()).decode()}]}


MOCK_OCI_OBJECT_STORAGE_NAMESPACE = "mocktenancyns"
"""The Object Storage namespace the mock ``oci.objectstorage.get_namespace`` answers (a tenancy's is a short string)."""

CALLS: dict[str, Callable[[dict], dict]] = {
    "aws:index/getCallerIdentity:getCallerIdentity": lambda a: {
        "accountId": ACCOUNT_ID, "arn": f"arn:aws:iam::{ACCOUNT_ID}:user/mock", "userId": "MOCK"},
    "aws:index/getAvailabilityZones:getAvailabilityZones": lambda a: {
        "names": [f"{a.get('region') or DEFAULT_REGION}{z}" for z in "abcd"],
        "zoneIds": [f"{a.get('region') or DEFAULT_REGION}-az{i}" for i in (1, 2, 3, 4)],
        "id": a.get("region") or DEFAULT_REGION},
    "aws:index/getPartition:getPartition": lambda a: {"partition": "aws", "dnsSuffix": "amazonaws.com"},
    "aws:index/getRegion:getRegion": lambda a: {"name": DEFAULT_REGION, "region": DEFAULT_REGION},
    "aws:eks/getAddonVersion:getAddonVersion": lambda a: {
        "id": a.get("addonName"), "addonName": a.get("addonName"), "kubernetesVersion": a.get("kubernetesVersion"),
        "version": f"v1.0.0-eksbuild.1-mock-k8s{a.get('kubernetesVersion')}"},
    "azure-native:containerservice:listManagedClusterUserCredentials": _aks_credentials,
    "azure-native:authorization:getClientConfig": lambda a: {
        "clientId": "00000000-0000-0000-0000-000000000001", "objectId": "00000000-0000-0000-0000-000000000002",
        "subscriptionId": AZURE_SUBSCRIPTION_ID, "tenantId": AZURE_TENANT_ID},
    "gcp:organizations/getClientConfig:getClientConfig": lambda a: {
        "accessToken": "mock", "project": "mock-project", "region": "us-central1", "zone": "us-central1-a"},
    "gcp:organizations/getProject:getProject": lambda a: {
        "projectId": a.get("projectId") or "mock-project", "number": GCP_PROJECT_NUMBER,
        "name": a.get("projectId") or "mock-project", "id": f"projects/{a.get('projectId') or 'mock-project'}"},
    "oci:Identity/getAvailabilityDomains:getAvailabilityDomains": lambda a: {
        "availabilityDomains": [{"name": f"Uocm:US-ASHBURN-AD-{i}", "id": f"ad{i}",
                                 "compartmentId": a.get("compartmentId")}
                                for i in (1, 2, 3)]},
    "oci:ContainerEngine/getClusterKubeConfig:getClusterKubeConfig": lambda a: {
        "content": sample_kubeconfig(a.get("clusterId", "oke")), "clusterId": a.get("clusterId")},
    "oci:ContainerEngine/getNodePoolOption:getNodePoolOption": lambda a: _oke_node_pool_options(a),
    "oci:ContainerEngine/getClusterOption:getClusterOption": lambda a: {
        "clusterOptionId": a.get("clusterOptionId"), "kubernetesVersions": list(OKE_VERSIONS),
        "clusterPodNetworkOptions": [{"cniType": "OCI_VCN_IP_NATIVE"}, {"cniType": "FLANNEL_OVERLAY"}]},
    "oci:Core/getSubnet:getSubnet": lambda a: {"id": a.get("subnetId"), "subnetId": a.get("subnetId"),
                                                "cidrBlock": "10.0.16.0/20"},
    "oci:Core/getServices:getServices": lambda a: {"services": [
        {"id": "ocid1.service.oc1.iad.all-services", "name": "All IAD Services In Oracle Services Network",
         "cidrBlock": "all-iad-services-in-oracle-services-network",
         "description": "All IAD Services In Oracle Services Network"},
        {"id": "ocid1.service.oc1.iad.objectstorage", "name": "OCI IAD Object Storage",
         "cidrBlock": "oci-iad-objectstorage", "description": "OCI IAD Object Storage"},
    ]},
    "oci:ObjectStorage/getNamespace:getNamespace": lambda a: {"namespace": MOCK_OCI_OBJECT_STORAGE_NAMESPACE,
                                                              "compartmentId": a.get("compartmentId")},
    "kubernetes:yaml:decode": lambda a: {"result": []},
}
"""Answers per invoke token. Extend it for the data sources your own stack calls."""


AWS_ID_PREFIXES = {"aws:ec2/subnet:Subnet": "subnet", "aws:ec2/securityGroup:SecurityGroup": "sg",
                   "aws:fsx/lustreFileSystem:LustreFileSystem": "fs"}
"""EC2 ids carry their kind's prefix (``subnet-...``, ``sg-...``): Karpenter's EC2NodeClass schema checks it."""


def outputs_for(type_: str, name: str, inputs: dict,
                outputs: Optional[Mapping[str, Callable[[str, dict], dict]]] = None) -> tuple[str, dict]:
    """(id, state) a realistic engine would return for a new resource (``outputs``: the per-type answers,
    default `OUTPUTS`)."""
    extra = (OUTPUTS if outputs is None else outputs).get(type_, lambda n, i: {})(name, inputs)
    if type_ in AWS_ID_PREFIXES:
        resource_id = f"{AWS_ID_PREFIXES[type_]}-{name}"
    elif type_.startswith("oci:"):
        kind = type_.split(":")[-1].lower()
        resource_id = _oci_id(kind)(name)
    elif type_.startswith("azure-native:") and "id" in extra:
        resource_id = extra["id"]
    elif type_ == "aws:eks/cluster:Cluster":
        resource_id = extra["name"]  # EKS's id is the cluster name
    else:
        resource_id = f"{name}-id"
    return resource_id, {**inputs, "id": resource_id, **extra}


# ---------------------------------------------------------------------------------------------------------
# Recording


@dataclass
class Registration:
    """One resource registration as the engine would receive it."""

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    protect: bool
    inputs: dict
    dependencies: list[str] = field(default_factory=list)
    provider: str = ""
    retain_on_delete: bool = False
    delete_before_replace: bool = False
    ignore_changes: list[str] = field(default_factory=list)
    replace_on_changes: list[str] = field(default_factory=list)
    additional_secret_outputs: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    """The URNs the resource's aliases name (a resource registered under one of them before is adopted)."""

    @property
    def parent_name(self) -> str:
        return self.parent.rsplit("::", 1)[-1] if self.parent else ""


class Recording:
    """Every registration of one program run, with lookups for assertions; ``exports`` holds the stack's
    exports (``pulumi.export``) as plain values (Outputs resolved, secrets redacted)."""

    def __init__(self, registrations: list[Registration], exports: Optional[dict] = None,
                 reads: Optional[list[Registration]] = None):
        self.registrations = sorted(registrations, key=lambda r: r.urn)
        self.exports = exports or {}
        self.reads = sorted(reads or [], key=lambda r: r.urn)
        """Resources the program read rather than created (``get``, `pulumi.StackReference`): the mocks answered
        them (`OUTPUTS`)."""

    def __iter__(self):
        return iter(self.registrations)

    def __len__(self) -> int:
        return len(self.registrations)

    def of_type(self, type_: str) -> list[Registration]:
        """Every registration of a type token (``aws:eks/nodeGroup:NodeGroup``)."""
        return [r for r in self.registrations if r.type == type_]

    def one(self, type_: str, name: Optional[str] = None) -> Registration:
        """The single registration of a type (and name); fails loudly otherwise."""
        found = [r for r in self.of_type(type_) if name is None or r.name == name]
        if len(found) != 1:
            names = [r.name for r in self.of_type(type_)]
            raise AssertionError(f"expected one {type_} named {name!r}, found {len(found)} among {names}")
        return found[0]

    def named(self, name: str) -> Registration:
        """The registration with this logical name (unique across types)."""
        found = [r for r in self.registrations if r.name == name]
        if len(found) != 1:
            raise AssertionError(f"expected one resource named {name!r}, found {len(found)}")
        return found[0]

    def children_of(self, parent: Registration) -> list[Registration]:
        return [r for r in self.registrations if r.parent == parent.urn]

    def kubernetes_objects(self) -> list[Registration]:
        """Registrations that are plain Kubernetes objects (no Helm releases, providers or components)."""
        return [r for r in self.registrations if is_manifest_type(r.type) and r.custom]


def is_manifest_type(type_: str) -> bool:
    """True for ``kubernetes:<group>/<version>:<Kind>`` tokens other than Helm releases and remote charts."""
    if not type_.startswith("kubernetes:") or type_.startswith("kubernetes:helm.sh/"):
        return False
    group_version = type_.split(":")[1]
    return "/" in group_version and not group_version.startswith(("yaml/", "kustomize/"))


class PlatformMocks(pulumi.runtime.Mocks):
    """Mocks that answer what every cloud's components need: realistic outputs per resource type (`OUTPUTS`, via
    `outputs_for`) and the invokes they make (`CALLS`: caller identity, zones, client configs, OKE options, ...).

    For tests written the standard Pulumi way::

        pulumi.runtime.set_mocks(PlatformMocks(), preview=False)

    Subclass it (call ``super()`` for what you do not answer yourself) or pass extra answers::

        PlatformMocks(outputs={"mycorp:index:Thing": lambda name, inputs: {"url": "https://x"}},
                      calls={"mycorp:index:getThing": lambda args: {"id": "t-1"}})

    ``calls`` (the attribute) records every invoke as ``(token, args)``.
    """

    def __init__(self, outputs: Optional[Mapping[str, Callable[[str, dict], dict]]] = None,
                 calls: Optional[Mapping[str, Callable[[dict], dict]]] = None):
        self.outputs: dict[str, Callable[[str, dict], dict]] = {**OUTPUTS, **(outputs or {})}
        self.answers: dict[str, Callable[[dict], dict]] = {**CALLS, **(calls or {})}
        self.calls: list[tuple[str, dict]] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        return outputs_for(args.typ, args.name, dict(args.inputs), self.outputs)

    def call(self, args: pulumi.runtime.MockCallArgs):
        self.calls.append((args.token, dict(args.args)))
        handler = self.answers.get(args.token)
        return handler(dict(args.args)) if handler else {}


RecordingMocks = PlatformMocks
"""The harness's mocks (the earlier name of `PlatformMocks`)."""


class _InputsTap:
    """The mocks a `RecordingMonitor` hands its registrations to, keeping on the calling thread a clean copy of
    the inputs the mock monitor has just deserialized for `new_resource`, so that the recording need not
    deserialize them a second time (that was a tenth of a large plan). Everything else goes to ``mocks``."""

    def __init__(self, mocks: pulumi.runtime.Mocks):
        self._mocks = mocks
        self.seen = threading.local()  # registrations run on the SDK's executor threads, several at a time

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.seen.inputs = clean(args.inputs)  # copied before ``mocks`` sees them: nothing it does can change it
        return self._mocks.new_resource(args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._mocks, name)


_SPECIAL_SIG = getattr(rpc, "_special_sig_key", "4dabf18193072939515e22adb298388d").encode()
"""The key that marks secrets, resource references, assets and output values in the wire form."""


def _is_plain(value: Any) -> bool:
    """True for JSON-like data only (dicts with string keys, lists, tuples, strings, numbers, bools, None)."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _is_plain(v) for k, v in value.items())
    if kind is list or kind is tuple:
        return all(_is_plain(v) for v in value)
    return value is None or kind in (str, int, float, bool)


def _plain_struct(state: dict) -> struct_pb2.Struct:
    """The Struct `rpc.serialize_properties` makes of plain ``state`` (`_is_plain`), without its coroutines: for
    such values it passes each one through as is, drops top-level Nones and lets protobuf convert the rest."""
    struct = struct_pb2.Struct()
    for key, value in state.items():
        if value is not None:
            struct[key] = value
    return struct


_SIG_KEY = _SPECIAL_SIG.decode()


class _NotPlain(Exception):
    """Raised inside the plain converters below for what only the SDK's own code handles."""


def _from_value(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        text = value.string_value
        if text == rpc.UNKNOWN:
            raise _NotPlain  # an unknown value: the SDK turns it into None or Unknown
        return text
    if kind == "number_value":
        return value.number_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return _from_struct(value.struct_value)
    if kind == "list_value":
        return [_from_value(item) for item in value.list_value.values]
    if kind == "null_value":
        return None
    raise _NotPlain  # a Value with nothing set: the SDK's reader raises its own error


def _from_struct(struct: struct_pb2.Struct) -> dict:
    fields = struct.fields
    if _SIG_KEY in fields:
        raise _NotPlain  # a secret, resource reference, asset or output value
    out = {}
    for key, value in fields.items():  # the order `Struct.items()` gives
        plain = _from_value(value)
        if plain is not None:  # as the SDK: a property that reads None does not exist
            out[key] = plain
    return out


def _round_trip(value: Any) -> Any:
    """What `rpc.deserialize_properties` reads back from the Struct that protobuf makes of plain ``value``
    (`_is_plain`): numbers become floats (bools stay), tuples lists, properties that are None disappear."""
    kind = type(value)
    if kind is dict:
        if _SIG_KEY in value:
            raise _NotPlain
        out = {}
        for key, item in value.items():
            plain = _round_trip(item)
            if plain is not None:
                out[key] = plain
        return out
    if kind is list or kind is tuple:
        return [_round_trip(item) for item in value]
    if kind is str and value == rpc.UNKNOWN:
        raise _NotPlain
    if kind is int:
        return float(value)
    return value


class _PlainState:
    """The mock state of a plain registration, in place of the Struct of it that the SDK would only read back
    (`rpc.resolve_outputs`) inside `plain_wire_form`: there the reader makes of it what it would make of the
    Struct (`_round_trip`), without building one."""

    __slots__ = ("state",)

    def __init__(self, state: dict):
        self.state = state

    def struct(self) -> struct_pb2.Struct:
        return _plain_struct(self.state)


def _deserialize_properties(props_struct: Any, keep_unknowns: Optional[bool] = None,
                            keep_internal: Optional[bool] = True) -> Any:
    """`rpc.deserialize_properties`, answer for answer: plain Structs (and `_PlainState`) read by the converters
    above, everything else (secrets, resources, assets, unknowns, internal keys left out) by the SDK's own."""
    plain_state = type(props_struct) is _PlainState
    if keep_internal is True:
        try:
            return _round_trip(props_struct.state) if plain_state else _from_struct(props_struct)
        except _NotPlain:
            pass
        except AttributeError:  # not a Struct at all: the SDK's reader says what it makes of it
            pass
    return _SDK_DESERIALIZE_PROPERTIES(props_struct.struct() if plain_state else props_struct,
                                       keep_unknowns, keep_internal)


_SDK_DESERIALIZE_PROPERTIES = rpc.deserialize_properties


@contextlib.contextmanager
def _swapped(owner: Any, name: str, replacement: Any):
    """Inside, ``owner.<name>`` is ``replacement``; on leaving, what it was. Where ``owner`` has no such attribute
    (an SDK that renamed or dropped it), nothing is replaced: every shortcut of this harness is an optimisation,
    and the SDK's own code stays right without it."""
    real = getattr(owner, name, None)
    if real is None:
        yield
        return
    setattr(owner, name, replacement)
    try:
        yield
    finally:
        setattr(owner, name, real)


@contextlib.contextmanager
def plain_wire_form():
    """Inside, `rpc.deserialize_properties` reads plain data with `_from_struct` (the SDK's reader walks every
    value through several generic checks: a fifth of a large plan, twice per registration) and understands the
    `_PlainState` answers of `RecordingMonitor`. Same answers: anything not plain goes to the SDK's reader. Only
    the mock harness uses this; a real ``pulumi up`` never runs through it."""
    with _swapped(rpc, "deserialize_properties", _deserialize_properties):
        yield


def _loop_runs_here() -> bool:
    """True on the thread of a running event loop: the mock monitor was called inline (`_inline_executor`)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _off_the_loop(call: Callable[[Any], Any], request: Any) -> Any:
    """``call(request)`` on a thread of its own when this thread runs the event loop.

    The SDK's mock monitor pumps an event loop of its own (`_sync_await`) to answer invokes and reads; on the
    thread of the running loop that would re-enter it, so those calls go to a short-lived thread, as the SDK's
    executor would have sent them. Elsewhere (the SDK's executor threads) ``call`` runs where it is."""
    if not _loop_runs_here():
        return call(request)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="mock-monitor") as pool:
        return pool.submit(contextvars.copy_context().run, call, request).result()


class DuplicateUrnError(Exception):
    """Two resources registered with one URN: the Pulumi engine refuses the second, and so do the mocks."""


class RecordingMonitor(pulumi_mocks_module.MockMonitor):
    """A mock monitor that keeps what each registration sent: parent, options and inputs. Like the engine, it
    refuses a second resource with the URN of one already registered: `check_unique` raises `DuplicateUrnError`
    once the program has run (raised inside the SDK's registration, the error would leave failed futures behind)."""

    def __init__(self, mocks: pulumi.runtime.Mocks):
        super().__init__(mocks)
        self._tap = _InputsTap(mocks)
        self.mocks = self._tap
        self.registrations: list[Registration] = []
        self.reads: list[Registration] = []
        self._urns: set[str] = set()
        self.duplicates: list[str] = []

    def check_unique(self) -> None:
        """Raise the engine's error for the first URN registered twice, if any."""
        if self.duplicates:  # the engine's own words
            raise DuplicateUrnError(f"Duplicate resource URN '{self.duplicates[0]}'; try giving it a unique name")

    def Invoke(self, request):
        return _off_the_loop(super().Invoke, request)

    def ReadResource(self, request):
        response = _off_the_loop(super().ReadResource, request)
        self.reads.append(Registration(
            urn=response.urn, type=request.type, name=request.name, parent=request.parent, custom=True,
            protect=False, inputs={"id": request.id}, provider=request.provider))
        return response

    def _register_plain(self, request):
        """What `MockMonitor.RegisterResource` answers, computed on the loop's thread: only for a request whose
        inputs are plain data (no secret, resource reference, asset or output value) and whose mock state is
        plain too; None (before the mocks are asked) when the inputs are not."""
        if request.type == "pulumi:pulumi:Stack" or _SPECIAL_SIG in request.object.SerializeToString():
            return None
        urn = self.make_urn(request.parent, request.type, request.name)
        resolve_callbacks = getattr(pulumi_mocks_module, "_resolve_callbacks", None)
        transforms = resolve_callbacks(request.transforms) if resolve_callbacks and request.transforms else []
        resource_id, state = self.mocks.new_resource(pulumi.runtime.MockResourceArgs(
            typ=request.type, name=request.name, inputs=_deserialize_properties(request.object),
            provider=request.provider, resource_id=request.importId, custom=request.custom or False,
            transforms=transforms))
        self.resources[urn] = pulumi_mocks_module.MockMonitor.ResourceRegistration(urn, resource_id, state)
        if _is_plain(state) and rpc.deserialize_properties is _deserialize_properties:
            # The SDK only reads the state back (`plain_wire_form`): no Struct is built for it. The SDK's own
            # response type for a registration without a monitor; unset fields read as the protobuf's would.
            return resource_runtime.RegisterResponse(urn, resource_id or "", _PlainState(state), None,
                                                     resource_pb2.Result.SUCCESS)
        if _is_plain(state):
            obj = _plain_struct(state)
        else:  # the mocks answered with Outputs or resources: the SDK's serializer, off the loop
            obj = _off_the_loop(lambda s: _sync_await(rpc.serialize_properties(s, {})), state)
        return resource_pb2.RegisterResourceResponse(urn=urn, id=resource_id, object=obj)

    def _alias_urns(self, request) -> list[str]:
        """The URN of each alias of a registration, as this monitor makes URNs (the alias's parent, type and name,
        each defaulting to the registration's own)."""
        urns = list(request.aliasURNs)
        for alias in request.aliases:
            if alias.urn:
                urns.append(alias.urn)
                continue
            spec = alias.spec
            parent = "" if spec.noParent else (spec.parentUrn or request.parent)
            urns.append(self.make_urn(parent, spec.type or request.type, spec.name or request.name))
        return urns

    def RegisterResource(self, request):
        urn = self.make_urn(request.parent, request.type, request.name)
        if urn in self._urns:
            self.duplicates.append(urn)
        self._urns.add(urn)
        self._tap.seen.inputs = None
        response = self._register_plain(request) if _loop_runs_here() else None
        if response is None:
            response = _off_the_loop(super().RegisterResource, request)
        if request.type != "pulumi:pulumi:Stack":
            inputs = self._tap.seen.inputs
            if inputs is None:  # the SDK did not pass through new_resource: read the request itself
                inputs = clean(rpc.deserialize_properties(request.object))
            self.registrations.append(Registration(
                urn=response.urn, type=request.type, name=request.name, parent=request.parent,
                custom=bool(request.custom), protect=bool(request.protect), inputs=inputs,
                dependencies=sorted(request.dependencies), provider=request.provider,
                retain_on_delete=bool(request.retainOnDelete),
                delete_before_replace=bool(request.deleteBeforeReplace),
                ignore_changes=list(request.ignoreChanges),
                replace_on_changes=list(request.replaceOnChanges),
                additional_secret_outputs=sorted(set(request.additionalSecretOutputs)),
                aliases=self._alias_urns(request),
            ))
        return response


async def _resolve(value: Any) -> Any:
    """An export's value with every Output awaited: secrets redacted leaf by leaf (as in registrations), unknown
    values (previews) as None."""
    if isinstance(value, pulumi.Output):
        known, secret = await value.is_known(), await value.is_secret()
        resolved = await _resolve(await value.future()) if known else None
        return _redact(resolved) if secret and resolved is not None else resolved
    if isinstance(value, Mapping):
        return {k: await _resolve(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [await _resolve(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@contextlib.contextmanager
def without_source_positions():
    """Registrations made inside send no stack trace or source position to the engine.

    The SDK walks the whole Python stack (`traceback.extract_stack`, a file URI per frame) for every resource, so
    an engine can point at the line that created it. The mock monitor drops both and no `Registration` holds
    them, so under the mocks that walk is pure cost (about a fifth of a large plan). Only the mock harness uses
    this; a real ``pulumi up`` never runs through it. If the SDK no longer has the hook, nothing changes.
    """
    with _swapped(resource_runtime, "_get_stack_trace", source_pb2.StackTrace):  # empty: no frames, no position
        yield


def _contains_unknowns(val: Any, seen_ids: Optional[set[int]] = None) -> bool:
    """`pulumi.runtime.rpc.contains_unknowns`, answer for answer, without its garbage.

    The SDK's version defines a recursive closure on every call: a function and a cell that refer to each other
    (with the closure's annotations), a reference cycle only the cyclic collector frees. The SDK calls it for
    every Output it creates, so a large plan left about a million such objects, and collecting them after the
    run took a sixth of the plan. This one walks the same values in the same order and frees its state at once.
    """
    if type(val) in _SCALARS:
        return False  # never an Unknown and holds nothing (the bulk of every input)
    if known_types.is_unknown(val):
        return True
    if seen_ids is None:
        seen_ids = set()
    val_id = id(val)
    if val_id in seen_ids:
        return False
    seen_ids.add(val_id)
    # Loops rather than any(generator): a generator frame per container was most of the walk.
    if isinstance(val, dict):
        for k in val:  # noqa: SIM110 - the loop is the point (see above)
            if _contains_unknowns(val[k], seen_ids):
                return True
        return False
    if isinstance(val, list):
        for x in val:  # noqa: SIM110
            if _contains_unknowns(x, seen_ids):
                return True
    return False


_SCALARS = frozenset({str, int, float, bool, type(None)})


@contextlib.contextmanager
def without_cyclic_garbage():
    """Inside, the SDK's `contains_unknowns` is `_contains_unknowns` (same answers, no reference cycles).

    Only the mock harness uses this; a real ``pulumi up`` never runs through it. If the SDK no longer has the
    function, nothing changes.
    """
    with _swapped(rpc, "contains_unknowns", _contains_unknowns):
        yield


def _reachable(from_resource: Any, to_resource: Any) -> bool:
    """`pulumi.runtime.resource_cycle_breaker._reachable`, answer for answer: whether ``to_resource`` is among
    ``from_resource`` and its transitive computed dependencies. The SDK asks it for every dependency a resource's
    inputs carry and walks the dependency graph with nested generators, each node passed up through every
    level; this walks it with a stack, visiting each resource once."""
    visited: set = set()
    stack = [from_resource]
    while stack:
        resource = stack.pop()
        if resource in visited:
            continue
        visited.add(resource)
        if resource == to_resource:
            return True
        stack.extend(resource_cycle_breaker._deps(resource))
    return False


_SDK_SERIALIZE_PROPERTY = rpc.serialize_property
_PLAIN_MAPPINGS = frozenset({dict, typing.Dict, abc.Mapping, typing.Mapping})  # noqa: UP006 - as the SDK lists them


def _serialized_plain(value: Any, transformer: Optional[Callable[[str], str]], typ: Any) -> Any:
    """What `rpc.serialize_property` returns for ``value`` when ``value`` holds plain data only (exact dicts with
    string keys, lists, tuples, strings, numbers, bools, None), step for step, without a coroutine per value:
    the same ``typ`` unwrapping, key translation by input type metadata or ``transformer``, element types and
    errors. Raises `_NotPlain` at anything else (an Output, a resource, an asset, an input type, an Unknown),
    which only the SDK's own serializer handles; nothing has been recorded by then, so it can start over."""
    typ = pulumi_types.unwrap_type(typ) if typ else typ
    if typ is Any:
        typ = None
    kind = type(value)
    if kind is list or kind is tuple:
        element_type = rpc._get_list_element_type(typ)
        return [_serialized_plain(item, transformer, element_type) for item in value]
    if kind is dict:
        get_type: Callable[[str], Any] = _no_type
        translate = transformer
        if typ is not None:
            case = pulumi_types.reduce_discriminated_union(typ, value, pulumi_types._py_name_for)
            if case is not None:
                typ = case
            if pulumi_types.is_input_type(typ):
                names = pulumi_types.input_type_py_to_pulumi_names(typ)
                get_type = pulumi_types.input_type_types(typ).get
                translate = lambda k: names.get(k) or k  # noqa: E731 - the SDK's own rule
            else:
                translate = None
                if typ is dict or typing.get_origin(typ) in _PLAIN_MAPPINGS:
                    args = typing.get_args(typ)
                    if len(args) == 2 and args[0] is str:
                        get_type = lambda k: args[1]  # noqa: E731
        out = {}
        for key in value:
            if type(key) is not str:
                raise _NotPlain
            name = translate(key) if translate is not None else key
            out[name] = _serialized_plain(value[key], transformer, get_type(name))
        return out
    if value is None or kind is str or kind is int or kind is float or kind is bool:
        return value
    raise _NotPlain


def _no_type(_key: str) -> None:
    return None


async def _serialize_property(value: Any, deps: Any, property_key: Optional[str], resource_obj: Any = None,
                              input_transformer: Optional[Callable[[str], str]] = None, typ: Any = None,
                              keep_output_values: bool = False, exclude_resource_refs_from_deps: bool = False,
                              return_protobuf_value: bool = False) -> Any:
    """`rpc.serialize_property`, answer for answer: plain data by `_serialized_plain`, everything else (and
    protobuf answers) by the SDK's own serializer."""
    if not return_protobuf_value and type(value) in _PLAIN_CONTAINERS:
        try:
            return _serialized_plain(value, input_transformer, typ)
        except _NotPlain:
            pass
    return await _SDK_SERIALIZE_PROPERTY(value, deps, property_key, resource_obj, input_transformer, typ,
                                         keep_output_values, exclude_resource_refs_from_deps,
                                         return_protobuf_value=return_protobuf_value)


_PLAIN_CONTAINERS = frozenset({dict, list, tuple})
"""Values worth trying `_serialized_plain` on (a scalar costs the SDK little; an Output, resource or input type
goes to the SDK at once)."""


@contextlib.contextmanager
def plain_serialization():
    """Inside, `rpc.serialize_property` (the SDK's step for every value of every input, one coroutine each, a
    sixth of a large plan) serializes plain data without coroutines (`_serialize_property`: same answers). Only
    the mock harness uses this; a real ``pulumi up`` never runs through it."""
    with _swapped(rpc, "serialize_property", _serialize_property):
        yield


_SDK_OUTPUT_TRACK = pulumi.Output.__dict__.get("_track")


@contextlib.contextmanager
def outputs_tracked_directly():
    """Inside, `pulumi.Output._track` keeps the set of unfinished Outputs the SDK waits for at the end of a program
    (``SETTINGS.outputs``, under ``SETTINGS.lock``) as the SDK does, with the set and the lock read once for the
    run and one done-callback shared by every Output, instead of four context-variable lookups and a new closure
    per Output (a large plan makes about 80,000 of them: a twelfth of its time). The set and lock are the ones
    the run's settings hold (read after `pulumi.runtime.set_mocks`), so the SDK's own waits see the same
    entries. Only the mock harness uses this; a real ``pulumi up`` never runs through it."""
    if pulumi.Output.__dict__.get("_track") is not _SDK_OUTPUT_TRACK:  # gone, or someone else's: left as it is
        yield
        return
    outputs, lock = settings.SETTINGS.outputs, settings.SETTINGS.lock

    def cleanup(fut: asyncio.Future) -> None:
        if fut.cancelled() or fut.exception() is not None:
            return  # left in the set for the SDK to report at the program's end, as its own callback does
        with lock:
            outputs.discard(fut)

    def track(self: pulumi.Output) -> None:
        with lock:
            outputs.add(self._data)
        self._data.add_done_callback(cleanup)

    with _swapped(pulumi.Output, "_track", track):
        yield


@contextlib.contextmanager
def direct_dependency_walk():
    """Inside, the SDK's cycle check walks dependencies with `_reachable` (same answers). Only the mock harness
    uses this; a real ``pulumi up`` never runs through it. If the SDK no longer has the function, nothing
    changes."""
    if not hasattr(resource_cycle_breaker, "_deps"):  # `_reachable` walks it: an SDK without it is left alone
        yield
        return
    with _swapped(resource_cycle_breaker, "_reachable", _reachable):
        yield


def _remembered(unwrap: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``unwrap`` (a pure function of a type annotation) answering each annotation once; an annotation that
    cannot be a dict key goes to ``unwrap`` every time."""
    known: dict = {}

    def remembered(typ: Any) -> Any:
        try:
            return known[typ]
        except KeyError:
            known[typ] = result = unwrap(typ)
            return result
        except TypeError:
            return unwrap(typ)

    return remembered


@contextlib.contextmanager
def remembered_type_unwrapping():
    """Inside, the SDK's `unwrap_type` and `unwrap_optional_type` (Output[T], Input[T], Optional[T] -> T: pure
    functions of an annotation, asked for every property of every input and output it converts, a twentieth of
    a large plan) answer each annotation once per run. Only the mock harness uses this; a real ``pulumi up``
    never runs through it. If the SDK no longer has them, nothing changes."""
    with contextlib.ExitStack() as swaps:
        for name in ("unwrap_type", "unwrap_optional_type"):
            real = getattr(pulumi_types, name, None)
            if callable(real):
                swaps.enter_context(_swapped(pulumi_types, name, _remembered(real)))
        yield


class _AliasUrn(pulumi.Output):
    """The URN Output of one of a resource's aliases (`pulumi.resource.Resource._aliases`), built by the SDK's
    `collapse_alias_to_urn` the first time it is used instead of when the resource is constructed."""

    def __init__(self, collapse: Callable[[], pulumi.Output]):  # made on first use: no task, nothing tracked yet
        self._collapse = collapse
        self._urn: Optional[pulumi.Output] = None

    @property
    def _data(self):
        if self._urn is None:
            self._urn = self._collapse()
        return self._urn._data

    def _untrack(self) -> None:
        self._data  # noqa: B018 - made before the SDK takes its (not reentrant) lock, which making it takes too
        super()._untrack()


def _plain_alias(alias: Any, name: str, type_: str, parent: Any) -> bool:
    """True for an alias whose URN cannot fail: a string, or an `Alias` of plain values whose name and type (its
    own or the resource's) are strings and whose parent is a resource or none."""
    if type(alias) is str:
        return True
    if type(alias) is not pulumi.Alias:
        return False
    alias_name = name if alias.name is ... else alias.name
    alias_type = type_ if alias.type_ is ... else alias.type_
    alias_parent = parent if alias.parent is ... else alias.parent
    return (type(alias_name) is str and type(alias_type) is str
            and (alias_parent is None or isinstance(alias_parent, pulumi.Resource))
            and all(v is ... or v is None or type(v) is str for v in (alias.stack, alias.project)))


@contextlib.contextmanager
def aliases_on_demand():
    """Inside, a resource's own alias URNs (`Resource._aliases`) are built when first used rather than when it is
    constructed. The SDK builds them eagerly (about eight Outputs and their tasks per alias) for one use: the
    aliases of a child when the engine cannot take alias specs. The mock monitor takes them, so they were never
    used: azure-native resources carry an alias per former API version (about 150 per AgentPool), which made a
    third of an Azure plan. Aliases that could fail (Outputs, a parent URN given as a string) are built at once,
    as before. Only the mock harness uses this; a real ``pulumi up`` never runs through it."""
    real = getattr(pulumi_resource, "collapse_alias_to_urn", None)
    if real is None:
        yield
        return

    def collapse_on_demand(alias, name, type_, parent):
        if _plain_alias(alias, name, type_, parent):
            return _AliasUrn(lambda: real(alias, name, type_, parent))
        return real(alias, name, type_, parent)

    with _swapped(pulumi_resource, "collapse_alias_to_urn", collapse_on_demand):
        yield


@contextlib.contextmanager
def _inline_executor(loop: asyncio.AbstractEventLoop):
    """Inside, ``loop.run_in_executor(None, f)`` calls ``f`` at once on the loop's thread and returns its result as
    a done future, instead of handing it to a worker thread and waiting for the loop to hear back.

    The SDK sends every call to the monitor through the default executor, because a real engine answers over
    gRPC; the mock monitor answers in microseconds, so the two thread hand-offs per resource (and the
    interleaving they cause) were most of the cost of a registration. `RecordingMonitor` answers registrations of
    plain data on the loop's thread and sends what needs an event loop of its own (invokes, reads, mocks that
    answer with Outputs) to a thread, as before. Only the mock harness uses this."""
    def run_now(executor, func, *args):
        if executor is not None:
            return type(loop).run_in_executor(loop, executor, func, *args)
        future = loop.create_future()
        try:
            future.set_result(func(*args))
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exn:  # noqa: BLE001 - the executor's future carries every exception as well
            future.set_exception(exn if not isinstance(exn, StopIteration) else RuntimeError(repr(exn)))
        return future

    loop.run_in_executor = run_now
    try:
        yield
    finally:
        del loop.run_in_executor


_collector_paused = False
"""True while `collected_once` holds the cyclic collector (a nested use leaves it to the outer one)."""


@contextlib.contextmanager
def collected_once():
    """Inside, the cyclic garbage collector does not run; on leaving, one collection of the youngest generation,
    which then holds exactly the objects made inside, frees those that became garbage, and the collector runs
    again as before.

    A program under the mocks makes a few hundred thousand objects (resources, Outputs, their tasks and futures)
    that refer to each other and become garbage together when the run ends. With the collector on, collections
    walk them while they are alive, and again as they age into older generations; one collection once they are
    garbage frees them in a single walk, whatever else the process holds. What is still alive then (the
    recording, or resources the caller keeps) moves to the next generation like any survivor, so that the
    collector's own later passes free it once the caller drops it. (Freezing the older heap instead, as this did
    before, froze those survivors again at the next run: a test file keeping each program's component for a
    moment left 100,000 tasks behind, which every run walked.) Only the mock harness uses this."""
    global _collector_paused
    if _collector_paused:
        yield
        return
    enabled = gc.isenabled()
    gc.collect(1)  # what earlier runs left alive and their callers dropped since (still young: see above)
    gc.disable()
    _collector_paused = True
    try:
        yield
    finally:
        _collector_paused = False
        try:
            gc.collect(0)
        finally:
            if enabled:
                gc.enable()


def _to_config_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def run_program(
    program: Callable[[], Any],
    *,
    stack: str = "test",
    project: str = "gpu-platform",
    config: Optional[Mapping[str, Any]] = None,
    secret_keys: Optional[list[str]] = None,
) -> Recording:
    """Run ``program`` under the mock engine and return what it registered.

    ``config`` holds fully-qualified keys (``gpu-platform:cloud``) with native values; they reach the program
    the way the engine passes them (strings, JSON for structured values). Exceptions the program raises
    propagate after the runtime has settled.
    """
    from .pool_spec import forget_checked_pools  # here, so that loading the harness loads no config layer

    forget_checked_pools()  # each program checks its pools afresh: nothing carries over from another plan
    with collected_once():  # left after the runtime is reset below: only then is the program's state garbage
        return _run_program(program, stack, project, config, secret_keys)


def _run_program(program: Callable[[], Any], stack: str, project: str, config: Optional[Mapping[str, Any]],
                 secret_keys: Optional[list[str]]) -> Recording:
    previous_loop = None
    with contextlib.suppress(RuntimeError):  # no loop yet: nothing to restore afterwards
        previous_loop = asyncio.get_event_loop_policy().get_event_loop()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        settings.reset_options(project=project, stack=stack, preview=False)
        set_all_config({k: _to_config_value(v) for k, v in (config or {}).items()}, secret_keys or [])
        mocks = PlatformMocks()
        monitor = RecordingMonitor(mocks)
        pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False, monitor=monitor)
        with without_source_positions(), without_cyclic_garbage(), plain_wire_form(), direct_dependency_walk(), \
                remembered_type_unwrapping(), aliases_on_demand(), plain_serialization(), \
                outputs_tracked_directly(), _inline_executor(loop):
            _sync_await(run_pulumi_func(program))
        monitor.check_unique()
        root = settings.get_root_resource()
        exports = dict(getattr(root, "outputs", {}) or {}) if root is not None else {}
        return Recording(monitor.registrations, _sync_await(_resolve(exports)), monitor.reads)
    finally:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
        asyncio.set_event_loop(previous_loop if previous_loop and not previous_loop.is_closed() else None)
        set_all_config({}, [])
        settings.reset_options()


class Recorder:
    """What the ``pulumi_mocks`` fixture yields: build resources, then call `finish` to get the `Recording`."""

    def __init__(self, monitor: RecordingMonitor):
        self._monitor = monitor

    def finish(self) -> Recording:
        """Wait for every outstanding registration and return them."""
        _sync_await(run_pulumi_func(lambda: None))
        self._monitor.check_unique()
        return Recording(self._monitor.registrations, reads=self._monitor.reads)


if "pytest" in sys.modules:  # loaded as a pytest plugin; plain `gpu-platform plan` does not pay for pytest
    import pytest

    @pytest.fixture
    def pulumi_mocks():
        """Fresh mock engine per test; yields a `Recorder`. The event loop it found is restored afterwards, so
        tests written with plain ``pulumi.runtime.set_mocks`` can follow in the same session."""
        from .pool_spec import forget_checked_pools

        forget_checked_pools()  # as run_program does: each test checks its pools afresh
        previous_loop = None
        with contextlib.suppress(RuntimeError):
            previous_loop = asyncio.get_event_loop_policy().get_event_loop()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        settings.reset_options(project="gpu-platform", stack="test", preview=False)
        mocks = PlatformMocks()
        monitor = RecordingMonitor(mocks)
        pulumi.runtime.set_mocks(mocks, project="gpu-platform", stack="test", preview=False, monitor=monitor)
        try:
            yield Recorder(monitor)
        finally:
            for task in asyncio.all_tasks(loop):
                task.cancel()
            loop.run_until_complete(asyncio.sleep(0))
            loop.close()
            asyncio.set_event_loop(previous_loop if previous_loop and not previous_loop.is_closed() else None)
            settings.reset_options()
