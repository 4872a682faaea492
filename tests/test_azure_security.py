"""AKS secure by default (issue 17): Cilium network policy, Entra ID with Azure RBAC and no local accounts, workload
identity, a private or CIDR-restricted API server, KMS envelope encryption of Secrets, and a kubeconfig that still
works (kubelogin). Exact inputs the provider receives, the stack keys that change them, and the refusals."""

import base64
import inspect
import re

import pulumi
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pulumi_azure_native import containerservice, keyvault

from gpu_platform import testing
from gpu_platform.clouds.azure import AksCluster, cluster_from_config, specs
from gpu_platform.clouds.azure.cluster import KEY_VAULT_CRYPTO_USER_ROLE, KMS_KEY_PROPERTIES
from gpu_platform.clouds.azure.kubeconfig import non_interactive
from gpu_platform.clouds.azure.names import KEY_VAULT_NAME, key_vault_name
from gpu_platform.config import DNS_LABEL, parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.testing import AZURE_SUBSCRIPTION_ID, AZURE_TENANT_ID, run_program

MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
VAULT = "azure-native:keyvault:Vault"
KEY = "azure-native:keyvault:Key"
ROLE = "azure-native:authorization:RoleAssignment"
CREDENTIALS = "azure-native:containerservice:listManagedClusterUserCredentials"
GROUP_ID = "6f1c2a5e-3b7d-4e8f-9a0b-1c2d3e4f5a6b"
VAULT_NAME = "kvdevb71413b5"  # key_vault_name("dev", AZURE_SUBSCRIPTION_ID, "dev-rg")
KEY_URI = f"https://{VAULT_NAME}.vault.azure.net/keys/aks-kms/0123456789abcdef0123456789abcdef"
A100 = {"name": "a100", "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 2}


def enum_values(enum) -> set[str]:
    return {member.value for member in enum}


def init_params(cls) -> set[str]:
    return set(inspect.signature(cls.__init__).parameters) - {"self", "__self__"}


def cluster_inputs(**args) -> tuple[dict, testing.Recording]:
    rec = run_program(lambda: AksCluster("dev", {"location": "westeurope", **args}))
    return rec.one(MANAGED_CLUSTER).inputs, rec


def stack_cluster(**keys) -> tuple[dict, testing.Recording]:
    cfg = parse_config({"cloud": "azure", "region": "westeurope", "nodePools": [dict(A100)], **keys}, "dev")
    rec = run_program(lambda: cluster_from_config("dev", cfg, pulumi.ResourceOptions()))
    return rec.one(MANAGED_CLUSTER).inputs, rec


# --- pure decisions are real SDK fields and enum values --------------------------------------------------------


def test_network_profile_is_azure_cni_overlay_powered_by_cilium():
    profile = specs.network_profile("10.244.0.0/16", "10.0.0.0/16", "10.0.0.10")
    assert profile == {
        "network_plugin": "azure", "network_plugin_mode": "overlay", "network_dataplane": "cilium",
        "network_policy": "cilium", "pod_cidr": "10.244.0.0/16", "service_cidr": "10.0.0.0/16",
        "dns_service_ip": "10.0.0.10", "load_balancer_sku": "standard"}
    assert set(profile) <= init_params(containerservice.ContainerServiceNetworkProfileArgs)
    assert profile["network_plugin"] in enum_values(containerservice.NetworkPlugin)
    assert profile["network_plugin_mode"] in enum_values(containerservice.NetworkPluginMode)
    assert profile["network_dataplane"] in enum_values(containerservice.NetworkDataplane)
    assert profile["network_policy"] in enum_values(containerservice.NetworkPolicy)


def test_access_and_kms_profiles_are_sdk_fields():
    cluster_args = init_params(containerservice.ManagedClusterArgs)
    assert {"aad_profile", "disable_local_accounts", "api_server_access_profile", "security_profile",
            "oidc_issuer_profile"} <= cluster_args
    assert set(specs.aad_profile([GROUP_ID])) <= init_params(containerservice.ManagedClusterAADProfileArgs)
    access = init_params(containerservice.ManagedClusterAPIServerAccessProfileArgs)
    assert set(specs.api_server_access_profile([])) | set(specs.api_server_access_profile(["1.2.3.0/24"])) <= access
    kms = specs.kms_profile("https://v.vault.azure.net/keys/k/1")
    assert set(kms) <= init_params(containerservice.AzureKeyVaultKmsArgs)
    assert kms["key_vault_network_access"] in enum_values(containerservice.KeyVaultNetworkAccessTypes)
    security = specs.cluster_identity_profiles("id", kms)["security_profile"]
    assert set(security) <= init_params(containerservice.ManagedClusterSecurityProfileArgs)


def test_key_and_vault_settings_are_sdk_fields():
    assert set(KMS_KEY_PROPERTIES) <= init_params(keyvault.KeyPropertiesArgs)
    assert KMS_KEY_PROPERTIES["kty"] in enum_values(keyvault.JsonWebKeyType)
    assert set(KMS_KEY_PROPERTIES["key_ops"]) <= enum_values(keyvault.JsonWebKeyOperation)
    assert {"enable_rbac_authorization", "enable_soft_delete", "soft_delete_retention_in_days",
            "enable_purge_protection", "network_acls", "tenant_id", "sku"} <= init_params(keyvault.VaultPropertiesArgs)
    assert {"default_action", "bypass"} <= init_params(keyvault.NetworkRuleSetArgs)
    assert "key_uri_with_version" in dir(keyvault.Key)


def test_api_server_access_private_by_default_or_restricted():
    assert specs.api_server_access_profile([]) == {"enable_private_cluster": True}
    assert specs.api_server_access_profile(["203.0.113.0/24"]) == {"authorized_ip_ranges": ["203.0.113.0/24"]}


def test_aad_profile_names_admin_groups_only_when_given():
    assert specs.aad_profile() == {"managed": True, "enable_azure_rbac": True}
    assert specs.aad_profile([GROUP_ID]) == {"managed": True, "enable_azure_rbac": True,
                                             "admin_group_object_ids": [GROUP_ID]}


def test_load_balancer_only_range_must_stand_alone():
    assert specs.authorized_ranges_problem(["0.0.0.0/32"]) is None
    assert specs.authorized_ranges_problem(["203.0.113.0/24"]) is None
    assert "on its own" in specs.authorized_ranges_problem(["0.0.0.0/32", "203.0.113.0/24"])


# --- key vault names -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "group", "expected"), [
    ("dev", "dev-rg", "kvdevb71413b5"),
    ("azure-dev", "azure-dev-rg", "kvazuredev0d855839"),
    ("a" * 40, "g", "kvaaaaaaaaaaaaaabb709b57"),
])
def test_key_vault_name_derivation(name, group, expected):
    assert key_vault_name(name, AZURE_SUBSCRIPTION_ID, group) == expected
    assert KEY_VAULT_NAME.match(expected)


def test_key_vault_name_differs_per_group_and_subscription_not_per_case():
    base = key_vault_name("dev", AZURE_SUBSCRIPTION_ID, "dev-rg")
    assert key_vault_name("dev", AZURE_SUBSCRIPTION_ID, "DEV-RG") == base  # resource group names ignore case
    assert key_vault_name("dev", AZURE_SUBSCRIPTION_ID, "other-rg") != base
    assert key_vault_name("dev", "11111111-1111-1111-1111-111111111111", "dev-rg") != base


@given(st.from_regex(DNS_LABEL, fullmatch=True) | st.text(min_size=1, max_size=80),
       st.from_regex(r"[-\w.()]{1,90}", fullmatch=True))
def test_every_component_name_gives_a_valid_vault_name(name, group):
    derived = key_vault_name(name, AZURE_SUBSCRIPTION_ID, group)
    assert KEY_VAULT_NAME.match(derived), derived
    assert 3 <= len(derived) <= 24 and derived == key_vault_name(name, AZURE_SUBSCRIPTION_ID, group)


# --- kubeconfig --------------------------------------------------------------------------------------------------


def aks_exec_kubeconfig(login_args: list[str]) -> str:
    """What ``listManagedClusterUserCredentials(format=exec)`` returns: a kubelogin exec user (AKS's Entra server
    application 6dae42f8-... and kubelogin's public client 80faf920-..., Azure/kubelogin docs)."""
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "dev-aks",
        "clusters": [{"name": "dev-aks", "cluster": {"server": "https://dev-abc.privatelink.westeurope.azmk8s.io:443",
                                                     "certificate-authority-data": "bW9jaw=="}}],
        "contexts": [{"name": "dev-aks", "context": {"cluster": "dev-aks", "user": "clusterUser_dev-rg_dev-aks"}}],
        "users": [{"name": "clusterUser_dev-rg_dev-aks", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "kubelogin",
            "args": ["get-token", "--environment", "AzurePublicCloud", "--server-id",
                     "6dae42f8-4368-4678-94ff-3960e28e3630", "--client-id", "80faf920-1908-4b52-b5ef-a8e7bedfc67a",
                     "--tenant-id", AZURE_TENANT_ID, *login_args],
            "env": None, "provideClusterInfo": False}}}],
    }, sort_keys=False)


def exec_args(kubeconfig: str) -> list[str]:
    return yaml.safe_load(kubeconfig)["users"][0]["user"]["exec"]["args"]


@pytest.mark.parametrize(("login_args", "expected_tail"), [
    (["--login", "devicecode"], ["--login", "azurecli"]),
    (["-l", "devicecode"], ["-l", "azurecli"]),
    (["--login=devicecode"], ["--login=azurecli"]),
    ([], ["--login", "azurecli"]),
])
def test_kubelogin_logs_in_with_the_azure_cli_not_a_device_code(login_args, expected_tail):
    converted = non_interactive(aks_exec_kubeconfig(login_args))
    args = exec_args(converted)
    assert args[-len(expected_tail):] == expected_tail
    assert args[:2] == ["get-token", "--environment"] and "devicecode" not in converted
    assert yaml.safe_load(converted)["clusters"][0]["cluster"]["server"].endswith(".azmk8s.io:443")


def test_kubeconfig_without_kubelogin_is_left_as_it_is():
    plain = testing.sample_kubeconfig("dev-aks")
    assert non_interactive(plain) is plain


def test_provider_kubeconfig_comes_from_exec_user_credentials(monkeypatch):
    calls: list[dict] = []

    def credentials(args: dict) -> dict:
        calls.append(args)
        value = base64.b64encode(aks_exec_kubeconfig(["--login", "devicecode"]).encode()).decode()
        return {"kubeconfigs": [{"name": "clusterUser", "value": value}]}

    monkeypatch.setitem(testing.CALLS, CREDENTIALS, credentials)
    seen: dict = {}

    def program():
        cluster = AksCluster("dev", {"location": "westeurope"})
        cluster.kubeconfig.apply(lambda k: seen.setdefault("kubeconfig", k))

    rec = run_program(program)
    assert calls == [{"resourceGroupName": "dev-rg", "resourceName": "dev-aks", "format": "exec"}]
    assert exec_args(seen["kubeconfig"])[-2:] == ["--login", "azurecli"]
    assert rec.one("pulumi:providers:kubernetes", "dev-k8s").inputs["kubeconfig"] == "[secret]"


# --- the managed cluster under mocks ----------------------------------------------------------------------------


def test_secure_defaults_reach_the_managed_cluster():
    inputs, rec = cluster_inputs()
    assert inputs["networkProfile"]["networkDataplane"] == "cilium"
    assert inputs["networkProfile"]["networkPolicy"] == "cilium"
    assert inputs["aadProfile"] == {"managed": True, "enableAzureRBAC": True}
    assert inputs["disableLocalAccounts"] is True
    assert inputs["oidcIssuerProfile"] == {"enabled": True}
    assert inputs["apiServerAccessProfile"] == {"enablePrivateCluster": True}
    assert inputs["securityProfile"] == {
        "workloadIdentity": {"enabled": True},
        "azureKeyVaultKms": {"enabled": True, "keyId": KEY_URI, "keyVaultNetworkAccess": "Public"}}
    assert "keyVaultResourceId" not in inputs["securityProfile"]["azureKeyVaultKms"]  # Public vaults take none
    identity = rec.one("azure-native:managedidentity:UserAssignedIdentity", "dev-identity")
    assert inputs["identity"]["type"] == "UserAssigned"
    assert inputs["identity"]["userAssignedIdentities"] == [
        f"/subscriptions/{AZURE_SUBSCRIPTION_ID}/resourceGroups/dev-rg/providers/"
        "Microsoft.ManagedIdentity/userAssignedIdentities/dev-identity"]
    assert identity.urn in rec.one(MANAGED_CLUSTER).dependencies


def test_kms_key_vault_key_and_role():
    _, rec = cluster_inputs(tags={"env": "dev"})
    vault = rec.one(VAULT, "dev-kms-vault")
    assert vault.inputs == {
        "vaultName": VAULT_NAME, "resourceGroupName": "dev-rg", "location": "westeurope", "tags": {"env": "dev"},
        "properties": {
            "tenantId": AZURE_TENANT_ID, "sku": {"family": "A", "name": "standard"},
            "enableRbacAuthorization": True, "enableSoftDelete": True, "softDeleteRetentionInDays": 90,
            "enablePurgeProtection": True, "networkAcls": {"defaultAction": "Allow", "bypass": "AzureServices"}}}
    key = rec.one(KEY, "dev-kms-key")
    assert key.inputs == {"vaultName": VAULT_NAME, "resourceGroupName": "dev-rg", "keyName": "aks-kms",
                          "properties": {"kty": "RSA", "keySize": 2048, "keyOps": ["encrypt", "decrypt"]}}
    role = rec.one(ROLE, "dev-kms-crypto-user")
    assert role.inputs == {
        "principalId": "00000000-0000-0000-0000-0000000000a1", "principalType": "ServicePrincipal",
        "roleDefinitionId": f"/subscriptions/{AZURE_SUBSCRIPTION_ID}/providers/Microsoft.Authorization/"
                            f"roleDefinitions/{KEY_VAULT_CRYPTO_USER_ROLE}",
        "scope": f"/subscriptions/{AZURE_SUBSCRIPTION_ID}/resourceGroups/dev-rg/providers/Microsoft.KeyVault/"
                 f"vaults/{VAULT_NAME}"}
    assert KEY_VAULT_CRYPTO_USER_ROLE == "12338af0-0e69-4776-bea7-57ae8d297424"
    # AKS supports deleting none of them while Secrets may still be encrypted with the key.
    assert vault.retain_on_delete and key.retain_on_delete and role.retain_on_delete
    cluster = rec.one(MANAGED_CLUSTER)
    assert {role.urn, key.urn} <= set(cluster.dependencies)
    parent = rec.one("gpuplatform:index:AksCluster", "dev").urn
    assert vault.parent == key.parent == role.parent == parent


def test_secrets_encryption_opt_out_removes_kms_entirely():
    inputs, rec = cluster_inputs(secrets_encryption=False)
    assert rec.of_type(VAULT) == [] and rec.of_type(KEY) == []
    assert [r.name for r in rec.of_type(ROLE)] == ["dev-subnet-network-contributor"]
    assert inputs["securityProfile"] == {"workloadIdentity": {"enabled": True}}


def test_allowed_cidrs_give_a_restricted_public_endpoint():
    inputs, _ = cluster_inputs(api_allowed_cidrs=["203.0.113.0/24"])
    assert inputs["apiServerAccessProfile"] == {"authorizedIPRanges": ["203.0.113.0/24"]}


def test_admin_groups_reach_the_aad_profile():
    inputs, _ = cluster_inputs(admin_group_object_ids=[GROUP_ID])
    assert inputs["aadProfile"] == {"managed": True, "enableAzureRBAC": True, "adminGroupObjectIDs": [GROUP_ID]}


# --- stack keys reach the component -----------------------------------------------------------------------------


def test_stack_defaults_are_secure():
    inputs, rec = stack_cluster()
    assert inputs["apiServerAccessProfile"] == {"enablePrivateCluster": True}
    assert inputs["securityProfile"]["azureKeyVaultKms"]["keyId"] == KEY_URI
    assert inputs["aadProfile"] == {"managed": True, "enableAzureRBAC": True}
    assert len(rec.of_type(VAULT)) == 1


# stack key -> (value, the ManagedCluster input it changes, the expected value of that input)
STACK_KEYS = {
    "apiAllowedCidrs": (["203.0.113.0/24", "198.51.100.7/32"], "apiServerAccessProfile",
                        {"authorizedIPRanges": ["203.0.113.0/24", "198.51.100.7/32"]}),
    "secretsEncryption": (False, "securityProfile", {"workloadIdentity": {"enabled": True}}),
    "adminGroupObjectIds": ([GROUP_ID], "aadProfile",
                            {"managed": True, "enableAzureRBAC": True, "adminGroupObjectIDs": [GROUP_ID]}),
}


@pytest.mark.parametrize("key", sorted(STACK_KEYS))
def test_every_security_key_changes_the_plan(key):
    value, field, expected = STACK_KEYS[key]
    default, _ = stack_cluster()
    inputs, _ = stack_cluster(**{key: value})
    assert inputs[field] == expected
    assert default[field] != expected


def test_options_carry_the_control_plane():
    options = parse_config({"cloud": "azure", "region": "westeurope", "nodePools": [dict(A100)],
                            "apiAllowedCidrs": ["203.0.113.0/24"], "secretsEncryption": False,
                            "adminGroupObjectIds": [GROUP_ID]}, "s").cluster_options
    assert options.control_plane.api_allowed_cidrs == ("203.0.113.0/24",)
    assert options.control_plane.secrets_encryption is False
    assert options.admin_group_object_ids == (GROUP_ID,)


# --- refusals -------------------------------------------------------------------------------------------------------


def refused(program, line: str) -> None:
    with pytest.raises(ConfigError, match=f"^{re.escape(line)}$"):
        run_program(program)


COMPONENT_MISUSE = {
    "bad CIDR": (
        {"api_allowed_cidrs": ["203.0.113.1/24"]},
        "AksCluster dev: api_allowed_cidrs[0]: '203.0.113.1/24' is not an IPv4 CIDR block such as 203.0.113.0/24 "
        "(203.0.113.1/24 has host bits set)"),
    "CIDR twice": (
        {"api_allowed_cidrs": ["203.0.113.0/24", "203.0.113.0/24"]},
        "AksCluster dev: api_allowed_cidrs: lists a CIDR twice"),
    "load balancer range beside others": (
        {"api_allowed_cidrs": ["0.0.0.0/32", "203.0.113.0/24"]},
        "AksCluster dev: api_allowed_cidrs: lists 0.0.0.0/32 (AKS: only the cluster's load balancer outbound IP) "
        "beside other ranges; AKS accepts it only on its own"),
    "bad group id": (
        {"admin_group_object_ids": ["platform-admins"]},
        "AksCluster dev: admin_group_object_ids[0]: 'platform-admins' is not an Entra ID group object ID (a GUID "
        "such as 00000000-0000-0000-0000-000000000000)"),
    "group id twice": (
        {"admin_group_object_ids": [GROUP_ID, GROUP_ID.upper()]},
        "AksCluster dev: admin_group_object_ids: lists an ID twice"),
    "encryption not a bool": (
        {"secrets_encryption": "yes"},
        "AksCluster dev: secrets_encryption: must be true or false, got 'yes'"),
}


@pytest.mark.parametrize("case", sorted(COMPONENT_MISUSE))
def test_component_misuse_is_one_line_before_any_resource(case, monkeypatch):
    args, line = COMPONENT_MISUSE[case]
    registered: list[str] = []
    init = pulumi.ComponentResource.__init__

    def recording_init(self, t, name, *a, **kw):
        if t.startswith("gpuplatform:"):
            registered.append(name)
        init(self, t, name, *a, **kw)

    monkeypatch.setattr(pulumi.ComponentResource, "__init__", recording_init)
    refused(lambda: AksCluster("dev", {"location": "westeurope", **args}), line)
    assert registered == []


STACK_MISUSE = {
    "bad CIDR": ({"apiAllowedCidrs": ["10.0.0.0/33"]}, "s: apiAllowedCidrs[0]: '10.0.0.0/33' is not an IPv4 CIDR "
                                                      "block such as 203.0.113.0/24 ('33' is not a valid netmask)"),
    "load balancer range beside others": (
        {"apiAllowedCidrs": ["203.0.113.0/24", "0.0.0.0/32"]},
        "s: apiAllowedCidrs: lists 0.0.0.0/32 (AKS: only the cluster's load balancer outbound IP) beside other "
        "ranges; AKS accepts it only on its own"),
    "bad group id": ({"adminGroupObjectIds": [GROUP_ID, "1234"]},
                     "s: adminGroupObjectIds[1]: '1234' is not an Entra ID group object ID (a GUID such as "
                     "00000000-0000-0000-0000-000000000000)"),
    "group id twice": ({"adminGroupObjectIds": [GROUP_ID, GROUP_ID]}, "s: adminGroupObjectIds: lists an ID twice"),
    "groups not a list": ({"adminGroupObjectIds": GROUP_ID}, "s: adminGroupObjectIds: must be a list, got str"),
}


@pytest.mark.parametrize("case", sorted(STACK_MISUSE))
def test_stack_misuse_is_one_line_naming_the_key(case):
    keys, line = STACK_MISUSE[case]
    with pytest.raises(ConfigError) as err:
        parse_config({"cloud": "azure", "region": "westeurope", "nodePools": [dict(A100)], **keys}, "s")
    assert str(err.value) == line
