"""OCI stack configuration: the OKE keys of `clouds/oci_options.py` and every error they raise, by field path."""

import pytest

from gpu_platform.clouds.oci.options import OciClusterOptions, OciPoolOptions
from gpu_platform.config import ConfigError, parse_config
from gpu_platform.control_plane import ControlPlaneSecurity

COMPARTMENT = "ocid1.compartment.oc1..aaaaaaaaexamplecompartment"
IMAGE = "ocid1.image.oc1.iad.aaaaaaaaexampleimage"
A10 = {"name": "a10", "instanceType": "VM.GPU.A10.1", "minNodes": 0, "maxNodes": 2}
H100 = {"name": "h100", "instanceType": "BM.GPU.H100.8", "minNodes": 2, "maxNodes": 4, "rdma": True, "imageId": IMAGE}


def oci(*pools, **top):
    return {"cloud": "oci", "region": "us-ashburn-1", "compartmentId": COMPARTMENT,
            "nodePools": list(pools) or [dict(A10)], **top}


def existing_vcn(**drop):
    keys = {"vcnId": "ocid1.vcn.oc1.iad.aaaaaaaavcn", "endpointSubnetId": "ocid1.subnet.oc1.iad.aaaaaaaaapi",
            "workerSubnetId": "ocid1.subnet.oc1.iad.aaaaaaaaworkers",
            "podSubnetId": "ocid1.subnet.oc1.iad.aaaaaaaapods",
            "loadBalancerSubnetId": "ocid1.subnet.oc1.iad.aaaaaaaalb"}
    return {k: v for k, v in keys.items() if k not in drop}


def test_defaults_build_a_new_vcn_with_a_private_endpoint_and_encrypted_secrets():
    config = parse_config(oci(), "s")
    assert config.cluster_options == OciClusterOptions()
    assert config.cluster_options.vcn_cidr == "10.0.0.0/16"
    assert config.cluster_options.control_plane == ControlPlaneSecurity(api_allowed_cidrs=(), secrets_encryption=True)
    assert not config.cluster_options.control_plane.public_endpoint
    assert config.node_pools[0].cloud_options == OciPoolOptions(boot_volume_size_gib=512)
    assert config.gpu_software == "cloud-managed"


def test_pool_keys_are_parsed():
    pool = {**H100, "bootVolumeSizeGiB": 1024, "zones": ["Uocm:US-ASHBURN-AD-2"],
            "computeClusterId": "ocid1.computecluster.oc1.iad.aaaaaaaacc"}
    options = parse_config(oci(dict(A10, spot=True, zones=[1, "3"]), pool), "s").node_pools
    assert options[0].cloud_options == OciPoolOptions(availability_domains=(1, 3), preemptible=True)
    assert options[1].cloud_options == OciPoolOptions(
        image_id=IMAGE, boot_volume_size_gib=1024, availability_domains=(2,),
        compute_cluster_id="ocid1.computecluster.oc1.iad.aaaaaaaacc")


def test_cluster_keys_are_parsed():
    config = parse_config(oci(vcnCidr="10.20.0.0/16", apiAllowedCidrs=["203.0.113.0/24"], secretsEncryption=False,
                              availabilityDomains=[2, 1], kubernetesVersion="1.35",
                              kubernetesPatchVersion="v1.35.2"), "s")
    assert config.cluster_options == OciClusterOptions(
        vcn_cidr="10.20.0.0/16", availability_domains=(2, 1), kubernetes_patch_version="v1.35.2",
        control_plane=ControlPlaneSecurity(api_allowed_cidrs=("203.0.113.0/24",), secrets_encryption=False))


def test_existing_vcn_takes_all_four_subnets():
    options = parse_config(oci(**existing_vcn()), "s").cluster_options
    assert options.existing_vcn
    assert (options.worker_subnet_id, options.pod_subnet_id) == (
        "ocid1.subnet.oc1.iad.aaaaaaaaworkers", "ocid1.subnet.oc1.iad.aaaaaaaapods")


ERRORS = [
    ("rdma on a VM shape", oci(dict(A10, rdma=True)),
     "s: nodePools[0].rdma: 'VM.GPU.A10.1' has no RDMA fabric; RDMA-capable OCI shapes: BM.GPU4.8, "
     "BM.GPU.A100-v2.8, BM.GPU.H100.8, BM.GPU.H200.8, BM.GPU.B200.8, BM.GPU.MI300X.8"),
    ("rdma without an RDMA-ready image", oci({k: v for k, v in H100.items() if k != "imageId"}),
     "s: nodePools[0].imageId: is required with rdma: true; OKE's Oracle Linux GPU images have no RDMA (OFED) "
     "stack, import an RDMA-ready image (oracle-quickstart/oci-hpc-oke docs/worker-node-images.md)"),
    ("malformed image OCID", oci(dict(A10, imageId="ami-0abc")),
     "s: nodePools[0].imageId: 'ami-0abc' is not a valid OCID; expected ocid1.image.oc1..<unique id>"),
    ("OCID of another kind as image", oci(dict(A10, imageId="ocid1.subnet.oc1.iad.aaaaaaaa")),
     "s: nodePools[0].imageId: 'ocid1.subnet.oc1.iad.aaaaaaaa' is a subnet OCID; "
     "expected ocid1.image.oc1..<unique id>"),
    ("spot on bare metal", oci(dict(H100, spot=True)),
     "s: nodePools[0].spot: OCI preemptible capacity does not support bare metal shapes such as 'BM.GPU.H100.8'; "
     "use a VM.GPU shape or spot: false"),
    ("compute cluster without rdma", oci(dict(A10, computeClusterId="ocid1.computecluster.oc1.iad.aaaa")),
     "s: nodePools[0].computeClusterId: only applies with rdma: true"),
    ("RDMA pool over two availability domains", oci(dict(H100, zones=[1, 2])),
     "s: nodePools[0].zones: an RDMA pool's compute cluster lives in one availability domain, got 2"),
    ("availability domain 4", oci(dict(A10, zones=[1, 4])),
     "s: nodePools[0].zones[1]: '4' is not an availability domain; use 1, 2 or 3 or a name ending in -AD-<n>"),
    ("availability domain twice", oci(availabilityDomains=[1, "Uocm:US-ASHBURN-AD-1"]),
     "s: availabilityDomains: lists an availability domain twice: [1, 1]"),
    ("boot volume under the OCI minimum", oci(dict(A10, bootVolumeSizeGiB=40)),
     "s: nodePools[0].bootVolumeSizeGiB: must be >= 50, got 40"),
    ("boot volume over the OCI maximum", oci(dict(A10, bootVolumeSizeGiB=40000)),
     "s: nodePools[0].bootVolumeSizeGiB: must be <= 32768 (32 TB), got 40000"),
    ("misspelt pool key", oci(dict(A10, imageID=IMAGE)),
     "s: nodePools[0].imageID: unknown key; did you mean 'imageId'?"),
    ("vcnId without its subnets", oci(**existing_vcn(podSubnetId=1)),
     "s: podSubnetId: is required with vcnId (an existing VCN needs all of endpointSubnetId, workerSubnetId, "
     "podSubnetId, loadBalancerSubnetId)"),
    ("subnet without vcnId", oci(workerSubnetId="ocid1.subnet.oc1.iad.aaaaaaaaworkers"),
     "s: workerSubnetId: needs vcnId: subnets are only given together with an existing VCN"),
    ("vcnCidr with an existing VCN", oci(vcnCidr="10.1.0.0/16", **existing_vcn()),
     "s: vcnCidr: applies to the VCN the platform creates; remove it or remove vcnId"),
    ("VCN OCID of another kind", oci(**{**existing_vcn(), "vcnId": "ocid1.subnet.oc1.iad.aaaaaaaa"}),
     "s: vcnId: 'ocid1.subnet.oc1.iad.aaaaaaaa' is a subnet OCID; expected ocid1.vcn.oc1..<unique id>"),
    ("VCN too small", oci(vcnCidr="10.0.0.0/20"),
     # "too small: <why>" with a colon and "such as <example>", as on every cloud since one rule checks them all
     # (gpu_platform.cidrs); OKE used a semicolon and gave no example.
     "s: vcnCidr: '10.0.0.0/20' is too small: the API, worker, pod and load-balancer subnets need a /16 or larger"),
    ("public VCN range", oci(vcnCidr="8.8.0.0/16"), "s: vcnCidr: '8.8.0.0/16' is not a private (RFC 1918) range"),
    ("VCN CIDR with host bits", oci(vcnCidr="10.0.0.1/16"),
     "s: vcnCidr: '10.0.0.1/16' is not an IPv4 CIDR block such as 10.0.0.0/16 (10.0.0.1/16 has host bits set)"),
    ("VCN overlapping the Service CIDR", oci(vcnCidr="10.96.0.0/16"),
     "s: vcnCidr: '10.96.0.0/16' overlaps the Kubernetes Service CIDR 10.96.0.0/16"),
    ("API allow-list entry not a CIDR", oci(apiAllowedCidrs=["office"]),
     "s: apiAllowedCidrs[0]: 'office' is not an IPv4 CIDR block such as 203.0.113.0/24 (Expected 4 octets in "
     "'office')"),
    ("API allow-list entry with host bits", oci(apiAllowedCidrs=["203.0.113.7/24"]),
     "s: apiAllowedCidrs[0]: '203.0.113.7/24' is not an IPv4 CIDR block such as 203.0.113.0/24 (203.0.113.7/24 "
     "has host bits set)"),
    ("API allow-list entry twice", oci(apiAllowedCidrs=["203.0.113.0/24", "203.0.113.0/24"]),
     "s: apiAllowedCidrs: lists a CIDR twice"),
    ("secretsEncryption not a boolean", oci(secretsEncryption="yes"),
     "s: secretsEncryption: must be true or false, got 'yes'"),
    ("patch version of another minor", oci(kubernetesPatchVersion="v1.33.1"),
     "s: kubernetesPatchVersion: 'v1.33.1' does not match kubernetesVersion '1.36'"),
    ("malformed patch version", oci(kubernetesPatchVersion="1.34.1"),
     "s: kubernetesPatchVersion: '1.34.1' is not an OKE version such as v1.34.1"),
]


@pytest.mark.parametrize(("raw", "message"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_bad_oci_configuration_fails_with_its_path(raw, message):
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "s")
    assert str(err.value) == message
