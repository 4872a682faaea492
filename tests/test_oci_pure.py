"""Pure OKE decisions: cloud-init, image and version choice, NCCL settings, VCN layout and security rules."""

import base64
import ipaddress
import subprocess

import pulumi_oci as oci
import pytest

from gpu_platform import labels
from gpu_platform.clouds.oci import cloud_init as oci_cloud_init
from gpu_platform.clouds.oci import images as oci_images
from gpu_platform.clouds.oci import network as oci_network
from gpu_platform.clouds.oci import node_labels, placement_configs, select_availability_domains
from gpu_platform.clouds.oci import rdma as oci_rdma
from gpu_platform.labels import GPU_TAINT, Taint
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.testing import CALLS

OKE_INIT_FETCH = ('curl --fail -H "Authorization: Bearer Oracle" -L0 '
                  "http://169.254.169.254/opc/v2/instance/metadata/oke_init_script | base64 --decode "
                  ">/var/run/oke-init.sh")


def h100_pool(**changes) -> GpuPool:
    fields = dict(name="h100-train", cloud="oci", instance_type="BM.GPU.H100.8", gpu_model="h100", gpus_per_node=8,
                  gpu_memory_gib=80, min_nodes=2, max_nodes=4, rdma_fabric="roce", rdma_interfaces=16,
                  role="training")
    return GpuPool(**{**fields, **changes})


# ---------------------------------------------------------------------------------------------------------
# cloud-init


def test_cloud_init_registers_the_gpu_taint_and_keeps_okes_bootstrap():
    script = oci_cloud_init.render_cloud_init("a10", (GPU_TAINT,))
    lines = script.splitlines()
    assert lines[0] == "#!/bin/bash"
    assert "KUBELET_EXTRA_ARGS=--register-with-taints=nvidia.com/gpu=present:NoSchedule" in lines
    # Oracle Linux images: OKE's documented default start script, with the kubelet flags added.
    assert f"  {OKE_INIT_FETCH}" in lines
    assert '  bash /var/run/oke-init.sh --kubelet-extra-args "$KUBELET_EXTRA_ARGS"' in lines
    # Images with the oke CLI (Ubuntu OKE / oci-hpc-oke images).
    assert '  oke bootstrap --kubelet-extra-args "$KUBELET_EXTRA_ARGS"' in lines
    assert "if [ -x /usr/libexec/oci-growfs ]; then /usr/libexec/oci-growfs -y || true; fi" in lines
    assert "12-memlock.conf" not in script


def test_user_taints_follow_the_gpu_taint():
    taints = (GPU_TAINT, Taint("team", "research", "NoSchedule"), Taint("dedicated", "", "NoExecute"))
    assert oci_cloud_init.register_with_taints(taints) == (
        "--register-with-taints=nvidia.com/gpu=present:NoSchedule,team=research:NoSchedule,dedicated:NoExecute")


def test_rdma_nodes_get_unlimited_memlock_for_crio_before_bootstrap():
    script = oci_cloud_init.render_cloud_init("h100", (GPU_TAINT,), rdma=True)
    assert "cat >/etc/crio/crio.conf.d/12-memlock.conf <<'EOF'\n[crio.runtime]\ndefault_ulimits = [\n" \
           '    "memlock=-1:-1"\n]\nEOF\n' in script
    assert script.index("12-memlock.conf") < script.index("oke bootstrap")


@pytest.mark.parametrize("rdma", [False, True])
def test_cloud_init_is_valid_bash(rdma, tmp_path):
    path = tmp_path / "user_data.sh"
    path.write_text(oci_cloud_init.render_cloud_init("p", (GPU_TAINT, Taint("a", "b c", "NoSchedule")), rdma=rdma))
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0


def test_user_data_is_base64_of_the_script():
    script = oci_cloud_init.render_cloud_init("a10", (GPU_TAINT,))
    assert base64.b64decode(oci_cloud_init.user_data(script)).decode() == script


# ---------------------------------------------------------------------------------------------------------
# versions and images


def test_latest_patch_of_a_minor_version():
    assert oci_images.latest_patch_version(["v1.33.1", "v1.34.1", "v1.34.10", "v1.34.2"], "1.34") == "v1.34.10"


def test_missing_minor_version_names_what_oke_offers():
    with pytest.raises(oci_images.NoMatchingVersion,
                       match=r"^OKE offers no Kubernetes 1\.35 version here; available: v1\.33\.1, v1\.34\.1$"):
        oci_images.latest_patch_version(["v1.33.1", "v1.34.1"], "1.35")


def test_gpu_image_is_the_newest_x86_gpu_image_of_the_version():
    sources = CALLS["oci:ContainerEngine/getNodePoolOption:getNodePoolOption"]({})["sources"]
    assert oci_images.pick_gpu_image(sources, "v1.34.2") == "ocid1.image.oc1.iad.ol9-gpu-1-34-2"
    assert oci_images.pick_gpu_image(sources, "v1.33.1") == "ocid1.image.oc1.iad.ol9-gpu-1-33-1"


def test_gpu_image_ignores_cpu_arm_and_other_versions():
    sources = [
        {"image_id": "cpu", "source_name": "Oracle-Linux-8.10-2026.11.01-0-OKE-1.34.1-1"},
        {"image_id": "arm", "source_name": "Oracle-Linux-8.10-aarch64-GPU-2026.11.01-0-OKE-1.34.1-1"},
        {"image_id": "old-k8s", "source_name": "Oracle-Linux-8.10-Gen2-GPU-2026.11.01-0-OKE-1.33.1-1"},
        {"image_id": "older", "source_name": "Oracle-Linux-8.10-Gen2-GPU-2026.05.01-0-OKE-1.34.1-900"},
        {"image_id": "newer", "source_name": "Oracle-Linux-8.10-Gen2-GPU-2026.06.15-0-OKE-1.34.1-950"},
    ]
    assert oci_images.pick_gpu_image(sources, "v1.34.1") == "newer"
    with pytest.raises(oci_images.NoMatchingVersion, match="set the pool's imageId"):
        oci_images.pick_gpu_image(sources[:3], "v1.34.1")


# ---------------------------------------------------------------------------------------------------------
# NCCL over RoCEv2


def test_h100_pool_publishes_the_oci_roce_nccl_settings():
    env = dict(oci_rdma.with_roce_nccl_env(h100_pool()).nccl_env)
    assert env == {
        "NCCL_IB_GID_INDEX": "3", "NCCL_IB_TC": "41", "NCCL_IB_SL": "0", "NCCL_IB_TIMEOUT": "22",
        "NCCL_IB_SPLIT_DATA_ON_QPS": "0", "NCCL_DEBUG": "WARN", "NCCL_CUMEM_ENABLE": "0",
        "NCCL_SOCKET_IFNAME": "eth0", "NCCL_IGNORE_CPU_AFFINITY": "1",
        "NCCL_IB_HCA": "=mlx5_0,mlx5_1,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8,"
                       "mlx5_9,mlx5_10,mlx5_12,mlx5_13,mlx5_14,mlx5_15,mlx5_16,mlx5_17",
    }


@pytest.mark.parametrize(("shape", "hcas", "qps"), [
    ("BM.GPU.H200.8", 8, None), ("BM.GPU.B200.8", 8, None), ("BM.GPU4.8", 16, "4"), ("BM.GPU.A100-v2.8", 16, "4")])
def test_every_roce_shape_lists_its_rdma_nics(shape, hcas, qps):
    env = oci_rdma.nccl_env(shape)
    assert len(env["NCCL_IB_HCA"].lstrip("=").split(",")) == hcas
    assert env.get("NCCL_IB_QPS_PER_CONNECTION") == qps
    assert (env["NCCL_IB_GID_INDEX"], env["NCCL_IB_TC"]) == ("3", "41")


def test_shape_without_published_hcas_gets_the_fabric_settings_only():
    assert oci_rdma.nccl_env("BM.GPU.L40S.4") == dict(oci_rdma.ROCE_FABRIC_ENV)


def test_non_rdma_pool_is_published_unchanged():
    pool = h100_pool(rdma_fabric=None, rdma_interfaces=0)
    assert oci_rdma.with_roce_nccl_env(pool) is pool


# ---------------------------------------------------------------------------------------------------------
# network


def test_subnets_are_carved_from_the_vcn_without_overlap():
    layout = oci_network.subnet_layout("10.20.0.0/16")
    assert (layout.endpoint, layout.load_balancers, layout.workers, layout.pods) == (
        "10.20.0.0/28", "10.20.1.0/24", "10.20.16.0/20", "10.20.64.0/18")
    nets = [ipaddress.IPv4Network(c) for c in (layout.endpoint, layout.load_balancers, layout.workers, layout.pods)]
    assert all(n.subnet_of(ipaddress.IPv4Network("10.20.0.0/16")) for n in nets)
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])


def test_larger_vcn_uses_its_first_slash_16():
    assert oci_network.subnet_layout("10.64.0.0/12").pods == "10.64.64.0/18"


def test_security_rules_open_the_oke_ports():
    layout = oci_network.subnet_layout("10.0.0.0/16")
    rules = oci_network.subnet_rules(layout, ("203.0.113.0/24",))
    endpoint_in = {(r.peer, r.protocol, r.ports) for r in rules["endpoint"]["ingress"]}
    assert ("203.0.113.0/24", "6", (6443, 6443)) in endpoint_in
    assert {("10.0.16.0/20", "6", (6443, 6443)), ("10.0.16.0/20", "6", (12250, 12250)),
            ("10.0.64.0/18", "6", (6443, 6443)), ("10.0.64.0/18", "6", (12250, 12250))} <= endpoint_in
    workers_in = {(r.peer, r.protocol, r.ports) for r in rules["workers"]["ingress"]}
    assert {("10.0.1.0/24", "6", (30000, 32767)), ("10.0.1.0/24", "6", (10256, 10256)),
            ("10.0.0.0/28", "6", None)} <= workers_in
    # No allowed CIDRs: only the worker and pod subnets reach the endpoint.
    private = oci_network.subnet_rules(layout, ())
    assert {r.peer for r in private["endpoint"]["ingress"]} == {"10.0.16.0/20", "10.0.64.0/18"}


def test_security_rule_args_are_pulumi_oci_argument_names():
    layout = oci_network.subnet_layout("10.0.0.0/16")
    rules = oci_network.subnet_rules(layout, ("0.0.0.0/0",))
    label = "all-iad-services-in-oracle-services-network"
    for subnet in rules.values():
        args = oci_network.security_list_args(subnet, label)
        for rule in args["ingress_security_rules"]:
            oci.core.SecurityListIngressSecurityRuleArgs(**rule)
        for rule in args["egress_security_rules"]:
            oci.core.SecurityListEgressSecurityRuleArgs(**rule)
    osn = [r for r in oci_network.security_list_args(rules["workers"], label)["egress_security_rules"]
           if r["destination_type"] == "SERVICE_CIDR_BLOCK"]
    assert osn == [{"protocol": "6", "destination": label, "destination_type": "SERVICE_CIDR_BLOCK",
                    "stateless": False, "description": "Worker nodes to OCI services (OCIR, Object Storage)"}]
    icmp = oci_network.rule_args(oci_network.Rule("0.0.0.0/0", "1", "x", icmp=(3, 4)), "ingress", label)
    assert icmp["icmp_options"] == {"type": 3, "code": 4}


def test_all_services_entry_is_found_by_name():
    services = [{"id": "os", "name": "OCI IAD Object Storage", "cidr_block": "oci-iad-objectstorage"},
                {"id": "all", "name": "All IAD Services In Oracle Services Network",
                 "cidr_block": "all-iad-services-in-oracle-services-network"}]
    assert oci_network.all_services(services) == ("all", "all-iad-services-in-oracle-services-network")
    with pytest.raises(ValueError, match="no 'All <region> Services"):
        oci_network.all_services(services[:1])


# ---------------------------------------------------------------------------------------------------------
# placement and labels


ADS = ["Uocm:US-ASHBURN-AD-1", "Uocm:US-ASHBURN-AD-2", "Uocm:US-ASHBURN-AD-3"]


def test_availability_domains_by_number():
    assert select_availability_domains(list(reversed(ADS)), ()) == ADS
    assert select_availability_domains(ADS, (3, 1)) == [ADS[2], ADS[0]]
    with pytest.raises(ValueError, match=r"availability domain\(s\) \[2\] do not exist in this region; it has \[1\]"):
        select_availability_domains(["Xyz:EU-ZURICH-1-AD-1"], (2,))


def test_preemptible_placement_terminates_on_preemption():
    assert placement_configs(ADS[:1], "subnet", preemptible=True) == [{
        "availability_domain": ADS[0], "subnet_id": "subnet",
        "preemptible_node_config": {"preemption_action": {"type": "TERMINATE", "is_preserve_boot_volume": False}}}]
    assert placement_configs(ADS[:2], "subnet", preemptible=False) == [
        {"availability_domain": ADS[0], "subnet_id": "subnet"}, {"availability_domain": ADS[1], "subnet_id": "subnet"}]


def test_node_labels_carry_the_platform_scheme_and_the_device_plugin_switch():
    pool = h100_pool(sharing=Sharing("time-slicing", 4), user_labels=(("team", "research"),))
    assert node_labels(pool, disable_oke_device_plugin=True) == [
        {"key": "gpu-platform.io/accelerator", "value": "h100"},
        {"key": "gpu-platform.io/gpu-sharing", "value": "time-slicing"},
        {"key": "gpu-platform.io/pool", "value": "h100-train"},
        {"key": "gpu-platform.io/rdma", "value": "roce"},
        {"key": "nvidia.com/device-plugin.config", "value": "h100-train"},
        {"key": labels.OKE_DISABLE_GPU_DEVICE_PLUGIN_LABEL, "value": "true"},
        {"key": "team", "value": "research"},
    ]
    assert labels.OKE_DISABLE_GPU_DEVICE_PLUGIN_LABEL not in {
        entry["key"] for entry in node_labels(pool, disable_oke_device_plugin=False)}
