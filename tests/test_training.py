"""The reference training workload: gang-admitted indexed Job, retraining CronJob, retained checkpoints, and the
training program itself, run with torchrun on CPU."""

import os
import subprocess
import sys

import pytest

from gpu_platform import labels, versions
from gpu_platform.errors import ConfigError
from gpu_platform.labels import Taint
from gpu_platform.optimizer.local_prometheus import free_port
from gpu_platform.plan import render_manifests
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.schemas import validate_manifest
from gpu_platform.testing import run_program
from gpu_platform.training import training_objects as tobj
from gpu_platform.training import training_script
from gpu_platform.training.workload import TrainingWorkload

EFA_POOL = GpuPool("h100-train", "aws", "p5.48xlarge", "h100", 8, 80, 2, 2, rdma_fabric="efa", rdma_interfaces=32,
                   user_taints=(Taint("dedicated", "training"),), nccl_env=(("FI_PROVIDER", "efa"),))
ROCE_POOL = GpuPool("h100-train", "oci", "BM.GPU.H100.8", "h100", 8, 80, 0, 4, rdma_fabric="roce",
                    rdma_interfaces=16, nccl_env=(("NCCL_DEBUG", "INFO"), ("NCCL_IB_GID_INDEX", "3")),
                    rdma_pod_annotations=(("k8s.v1.cni.cncf.io/networks", "sriov-rdma"),))
PLAIN_POOL = GpuPool("l4", "gcp", "g2-standard-8", "l4", 1, 24, 0, 4)


def build(pool=EFA_POOL, **extra):
    args = {"pool": pool.spec(), "namespace": "research", "gpu_quota": 24, "local_queue": "gpu", **extra}
    return run_program(lambda: TrainingWorkload("training", args))


def test_size_fits_the_team_quota():
    assert tobj.size(EFA_POOL, 24) == (2, 8)
    assert tobj.size(EFA_POOL, 8) == (1, 8)
    assert tobj.size(EFA_POOL, 4) == (1, 4)
    assert tobj.size(EFA_POOL, 0) is None
    shared = GpuPool("ts", "aws", "g6.xlarge", "l4", 1, 24, 0, 3, sharing=Sharing("time-slicing", 4))
    assert tobj.size(shared, 8) == (2, 1)  # one shared GPU per pod
    mig = GpuPool("mig", "aws", "p4d.24xlarge", "a100-40gb", 8, 40, 0, 1, sharing=Sharing("mig", 1, "1g.5gb"))
    assert tobj.size(mig, 8) == (1, 1)


def test_job_is_indexed_gang_sized_and_suspended_for_kueue():
    job = build().one("kubernetes:batch/v1:Job").inputs
    meta, spec = job["metadata"], job["spec"]
    assert meta["labels"][labels.KUEUE_QUEUE_LABEL] == "gpu"
    assert meta["labels"][labels.KUEUE_PRIORITY_LABEL] == "medium-priority"
    assert meta["annotations"] == {"pulumi.com/skipAwait": "true"}  # it waits in the queue
    assert (spec["suspend"], spec["completionMode"], spec["completions"], spec["parallelism"]) == (
        True, "Indexed", 2, 2)


def test_pods_land_on_the_training_pool_with_gpus_and_efa():
    pod = build().one("kubernetes:batch/v1:Job").inputs["spec"]["template"]
    spec = pod["spec"]
    assert spec["nodeSelector"] == {"gpu-platform.io/pool": "h100-train"}
    assert spec["tolerations"] == EFA_POOL.tolerations
    assert spec["priorityClassName"] == "medium-priority"
    assert spec["subdomain"] == "reference-training"
    [container] = spec["containers"]
    assert container["image"] == versions.TRAINING_IMAGE.reference == (
        "nvcr.io/nvidia/pytorch:26.06-py3@sha256:43c018d6a12963f1a1bad85ef8574b5c2a978eec2be0ebcacfb87f69e0d210e1")
    assert container["resources"]["limits"] == {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8",
                                                "vpc.amazonaws.com/efa": "32"}
    assert container["resources"]["requests"] == container["resources"]["limits"]
    assert container["args"] == ["--nnodes=2", "--nproc-per-node=8", "--node-rank=$(JOB_COMPLETION_INDEX)",
                                 "--master-addr=$(JOB_NAME)-0.reference-training", "--master-port=29500",
                                 "/scripts/train.py"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["FI_PROVIDER"] == "efa" and env["CHECKPOINT_DIR"] == "/checkpoints/$(JOB_NAME)"


@pytest.mark.parametrize("pool", [EFA_POOL, ROCE_POOL, PLAIN_POOL], ids=["efa", "roce", "plain"])
def test_ranks_run_hardened_without_a_token_on_every_pool(pool):
    """Non-root 10001, read-only root, nothing added back on RDMA pools either; writes go to emptyDirs only."""
    rec = build(pool, gpu_quota=8)
    for spec in (rec.one("kubernetes:batch/v1:Job").inputs["spec"]["template"]["spec"],
                 rec.one("kubernetes:batch/v1:CronJob").inputs["spec"]["jobTemplate"]["spec"]["template"]["spec"]):
        assert spec["automountServiceAccountToken"] is False
        assert spec["securityContext"] == {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
                                           "fsGroup": 10001, "seccompProfile": {"type": "RuntimeDefault"}}
        [container] = spec["containers"]
        assert container["securityContext"] == {
            "runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"}}
        assert container["volumeMounts"] == [
            {"name": "scripts", "mountPath": "/scripts", "readOnly": True},
            {"name": "checkpoints", "mountPath": "/checkpoints"},
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "tmp", "mountPath": "/tmp"}]
        assert spec["volumes"][2:] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}},
                                       {"name": "tmp", "emptyDir": {"sizeLimit": "8Gi"}}]
        assert {e["name"]: e.get("value") for e in container["env"]}["HOME"] == "/tmp"


def test_rdma_annotations_and_pool_nccl_settings_win():
    pod = build(ROCE_POOL).one("kubernetes:batch/v1:Job").inputs["spec"]["template"]
    assert pod["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "sriov-rdma"}
    [container] = pod["spec"]["containers"]
    names = [e["name"] for e in container["env"]]
    assert len(names) == len(set(names))
    assert {e["name"]: e.get("value") for e in container["env"]}["NCCL_DEBUG"] == "INFO"
    assert container["resources"]["limits"]["rdma/roce"] == "16"


def test_non_rdma_pool_requests_only_gpus():
    container = build(PLAIN_POOL, gpu_quota=2).one("kubernetes:batch/v1:Job").inputs["spec"]["template"]["spec"][
        "containers"][0]
    assert container["resources"]["limits"] == {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}


def test_topology_aware_pool_asks_for_a_preferred_level():
    pod = build(topology_level="topology.kubernetes.io/zone").one("kubernetes:batch/v1:Job").inputs["spec"]["template"]
    assert pod["metadata"]["annotations"] == {
        "kueue.x-k8s.io/podset-preferred-topology": "topology.kubernetes.io/zone"}


def test_cron_job_retrains_at_high_priority():
    cron = build(schedule="0 1 * * *", retrain_priority_class="high-priority-h100").one(
        "kubernetes:batch/v1:CronJob").inputs
    spec = cron["spec"]
    assert (spec["schedule"], spec["concurrencyPolicy"]) == ("0 1 * * *", "Forbid")
    template = spec["jobTemplate"]
    assert template["metadata"]["labels"][labels.KUEUE_PRIORITY_LABEL] == "high-priority-h100"
    assert template["metadata"]["labels"][labels.KUEUE_QUEUE_LABEL] == "gpu"
    assert template["spec"]["suspend"] is True and template["spec"]["completionMode"] == "Indexed"
    assert template["spec"]["template"]["spec"]["priorityClassName"] == "high-priority-h100"


def test_checkpoint_claim_survives_destroy():
    rec = build(checkpoint_storage_class="azurefile-csi", checkpoint_size="500Gi")
    claim = rec.one("kubernetes:core/v1:PersistentVolumeClaim")
    assert claim.retain_on_delete is True
    assert claim.inputs["spec"] == {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "500Gi"}},
                                    "storageClassName": "azurefile-csi"}
    job = rec.one("kubernetes:batch/v1:Job")
    assert claim.urn in job.dependencies
    others = [r for r in rec if r.custom and r is not claim]
    assert not any(r.retain_on_delete for r in others)


def test_without_kueue_the_job_runs_directly():
    job = build(local_queue=None).one("kubernetes:batch/v1:Job").inputs
    assert job["spec"]["suspend"] is False
    assert labels.KUEUE_QUEUE_LABEL not in job["metadata"]["labels"]


def test_rank_pods_opt_in_to_driver_upgrades_that_wait_for_them():
    # Without Kueue the GPU Operator waits for pods carrying this label (with Kueue, for Kueue's podset label).
    for local_queue in ("gpu", None):
        template = build(local_queue=local_queue).one("kubernetes:batch/v1:Job").inputs["spec"]["template"]
        assert template["metadata"]["labels"]["gpu-platform.io/driver-upgrade"] == "wait-for-completion"


def test_manifests_validate():
    manifests = render_manifests(build())
    assert sorted(m["kind"] for m in manifests) == ["ConfigMap", "CronJob", "Job", "PersistentVolumeClaim", "Service"]
    for obj in manifests:
        validate_manifest(obj, "1.34")


def test_no_gpu_quota_is_refused():
    with pytest.raises(ConfigError) as err:
        build(gpu_quota=0)
    assert str(err.value) == "TrainingWorkload training: gpu_quota: must be >= 1, got 0"


def test_training_program_runs_distributed_and_resumes(tmp_path):
    """Two ranks under torchrun (gloo on CPU) train 4 steps; a later run resumes from the checkpoint to step 6."""
    script = tmp_path / training_script.FILE_NAME
    script.write_text(training_script.SCRIPT)
    env = {**os.environ, "CHECKPOINT_DIR": str(tmp_path / "ckpt" / "job-a"), "MODEL_WIDTH": "32",
           "CHECKPOINT_EVERY": "2", "OMP_NUM_THREADS": "1"}

    def steps_printed(command: list[str], **extra: str) -> list[str]:
        result = subprocess.run(command, env={**env, **extra}, capture_output=True, text=True, timeout=300)
        # A rank's own error sits above torchrun's summary: keep enough of both streams to see it if this fails.
        assert result.returncode == 0, f"exit {result.returncode}\nstdout: {result.stdout[-2000:]}\n" \
                                       f"stderr: {result.stderr[-8000:]}"
        return [line.split(" loss")[0] for line in result.stdout.splitlines() if line.startswith("step")]

    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", str(script)]
    assert steps_printed(torchrun, TRAIN_STEPS="4") == ["step 2/4", "step 4/4"]
    # The resumed run (a single rank started the way torchrun starts each one) continues at step 4.
    single = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
              "MASTER_PORT": str(free_port()), "TRAIN_STEPS": "6"}
    assert steps_printed([sys.executable, str(script)], **single) == ["step 6/6"]
    import torch

    state = torch.load(tmp_path / "ckpt" / "job-a" / "latest.pt")
    assert state["step"] == 6 and not (tmp_path / "ckpt" / "job-a" / "latest.pt.tmp").exists()
