"""The argument rules of the AKS components (`AksCluster`, `AksGpuNodePool`), pure: the stack file's Azure rules
(`azure_options`) restated for the components' snake_case args, so a program that imports them gets the same
refusals as a stack file (`component_args`). No cloud SDK import.
"""

from collections.abc import Mapping
from typing import Any, Optional

from ... import catalog, control_plane
from ...component_args import Args, Rule, between, choice, matching, offered_kubernetes_version
from ...errors import did_you_mean
from ...fields import ConfigError
from ...provisioning import RESERVATION
from ...upgrades import kubernetes_versions
from ...upgrades.maintenance import parse_window
from ...upgrades.pool_upgrade import argument_path, upgrade_from_args
from .names import AGENT_POOL_NAME, SYSTEM_POOL_NAME, agent_pool_name
from .options import (
    AZURE_ZONES,
    CLUSTER_NAME,
    MAX_OS_DISK_GB,
    MAX_POOL_NODES,
    RESERVED_LABEL_DOMAINS,
    RESOURCE_GROUP_NAME,
    SUBNET_ID,
    VM_SIZE,
    AzureClusterOptions,
    _check_networks,
    _spot_max_price,
    object_id_problem,
    unique_problem,
)
from .specs import (
    EVICTION_POLICIES,
    GPU_DRIVER_INSTALL,
    GPU_DRIVER_NONE,
    LINUX_OS_SKUS,
    SKU_TIERS,
    aks_lists_gpu_size,
    aks_mig_profiles,
    authorized_ranges_problem,
    capacity_reservation_group_problem,
    gb_os_sku_problem,
)
from .upgrade import check_pool_upgrade, window_problem

AUTO_SCALER_PROFILE_KEYS = (
    "balance_similar_node_groups", "daemonset_eviction_for_empty_nodes", "daemonset_eviction_for_occupied_nodes",
    "expander", "ignore_daemonsets_utilization", "max_empty_bulk_delete", "max_graceful_termination_sec",
    "max_node_provision_time", "max_total_unready_percentage", "new_pod_scale_up_delay", "ok_total_unready_count",
    "scale_down_delay_after_add", "scale_down_delay_after_delete", "scale_down_delay_after_failure",
    "scale_down_unneeded_time", "scale_down_unready_time", "scale_down_utilization_threshold", "scan_interval",
    "skip_nodes_with_local_storage", "skip_nodes_with_system_pods",
)
"""``ManagedClusterPropertiesAutoScalerProfileArgs`` fields (pulumi-azure-native 3.29.0)."""


def _spot_price_problem(value: float) -> Optional[str]:
    try:
        _spot_max_price({"spotMaxPrice": value}, "")
    except ConfigError as err:
        return err.problem
    return None


def _agent_pool_name_problem(value: str) -> Optional[str]:
    if value == SYSTEM_POOL_NAME:
        return f"'{value}' is the cluster's System pool"
    if not AGENT_POOL_NAME.match(value):
        return (f"'{value}' is not an AKS agent pool name (lower-case letters and digits, starting with a letter, "
                "at most 12)")
    return None


def _unique_zones(zones: list[str]) -> Optional[str]:
    return f"lists a zone twice: {zones}" if len(set(zones)) != len(zones) else None


POOL_RULES: dict[str, Rule] = {
    "agent_pool_name": Rule(check=_agent_pool_name_problem),
    "os_sku": choice(*LINUX_OS_SKUS),
    "gpu_driver": choice(GPU_DRIVER_INSTALL, GPU_DRIVER_NONE),
    "spot_max_price": Rule(check=_spot_price_problem),
    "spot_eviction_policy": choice(*EVICTION_POLICIES),
    "availability_zones": Rule(check=_unique_zones),
    "availability_zones[]": choice(*AZURE_ZONES),
    "os_disk_size_gb": between(30, MAX_OS_DISK_GB),
    "kubernetes_version": offered_kubernetes_version("azure"),
    "initial_nodes": between(0, MAX_POOL_NODES),
    "vnet_subnet_id": matching(SUBNET_ID.pattern, "a subnet resource ID (/subscriptions/<id>/resourceGroups/<group>/"
                                                  "providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<name>)"),
}

CLUSTER_RULES: dict[str, Rule] = {
    "kubernetes_version": offered_kubernetes_version("azure"),
    "resource_group_name": matching(RESOURCE_GROUP_NAME.pattern.strip("^$"),
                                    "a resource group name (1-90 letters, digits, '_', '-', '.', '(', ')')"),
    "cluster_name": matching(CLUSTER_NAME.pattern.replace("^", "").replace("$", ""),
                             "an AKS cluster name (1-63 letters, digits, '-', '_', starting and ending with a "
                             "letter or digit)"),
    "vnet_subnet_id": POOL_RULES["vnet_subnet_id"],
    "os_sku": choice(*LINUX_OS_SKUS),
    "system_pool_vm_size": Rule(check=lambda v: None if VM_SIZE.match(v) and ("azure", v) not in catalog.SHAPES
                                else f"'{v}' is not a CPU VM size such as Standard_D4ds_v5 (the System pool runs "
                                     "the platform's services)"),
    "system_pool_min_nodes": between(1, MAX_POOL_NODES),
    "system_pool_max_nodes": between(1, MAX_POOL_NODES),
    "sku_tier": choice(*SKU_TIERS),
    "api_allowed_cidrs": control_plane.ALLOWED_CIDRS,
    "api_allowed_cidrs[]": control_plane.CIDR,
    "admin_group_object_ids": Rule(check=lambda ids: unique_problem([i.lower() for i in ids])),
    "admin_group_object_ids[]": Rule(check=object_id_problem),
    **{f"gpu_pools[].{key}": rule for key, rule in POOL_RULES.items()},
}

_NETWORK_KEYS = {"vnetAddressSpace": "vnet_address_space", "subnetAddressPrefix": "subnet_address_prefix",
                 "podCidr": "pod_cidr", "serviceCidr": "service_cidr"}


def check_pool_entry(checker: Args, args: Mapping[str, Any], path: str = "") -> None:
    """What AKS needs of one GPU pool beyond types and ranges: spot settings on spot pools only, a MIG profile AKS
    can apply when it owns the driver, at most 1000 nodes, no AKS-reserved labels or taints."""
    at = (path + ".") if path else ""
    pool = args["pool"]
    if pool["max_nodes"] > MAX_POOL_NODES:
        checker.fail(f"{at}pool.max_nodes", f"an AKS agent pool holds at most {MAX_POOL_NODES} nodes, "
                                            f"got {pool['max_nodes']}")
    if "initial_nodes" in args and not pool["min_nodes"] <= args["initial_nodes"] <= pool["max_nodes"]:
        checker.fail(f"{at}initial_nodes", f"must be between pool.min_nodes ({pool['min_nodes']}) and "
                                           f"pool.max_nodes ({pool['max_nodes']}), got {args['initial_nodes']}")
    if not pool.get("spot"):
        for key in ("spot_max_price", "spot_eviction_policy"):
            if key in args:
                checker.fail(f"{at}{key}", f"only applies to spot pools (pool '{pool['name']}' has spot false)")
    if pool.get("provisioning") == RESERVATION and capacity_reservation_group_problem(pool.get("reservation", "")):
        checker.fail(f"{at}pool.reservation", capacity_reservation_group_problem(pool.get("reservation", "")))
    if catalog.vendor_of(pool.get("gpu_model", "")).key == catalog.AMD:
        # AKS use-amd-gpus.md: AMD pools must be created with gpuProfile.driver None, on Ubuntu only.
        if args.get("gpu_driver", GPU_DRIVER_NONE) != GPU_DRIVER_NONE:
            checker.fail(f"{at}gpu_driver", "must be 'None' on an AMD GPU pool; AKS enforces it (the AMD GPU "
                                            "Operator installs the driver)")
        if not args.get("os_sku", "Ubuntu").startswith("Ubuntu"):
            checker.fail(f"{at}os_sku", f"'{args['os_sku']}' is not supported on AMD GPU pools; AKS runs them on "
                                        "Ubuntu only")
    architecture = pool.get("architecture") or catalog.AMD64
    if not aks_lists_gpu_size(architecture) and args.get("gpu_driver") == GPU_DRIVER_INSTALL:
        checker.fail(f"{at}gpu_driver", f"AKS's GPU software does not cover {pool['instance_type']} (not among "
                                        "AKS's supported GPU sizes, use-nvidia-gpu.md); use 'None' (the GPU "
                                        "Operator installs the driver)")
    if "os_sku" in args:
        problem = gb_os_sku_problem(architecture, pool["instance_type"], args["os_sku"])
        if problem:
            checker.fail(f"{at}os_sku", problem)
    driver = args.get("gpu_driver", GPU_DRIVER_INSTALL if aks_lists_gpu_size(architecture) else GPU_DRIVER_NONE)
    if pool.get("sharing_mode") == "mig" and driver == GPU_DRIVER_INSTALL:
        supported = aks_mig_profiles(pool["gpu_model"])
        if pool.get("mig_profile") not in supported:
            listed = ", ".join(f"{p} ({v})" for p, v in supported.items()) or "none"
            checker.fail(f"{at}pool.mig_profile", f"AKS applies MIG through gpuInstanceProfile, which offers {listed} "
                                                  f"on {pool['instance_type']}; use one of them or gpu_driver 'None' "
                                                  "(the GPU Operator's MIG manager)")
    for key in pool.get("labels", {}):
        domain = key.split("/", 1)[0] if "/" in key else ""
        if domain in RESERVED_LABEL_DOMAINS or domain.endswith(".kubernetes.io"):
            checker.fail(f"{at}pool.labels.{key}", f"'{domain}/' is a prefix AKS reserves for its own node labels")
    if args.get("upgrade") is not None:
        try:
            check_pool_upgrade(upgrade_from_args(args["upgrade"], f"{at}upgrade"), f"{at}upgrade")
        except ConfigError as err:
            checker.fail(argument_path(err.path), err.problem)
    spot_taint = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
    for i, taint in enumerate(pool.get("taints", [])):
        if taint.startswith("kubernetes.azure.com/") and taint != spot_taint:
            checker.fail(f"{at}pool.taints[{i}]", f"'{taint}' is an AKS system taint; AKS sets it itself")


def check_cluster(checker: Args, args: Mapping[str, Any]) -> None:
    """`AksCluster`'s cross-field rules: networks that fit together, System pool bounds, pool and agent pool
    names unique, the cluster's own settings not overridden per pool, the InfiniBand switch only with an
    InfiniBand pool, authorized IP ranges AKS accepts."""
    raw = {stack: args[key] for stack, key in _NETWORK_KEYS.items() if key in args}
    try:
        networks = _check_networks(raw, "vnet_subnet_id" in args)
    except ConfigError as err:
        problem = err.problem.replace("vnetSubnetId", "vnet_subnet_id")
        for stack_key, key in _NETWORK_KEYS.items():
            problem = problem.replace(stack_key, key)
        checker.fail(_NETWORK_KEYS.get(err.path, err.path), problem)
    if "dns_service_ip" in args and args["dns_service_ip"] != networks["dns_service_ip"]:
        checker.fail("dns_service_ip", f"must be {networks['dns_service_ip']} (the .10 address of service_cidr "
                                       f"{networks['service_cidr']}), got {args['dns_service_ip']}")
    low = args.get("system_pool_min_nodes", AzureClusterOptions.system_pool_min_nodes)
    high = args.get("system_pool_max_nodes", max(low, AzureClusterOptions.system_pool_max_nodes))
    if high < low:
        checker.fail("system_pool_max_nodes", f"must be >= system_pool_min_nodes ({low}), got {high}")
    pools = args.get("gpu_pools", [])
    checker.unique([p["pool"]["name"] for p in pools], "gpu_pools", "pool name")
    checker.unique([p.get("agent_pool_name") or agent_pool_name(p["pool"]["name"]) for p in pools], "gpu_pools",
                   "agent pool name")
    for i, entry in enumerate(pools):
        for key in ("resource_group_name", "cluster_name"):
            if key in entry:
                checker.fail(f"gpu_pools[{i}].{key}", f"is set by AksCluster (its own {key}); remove it")
        check_pool_entry(checker, entry, f"gpu_pools[{i}]")
        if entry.get("kubernetes_version") and args.get("kubernetes_version"):
            skew = kubernetes_versions.node_skew_problem("azure", args["kubernetes_version"],
                                                         entry["kubernetes_version"])
            if skew:
                checker.fail(f"gpu_pools[{i}].kubernetes_version", skew)
        if "os_sku" not in entry:
            problem = gb_os_sku_problem(entry["pool"].get("architecture") or catalog.AMD64,
                                        entry["pool"]["instance_type"], args.get("os_sku", AzureClusterOptions.os_sku))
            if problem:
                checker.fail("os_sku", f"{problem} (gpu_pools[{i}] '{entry['pool']['name']}' takes the cluster's)")
    infiniband = any(p["pool"].get("rdma_fabric") == catalog.INFINIBAND for p in pools)
    if "register_infiniband_feature" in args and not infiniband:
        checker.fail("register_infiniband_feature", "only applies when a pool has an InfiniBand RDMA fabric "
                                                    "(rdma on Standard_ND96isr_H100_v5...)")
    try:
        window = parse_window(args.get("maintenance_window"), "maintenance_window")
    except ConfigError as err:
        checker.fail(err.path, err.problem)
    problem_at = window_problem(window)
    if problem_at is not None:
        checker.fail(f"maintenance_window.{problem_at[0]}", problem_at[1])
    problem = authorized_ranges_problem(args.get("api_allowed_cidrs", []))
    if problem:
        checker.fail("api_allowed_cidrs", problem)
    unknown = sorted(set(args.get("auto_scaler_profile", {})) - set(AUTO_SCALER_PROFILE_KEYS))
    if unknown:
        checker.fail(f"auto_scaler_profile.{unknown[0]}",
                     f"is not an AKS cluster autoscaler setting{did_you_mean(unknown[0], AUTO_SCALER_PROFILE_KEYS)}")
