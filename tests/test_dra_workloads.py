"""The reference workloads on DRA pools: GPUs claimed through ResourceClaimTemplates (no ``nvidia.com/gpu``), a
ComputeDomain and one NVLink clique per training run where NVLink spans nodes, arm64 placement; device-plugin pools
unchanged."""

import pytest

from gpu_platform import labels
from gpu_platform.health.health_placement import healthy_node_affinity
from gpu_platform.plan import render_manifests
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.schemas import ManifestError, validate_manifest
from gpu_platform.serving import inference_objects as iobj
from gpu_platform.serving.workloads import InferenceService
from gpu_platform.testing import run_program
from gpu_platform.training import training_objects as tobj
from gpu_platform.training.workload import TrainingWorkload

# A GB200 NVL72 rack: 18 nodes of 4 GPUs, one 72-GPU NVLink domain, Grace (arm64) CPUs. The catalog has no gb200
# model yet: b200 stands in (the bodies depend on the pool's figures, not the model).
RACK = GpuPool("rack", "aws", "p6e-gb200.36xlarge", "b200", 4, 186, 18, 18, gpu_allocation="dra",
               architecture="arm64", nvlink_domain_gpus=72)
# The same rack as an existing cluster's pool: components check specs against the catalog, which lacks the shape.
RACK_EXISTING = GpuPool("rack", "existing", "", "b200", 4, 186, 18, 18, gpu_allocation="dra", architecture="arm64",
                        nvlink_domain_gpus=72)
H100_DRA = GpuPool("h100dra", "aws", "p5.48xlarge", "h100", 8, 80, 2, 2, gpu_allocation="dra")
H100 = GpuPool("h100", "aws", "p5.48xlarge", "h100", 8, 80, 2, 2)
MIG_DRA = GpuPool("migdra", "aws", "p4d.24xlarge", "a100-40gb", 8, 40, 0, 1, sharing=Sharing("mig", 1, "1g.5gb"),
                  gpu_allocation="dra")

JOB = "kubernetes:batch/v1:Job"
CRON_JOB = "kubernetes:batch/v1:CronJob"
CLAIM_TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
COMPUTE_DOMAIN = "kubernetes:resource.nvidia.com/v1beta1:ComputeDomain"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
MANAGED = {"app.kubernetes.io/managed-by": "gpu-platform"}


def train(pool, **extra):
    args = {"pool": pool.spec(), "namespace": "research", "gpu_quota": 24, "local_queue": "gpu", **extra}
    return run_program(lambda: TrainingWorkload("training", args))


def pod_specs(rec):
    """(Job's, CronJob's) pod specs."""
    return (rec.one(JOB).inputs["spec"]["template"]["spec"],
            rec.one(CRON_JOB).inputs["spec"]["jobTemplate"]["spec"]["template"]["spec"])


def plan(pool, nodes=2, gpus_per_pod=4):
    return tobj.TrainingPlan(namespace="research", pool=pool, nodes=nodes, gpus_per_pod=gpus_per_pod, image="img",
                             local_queue="gpu", topology_level=None, job_priority_class="medium-priority",
                             retrain_priority_class="high-priority", schedule="0 3 * * 0", checkpoint_size="100Gi",
                             checkpoint_storage_class=None)


def claim_template(name, namespace, exactly, app):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace, "labels": {**MANAGED, "app.kubernetes.io/name": app}},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}}


# ---------------------------------------------------------------------------------------------------------
# Training: sizing


def test_pool_figures():
    assert (RACK.dra, RACK.multi_node_nvlink, RACK.nvlink_domain_nodes) == (True, True, 18)
    assert (H100_DRA.dra, H100_DRA.multi_node_nvlink) == (True, False)


def test_the_job_never_spans_more_nodes_than_one_nvlink_domain(monkeypatch):
    assert tobj.size(RACK, 24) == (2, 4)
    assert tobj.size(H100_DRA, 24) == (2, 8)
    # A partition of 6 GPUs holds one 4-GPU node: the job stays on it whatever the quota.
    partition = GpuPool("part", "aws", "p6e-gb200.36xlarge", "b200", 4, 186, 4, 4, gpu_allocation="dra",
                        architecture="arm64", nvlink_domain_gpus=6)
    assert partition.nvlink_domain_nodes == 1
    assert tobj.size(partition, 24) == (1, 4)
    # With the reference job's own cap lifted, the domain (18 nodes of the rack) is the cap.
    monkeypatch.setattr(tobj, "MAX_NODES", 64)
    assert tobj.size(RACK, 1000) == (18, 4)
    assert tobj.size(H100_DRA, 1000) == (2, 8)  # NVLink inside the node: the pool's size caps it
    # A device-plugin pool knows nothing of cliques: not capped by them.
    plain_rack = GpuPool("plain", "aws", "p6e-gb200.36xlarge", "b200", 4, 186, 32, 32, nvlink_domain_gpus=72)
    assert tobj.size(plain_rack, 1000) == (32, 4)


# ---------------------------------------------------------------------------------------------------------
# Training on a rack (DRA, multi-node NVLink, arm64)


def test_rack_registers_the_claim_template_and_a_compute_domain_per_workload_before_the_jobs():
    rec = train(RACK_EXISTING)
    component = rec.one("gpuplatform:index:TrainingWorkload", "training")
    assert {(r.type, r.name) for r in rec.children_of(component)} == {
        ("kubernetes:core/v1:ConfigMap", "training-script"),
        ("kubernetes:core/v1:PersistentVolumeClaim", "training-checkpoints"),
        ("kubernetes:core/v1:Service", "training-ranks"),
        (CLAIM_TEMPLATE, "training-gpu-claims"),
        (COMPUTE_DOMAIN, "training-job-compute-domain"),
        (COMPUTE_DOMAIN, "training-retrain-compute-domain"),
        (JOB, "training-job"),
        (CRON_JOB, "training-retrain"),
    }
    claims = rec.one(CLAIM_TEMPLATE, "training-gpu-claims")
    job_domain = rec.one(COMPUTE_DOMAIN, "training-job-compute-domain")
    retrain_domain = rec.one(COMPUTE_DOMAIN, "training-retrain-compute-domain")
    job, cron = rec.one(JOB), rec.one(CRON_JOB)
    assert {claims.urn, job_domain.urn} <= set(job.dependencies)
    assert retrain_domain.urn not in job.dependencies
    assert {claims.urn, retrain_domain.urn} <= set(cron.dependencies)
    assert job_domain.urn not in cron.dependencies

    assert claims.inputs == claim_template(
        "reference-training-gpus", "research",
        {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 4}, "reference-training")
    for domain, workload in ((job_domain, "reference-training"), (retrain_domain, "reference-retraining")):
        assert domain.inputs == {
            "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
            "metadata": {"name": f"{workload}-domain", "namespace": "research",
                         "labels": {**MANAGED, "app.kubernetes.io/name": "reference-training"},
                         "annotations": {"pulumi.com/skipAwait": "true"}},
            "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": f"{workload}-imex-channel"},
                                                "allocationMode": "Single"}},
        }


def test_rack_ranks_claim_gpus_and_their_imex_channel_instead_of_nvidia_gpu():
    rec = train(RACK_EXISTING)
    for spec, workload in zip(pod_specs(rec), ("reference-training", "reference-retraining"), strict=True):
        [container] = spec["containers"]
        assert container["resources"] == {
            "requests": {"cpu": "8", "memory": "32Gi"},
            "limits": {"cpu": "8", "memory": "32Gi"},
            "claims": [{"name": "gpus"}, {"name": "imex-channel"}],
        }
        assert spec["resourceClaims"] == [
            {"name": "gpus", "resourceClaimTemplateName": "reference-training-gpus"},
            {"name": "imex-channel", "resourceClaimTemplateName": f"{workload}-imex-channel"},
        ]
        assert container["args"][:2] == ["--nnodes=2", "--nproc-per-node=4"]
    job = rec.one(JOB).inputs
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == 2
    # Kueue still gang-admits it.
    assert job["metadata"]["labels"][labels.KUEUE_QUEUE_LABEL] == "gpu" and job["spec"]["suspend"] is True


def test_rack_ranks_stay_in_one_nvlink_clique_on_arm64_nodes():
    rec = train(RACK_EXISTING)
    for spec in pod_specs(rec):
        assert spec["nodeSelector"] == {"gpu-platform.io/pool": "rack", "kubernetes.io/arch": "arm64"}
        assert spec["affinity"] == {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "nvidia.com/gpu.clique", "operator": "Exists"},
                                      # and never on a node that failed its health check (`health_placement`)
                                      {"key": "gpu-platform.io/health-check", "operator": "NotIn",
                                       "values": ["failed"]}]}]}},
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "reference-training",
                                                  "gpu-platform.io/team": "research"}},
                "matchLabelKeys": ["batch.kubernetes.io/job-name"],
                "topologyKey": "nvidia.com/gpu.clique",
            }]},
        }
    # Kueue's topology-aware scheduling ignores DRA devices: no topology request.
    template = rec.one(JOB).inputs["spec"]["template"]
    assert "annotations" not in template["metadata"]


def test_rack_training_manifests_validate():
    manifests = render_manifests(train(RACK_EXISTING))
    assert sorted(m["kind"] for m in manifests) == [
        "ComputeDomain", "ComputeDomain", "ConfigMap", "CronJob", "Job", "PersistentVolumeClaim",
        "ResourceClaimTemplate", "Service"]
    for obj in manifests:
        validate_manifest(obj, "1.34")


# ---------------------------------------------------------------------------------------------------------
# Training on an ordinary DRA pool (NVLink inside the node)


def test_dra_pool_claims_a_node_of_gpus_without_a_compute_domain():
    rec = train(H100_DRA)
    assert rec.of_type(COMPUTE_DOMAIN) == []
    claims = rec.one(CLAIM_TEMPLATE, "training-gpu-claims")
    assert claims.inputs == claim_template(
        "reference-training-gpus", "research",
        {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 8}, "reference-training")
    for spec in pod_specs(rec):
        [container] = spec["containers"]
        assert container["resources"] == {"requests": {"cpu": "16", "memory": "64Gi"},
                                          "limits": {"cpu": "16", "memory": "64Gi"},
                                          "claims": [{"name": "gpus"}]}
        assert spec["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "reference-training-gpus"}]
        assert spec["affinity"] == healthy_node_affinity()  # no clique: NVLink is inside the node
        assert spec["nodeSelector"] == {"gpu-platform.io/pool": "h100dra"}
    assert claims.urn in rec.one(JOB).dependencies and claims.urn in rec.one(CRON_JOB).dependencies
    for obj in render_manifests(rec):
        validate_manifest(obj, "1.34")


def test_dra_mig_pool_claims_one_instance_of_the_profile():
    body = tobj.gpu_claim_template(plan(MIG_DRA, nodes=1, gpus_per_pod=1))
    assert body == claim_template("reference-training-gpus", "research", {
        "deviceClassName": "mig.nvidia.com", "allocationMode": "ExactCount", "count": 1,
        "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"}}]},
        "reference-training")
    validate_manifest(body, "1.34")
    assert tobj.compute_domain(plan(MIG_DRA), tobj.NAME) is None


# ---------------------------------------------------------------------------------------------------------
# Device-plugin pools: unchanged


def test_device_plugin_pool_asks_nvidia_gpu_and_gets_no_dra_objects():
    rec = train(H100)
    assert rec.of_type(CLAIM_TEMPLATE) == [] and rec.of_type(COMPUTE_DOMAIN) == []
    for spec in pod_specs(rec):
        assert "resourceClaims" not in spec and spec["affinity"] == healthy_node_affinity()
        [container] = spec["containers"]
        assert container["resources"] == {"requests": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8"},
                                          "limits": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8"}}
        assert spec["nodeSelector"] == {"gpu-platform.io/pool": "h100"}
    assert tobj.gpu_claim_template(plan(H100)) is None and tobj.compute_domain(plan(H100), tobj.NAME) is None


def test_arm64_device_plugin_pool_selects_the_architecture_too():
    grace_hopper = GpuPool("gh200", "existing", "", "h100", 1, 96, 1, 1, architecture="arm64")
    spec = pod_specs(train(grace_hopper, gpu_quota=2))[0]
    [container] = spec["containers"]
    assert spec["nodeSelector"] == {"gpu-platform.io/pool": "gh200", "kubernetes.io/arch": "arm64"}
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"


# ---------------------------------------------------------------------------------------------------------
# Inference


def inference_spec(pool, **kw):
    return iobj.InferenceSpec(pool=pool, prometheus_url="http://prometheus.monitoring:9090",
                              monitoring_namespace="monitoring", **kw)


@pytest.mark.parametrize("pool", [H100_DRA, RACK], ids=["h100", "rack"])
def test_inference_pod_claims_one_gpu_and_nothing_else_changes(pool):
    dra = iobj.deployment(inference_spec(pool))
    plugin = iobj.deployment(inference_spec(GpuPool(pool.name, pool.cloud, pool.instance_type, pool.gpu_model,
                                                    pool.gpus_per_node, pool.gpu_memory_gib, pool.min_nodes,
                                                    pool.max_nodes)))
    pod, expected = dra["spec"]["template"]["spec"], plugin["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "sentiment-gpu"}]
    [container], [plugin_container] = pod["containers"], expected["containers"]
    cpu, memory = iobj.default_requests(pool)
    assert container["resources"] == {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory},
                                      "claims": [{"name": "gpus"}]}
    # Everything else is the device-plugin pool's Deployment: probes, security, placement, rollout.
    assert {**container, "resources": None} == {**plugin_container, "resources": None}
    assert {**pod, "containers": None, "resourceClaims": None} == {**expected, "containers": None,
                                                                     "resourceClaims": None}
    assert {**dra["spec"], "template": None} == {**plugin["spec"], "template": None}
    # The app's image is not known to be multi-arch: no arm64 selector on the rack (the lead decides).
    assert pod["nodeSelector"] == {"gpu-platform.io/pool": pool.name}
    assert iobj.scaled_object(inference_spec(pool)) == iobj.scaled_object(inference_spec(H100))
    validate_manifest(dra, "1.34")


def test_inference_claim_template_is_one_device_of_the_pool_class():
    assert iobj.gpu_claim_template(inference_spec(H100_DRA)) == {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "sentiment-gpu", "namespace": "inference",
                     "labels": {**MANAGED, "app.kubernetes.io/name": "sentiment"}},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1}}]}}},
    }
    mig = iobj.gpu_claim_template(inference_spec(MIG_DRA, name="mig-app", namespace="apps"))
    assert mig["metadata"]["name"] == "mig-app-gpu" and mig["metadata"]["namespace"] == "apps"
    assert mig["spec"]["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "mig.nvidia.com", "allocationMode": "ExactCount", "count": 1,
        "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"}}]}
    assert iobj.gpu_claim_template(inference_spec(H100)) is None
    assert "resourceClaims" not in iobj.deployment(inference_spec(H100))["spec"]["template"]["spec"]


@pytest.mark.parametrize("pool", [H100_DRA, RACK_EXISTING], ids=["h100", "rack"])
def test_inference_component_registers_the_claim_template_before_the_deployment(pool):
    rec = run_program(lambda: InferenceService("inf", {"pool": pool.spec()}))
    component = rec.one("gpuplatform:index:InferenceService", "inf")
    claims = rec.one(CLAIM_TEMPLATE, "inf-gpu-claims")
    assert claims.parent == component.urn
    assert claims.inputs["metadata"]["name"] == "sentiment-gpu"
    assert claims.inputs["metadata"]["namespace"] == "inference"
    namespace, deployment = rec.one("kubernetes:core/v1:Namespace"), rec.one(DEPLOYMENT)
    assert namespace.urn in claims.dependencies
    assert claims.urn in deployment.dependencies
    [container] = deployment.inputs["spec"]["template"]["spec"]["containers"]
    assert "nvidia.com/gpu" not in container["resources"]["requests"]
    assert "nvidia.com/gpu" not in container["resources"]["limits"]
    for obj in render_manifests(rec):
        validate_manifest(obj, "1.34")


def test_inference_component_on_a_device_plugin_pool_has_no_claim_template():
    rec = run_program(lambda: InferenceService("inf", {"pool": H100.spec()}))
    assert rec.of_type(CLAIM_TEMPLATE) == []


# ---------------------------------------------------------------------------------------------------------
# No DRA pod anywhere asks for nvidia.com/gpu; the schemas are strict


def test_no_dra_pod_asks_for_the_device_plugin_resource():
    for rec in (train(RACK_EXISTING), train(H100_DRA), run_program(lambda: InferenceService("inf", {
            "pool": H100_DRA.spec()}))):
        for obj in render_manifests(rec):
            if obj["kind"] not in ("Job", "CronJob", "Deployment"):
                continue
            spec = obj["spec"]["jobTemplate"]["spec"] if obj["kind"] == "CronJob" else obj["spec"]
            for container in spec["template"]["spec"]["containers"]:
                for amounts in (container["resources"]["requests"], container["resources"]["limits"]):
                    assert not any(key.startswith("nvidia.com/") for key in amounts), (obj["kind"], amounts)


def test_the_dra_schemas_are_enforced():
    body = tobj.gpu_claim_template(plan(H100_DRA, gpus_per_pod=8))
    body["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = "eight"
    with pytest.raises(ManifestError, match="ResourceClaimTemplate/reference-training-gpus"):
        validate_manifest(body, "1.34")
    domain = tobj.compute_domain(plan(RACK), tobj.NAME)
    domain["spec"]["channel"]["allocationMode"] = "Many"
    with pytest.raises(ManifestError, match="ComputeDomain/reference-training-domain"):
        validate_manifest(domain, "1.34")
