"""Google Cloud TPU objects as plain bodies: the JobSet chart's values, its namespace's policies, and the example
multi-host TPU JobSet (``jobset.x-k8s.io/v1alpha2``), derived from a TPU `GpuPool`.

A multi-host TPU slice is several VMs whose chips form one ICI-connected slice: a workload runs one pod per VM,
every pod asks for all the chips of its VM (``google.com/tpu``), and the pods find each other by stable hostnames.
JobSet gives exactly that (GKE "Deploy TPU Multislice workloads" and "Deploy TPU workloads in GKE Standard" run
their multi-host examples as JobSets): one replicated Job per slice with ``parallelism = completions = hosts``, a
headless Service and per-pod hostnames/subdomain (``spec.network.enableDNSHostnames``), and the exclusive-topology
annotation that puts each Job on a node pool of its own. Fields checked against the JobSet CRD at v0.12.0
(kubernetes-sigs/jobset charts/jobset/crds/jobset.x-k8s.io_jobsets.yaml, also `crd_schemas`).

The JobSet controller itself is a CPU workload: its pods stay on the system pool (no accelerator tolerations).
"""

from typing import Any

from .. import catalog, labels
from ..kubernetes_base.common import metadata
from ..pools import GpuPool
from ..versions import JOBSET_API_VERSION

JOBSET_NAMESPACE = "jobset-system"
RELEASE_NAME = "jobset"
WEBHOOK_PORT = 9443
"""The controller's ``webhook`` container port (charts/jobset/templates/controller/deployment.yaml@v0.12.0), which
the API server calls to default and validate JobSets."""
EXCLUSIVE_TOPOLOGY_ANNOTATION = "alpha.jobset.sigs.k8s.io/exclusive-topology"
"""JobSet annotation: each child Job gets nodes of its own topology domain (here a GKE node pool = one slice)."""
GKE_NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
TPU_WORKER_PORT = 8471
"""The port TPU runtimes of a multi-host slice talk to each other on (GKE's TPU JobSet examples expose it)."""
JAX_REQUIREMENT = "jax[tpu]==0.10.2"
"""What the example installs when it starts (PyPI's newest JAX when pinned); ``jax[tpu]`` brings libtpu."""
EXAMPLE_NAME = "tpu-slice-check"


def jobset_values() -> dict[str, Any]:
    """Values of the JobSet chart: its controller's metrics stay off (``prometheus.enable``: its ServiceMonitor
    wants a client certificate secret the platform does not make) and no cert-manager (the chart's internal
    certificates serve the webhook)."""
    return {"prometheus": {"enable": False}, "certManager": {"enable": False}}


def network_policies(namespace: str) -> list[dict[str, Any]]:
    """The JobSet namespace's NetworkPolicies: ingress denied but to the webhook port (from anywhere: the managed
    control plane is outside the pod network, at addresses no selector can name)."""
    def policy(name: str, ingress: list[dict] | None) -> dict[str, Any]:
        spec: dict[str, Any] = {"podSelector": {}, "policyTypes": ["Ingress"]}
        if ingress is not None:
            spec["ingress"] = ingress
        return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": metadata(name, namespace), "spec": spec}

    return [
        policy("default-deny-ingress", None),
        policy("allow-api-server-to-webhook", [{"ports": [{"protocol": "TCP", "port": WEBHOOK_PORT}]}]),
    ]


def tpu_topology(pool: GpuPool) -> str:
    """The slice topology of a GKE TPU pool (the ``cloud.google.com/gke-tpu-topology`` label it carries)."""
    topology = pool.labels.get(catalog.GKE_TPU_TOPOLOGY_LABEL)
    if pool.vendor != catalog.GOOGLE_TPU or not topology:
        raise ValueError(f"pool '{pool.name}' is not a GKE TPU pool with a topology label")
    return topology


def slice_hosts(pool: GpuPool) -> int:
    """VMs (pods) of one slice of the pool: chips of its topology / chips per VM."""
    return max(1, catalog.tpu_chips(tpu_topology(pool)) // pool.gpus_per_node)


def tpu_node_selector(pool: GpuPool) -> dict[str, str]:
    """What a TPU pod selects: the TPU type and slice topology GKE labels the nodes with."""
    tpu_topology(pool)
    return {key: pool.labels[key] for key in (catalog.GKE_TPU_ACCELERATOR_LABEL, catalog.GKE_TPU_TOPOLOGY_LABEL)}


def multihost_jobset(pool: GpuPool, namespace: str, local_queue: str, image: str,
                     name: str = EXAMPLE_NAME) -> dict[str, Any]:
    """A JobSet that runs one pod per VM of one slice of ``pool``, each with all of its VM's chips, admitted by
    Kueue through ``local_queue``: every host installs JAX and prints the chips the whole slice sees (the pods only
    reach that count together, which checks the slice's interconnect and the pods' hostnames)."""
    hosts = slice_hosts(pool)
    chips = catalog.tpu_chips(tpu_topology(pool))
    script = (f'pip install --no-cache-dir --root-user-action=ignore "{JAX_REQUIREMENT}" && python -c '
              f'"import jax; n = jax.device_count(); print(\'TPU chips in the slice:\', n); '
              f'assert n == {chips}, n"')
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        # The workers find each other through JobSet's DNS names, never through the Kubernetes API.
        "automountServiceAccountToken": False,
        "nodeSelector": tpu_node_selector(pool),
        "tolerations": pool.tolerations,
        "containers": [{
            "name": "jax-tpu",
            "image": image,
            "command": ["bash", "-c", script],
            "ports": [{"containerPort": TPU_WORKER_PORT}],
            "resources": {"requests": {pool.resource: pool.gpus_per_node},
                          "limits": {pool.resource: pool.gpus_per_node}},
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                "seccompProfile": {"type": "RuntimeDefault"}},
        }],
    }
    return {
        "apiVersion": JOBSET_API_VERSION,
        "kind": "JobSet",
        "metadata": metadata(name, namespace, extra_labels={QUEUE_LABEL: local_queue, labels.POOL_LABEL: pool.name},
                             annotations={EXCLUSIVE_TOPOLOGY_ANNOTATION: GKE_NODE_POOL_LABEL}),
        "spec": {
            # Pods get <jobset>-<job>-<index>-<pod>.<subdomain> names through a headless Service JobSet creates.
            "network": {"enableDNSHostnames": True},
            "failurePolicy": {"maxRestarts": 3},
            "replicatedJobs": [{
                "name": "slice",
                "replicas": 1,
                "template": {"spec": {
                    "parallelism": hosts,
                    "completions": hosts,
                    "backoffLimit": 0,
                    "template": {"spec": pod_spec},
                }},
            }],
        },
    }
