"""Catalog facts and lookups."""

import pytest

from gpu_platform import catalog

REQUIRED = {
    "aws": ["g5.xlarge", "g5.48xlarge", "g6.xlarge", "g6.48xlarge", "g6e.xlarge", "g6e.48xlarge", "p4d.24xlarge",
            "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge"],
    "azure": ["Standard_NC4as_T4_v3", "Standard_NC24ads_A100_v4", "Standard_ND96asr_v4", "Standard_ND96isr_H100_v5",
              "Standard_ND96isr_H200_v5"],
    "gcp": ["g2-standard-8", "a2-highgpu-8g", "a2-ultragpu-8g", "a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g",
            "n1-standard-8"],
    "oci": ["VM.GPU.A10.1", "VM.GPU.A10.2", "BM.GPU.A10.4", "BM.GPU4.8", "BM.GPU.A100-v2.8", "BM.GPU.H100.8",
            "BM.GPU.H200.8", "BM.GPU.L40S.4"],
}


@pytest.mark.parametrize(("cloud", "name"), [(c, n) for c, names in REQUIRED.items() for n in names])
def test_required_shapes_are_catalogued(cloud, name):
    assert catalog.find_shape(cloud, name).name == name


@pytest.mark.parametrize(("cloud", "name", "gpu", "count", "fabric", "nics"), [
    ("aws", "p5.48xlarge", "h100", 8, "efa", 32),
    ("aws", "p5en.48xlarge", "h200", 8, "efa", 16),
    ("aws", "p4d.24xlarge", "a100-40gb", 8, "efa", 4),
    ("aws", "g6.xlarge", "l4", 1, None, 0),
    ("aws", "g6e.48xlarge", "l40s", 8, "efa", 4),
    ("azure", "Standard_ND96isr_H100_v5", "h100", 8, "infiniband", 8),
    ("azure", "Standard_NC24ads_A100_v4", "a100-80gb", 1, None, 0),
    ("gcp", "a3-megagpu-8g", "h100", 8, "gpudirect-tcpxo", 8),
    ("gcp", "g2-standard-8", "l4", 1, None, 0),
    ("oci", "BM.GPU.H100.8", "h100", 8, "roce", 16),
    ("oci", "VM.GPU.A10.1", "a10", 1, None, 0),
])
def test_shape_facts(cloud, name, gpu, count, fabric, nics):
    shape = catalog.find_shape(cloud, name)
    assert (shape.gpu_model, shape.gpu_count, shape.rdma_fabric, shape.rdma_interfaces) == (gpu, count, fabric, nics)


def test_gcp_accelerator_strings():
    assert catalog.find_shape("gcp", "a3-highgpu-8g").accelerator_type == "nvidia-h100-80gb"
    assert catalog.find_shape("gcp", "g2-standard-8").accelerator_type == "nvidia-l4"
    assert catalog.find_shape("gcp", "n1-standard-8").attachable_accelerators == (
        "nvidia-tesla-t4", "nvidia-tesla-v100")


def test_mig_capability_follows_the_gpu():
    assert catalog.find_shape("aws", "p5.48xlarge").mig_capable
    assert catalog.find_shape("azure", "Standard_NC24ads_A100_v4").mig_capable
    assert not catalog.find_shape("aws", "g6.xlarge").mig_capable
    assert catalog.GPU_MODELS["h100"].mig_profiles[0] == "1g.10gb"


def test_unknown_shape_suggests_nearest_names():
    with pytest.raises(catalog.UnknownShapeError, match=r"did you mean 'Standard_ND96isr_H100_v5'\?"):
        catalog.find_shape("azure", "Standard_ND96isr_H100_v4")
    assert catalog.nearest_names("aws", "p5.48xlarg")[0] == "p5.48xlarge"


def test_every_shape_has_a_known_gpu_model_or_is_attachable():
    for shape in catalog.SHAPES.values():
        assert shape.gpu is not None or shape.attachable_accelerators, shape.name
        assert shape.vcpus > 0 and shape.memory_gib > 0, shape.name
        assert (shape.rdma_fabric is None) == (shape.rdma_interfaces == 0), shape.name
