"""MultiKueue (issue 39 item 1): the ``multikueue`` section, the manager's and the worker's objects, the components
under mocks, the offline stand-ins for worker stack outputs, and the reference manager and worker stacks' plans."""

import base64
import copy
import json
import shutil
from pathlib import Path

import pulumi
import pytest
import yaml
from chart_keys import load_keys, unknown_keys
from conftest import STACKS_DIR, planned_stack

from gpu_platform import plan, versions
from gpu_platform.config import ConfigError, parse_config
from gpu_platform.pools import GpuPool
from gpu_platform.scheduling import kueue_objects as ko
from gpu_platform.scheduling import multikueue_config as mc
from gpu_platform.scheduling import multikueue_objects as mo
from gpu_platform.scheduling.multikueue import MultiKueueManager, MultiKueueWorkerAccess
from gpu_platform.schemas import ManifestError, validate_manifest
from gpu_platform.testing import OFFLINE_TOKEN, offline_stack_outputs, run_program, sample_kubeconfig

DATA = Path(__file__).parent / "data"
MANAGED = {"app.kubernetes.io/managed-by": "gpu-platform"}
WORKERS = [{"name": "us-central1", "stack": "acme/gpu-platform/mk-worker-us"},
           {"name": "europe-west4", "stack": "acme/gpu-platform/mk-worker-eu"}]


def gcp_raw(**extra):
    return {"cloud": "gcp", "region": "us-central1",
            "nodePools": [{"name": "l4", "instanceType": "g2-standard-8"}],
            "teams": [{"name": "research", "gpuQuota": 8}, {"name": "product", "gpuQuota": 4}],
            "scheduling": {"overcommit": True}, **extra}  # 12 GPUs on one L4: declared


def manager_raw(**section):
    return gcp_raw(multikueue={"role": "manager", "workers": copy.deepcopy(WORKERS), **section})


def settings(**overrides) -> mc.MultiKueueSettings:
    return parse_config(manager_raw(**overrides), "mgr").multikueue


# ---------------------------------------------------------------------------------------------------------
# The stack section


def test_a_manager_section_parses_into_its_settings():
    assert parse_config(manager_raw(dispatcher="incremental", workerLostTimeout="1h30m"), "mgr").multikueue == \
        mc.MultiKueueSettings(role="manager", workers=(
            mc.MultiKueueWorker("us-central1", "acme/gpu-platform/mk-worker-us"),
            mc.MultiKueueWorker("europe-west4", "acme/gpu-platform/mk-worker-eu")),
            dispatcher="incremental", worker_lost_timeout="1h30m")


def test_defaults_are_kueues_own():
    got = settings()
    assert (got.dispatcher, got.worker_lost_timeout) == ("all-at-once", "15m")
    assert mc.DISPATCHERS == {"all-at-once": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
                              "incremental": "kueue.x-k8s.io/multikueue-dispatcher-incremental"}


def test_a_worker_section_and_no_section():
    assert parse_config(gcp_raw(multikueue={"role": "worker"}), "w").multikueue == mc.MultiKueueSettings("worker")
    assert parse_config(gcp_raw(), "w").multikueue is None


TWENTY_ONE = [{"name": f"w{i}", "stack": f"acme/p/w{i}"} for i in range(21)]


@pytest.mark.parametrize(("raw", "message"), [
    (gcp_raw(multikueue={}), "mgr: multikueue.role: is required"),
    (gcp_raw(multikueue={"role": "boss"}), "mgr: multikueue.role: 'boss' is not one of manager, worker"),
    (gcp_raw(multikueue={"role": "manager"}), "mgr: multikueue.workers: is required"),
    (gcp_raw(multikueue={"role": "manager", "workers": []}), "mgr: multikueue.workers: must have at least one entry"),
    (gcp_raw(multikueue={"role": "manager", "workers": TWENTY_ONE}),
     "mgr: multikueue.workers: lists 21 workers; a MultiKueueConfig takes at most 20"),
    (manager_raw(workers=[WORKERS[0], {**WORKERS[1], "name": "us-central1"}]),
     "mgr: multikueue.workers[1].name: duplicate worker name 'us-central1' (also multikueue.workers[0])"),
    (manager_raw(workers=[WORKERS[0], {**WORKERS[1], "stack": WORKERS[0]["stack"]}]),
     "mgr: multikueue.workers[1].stack: duplicate worker stack 'acme/gpu-platform/mk-worker-us' "
     "(also multikueue.workers[0])"),
    (manager_raw(workers=[{"name": "w", "stack": "mk-worker-us"}]),
     "mgr: multikueue.workers[0].stack: 'mk-worker-us' is not a fully qualified stack name "
     "(<organization>/<project>/<stack>)"),
    (manager_raw(workers=[{"name": "W_1", "stack": "a/b/c"}]),
     "mgr: multikueue.workers[0].name: 'W_1' is not a DNS label (lower-case letters, digits and '-', starting and "
     "ending with a letter or digit, at most 63 characters)"),
    (manager_raw(workers=[{"name": "w", "stack": "a/b/c", "region": "x"}]),
     "mgr: multikueue.workers[0].region: unknown key"),
    (manager_raw(workerLostTimeout="15 minutes"),
     "mgr: multikueue.workerLostTimeout: '15 minutes' is not a duration such as 15m or 1h30m"),
    (manager_raw(dispatcher="round-robin"),
     "mgr: multikueue.dispatcher: 'round-robin' is not one of all-at-once, incremental"),
    (manager_raw(gcInterval="1m"), "mgr: multikueue.gcInterval: unknown key"),
    (gcp_raw(multikueue={"role": "worker", "workers": WORKERS}),
     "mgr: multikueue.workers: is a manager's key; a worker has only role (the manager reads its kubeconfig output)"),
    ({**manager_raw(), "teams": []},
     "mgr: multikueue.role: a MultiKueue manager needs teams (its teams' ClusterQueues are what it dispatches)"),
    (gcp_raw(multikueue={"role": "worker"}, teams=[]),
     "mgr: multikueue.role: a MultiKueue worker needs teams (the manager's jobs run in its teams' namespaces and "
     "LocalQueues)"),
    (manager_raw() | {"scheduling": {"kueue": False}},
     "mgr: multikueue.role: a MultiKueue manager runs Kueue; remove scheduling.kueue: false"),
    (manager_raw() | {"nodePools": [{"name": "h100", "instanceType": "a3-highgpu-8g", "provisioning": "queued"}]},
     "mgr: nodePools[0].provisioning: queued provisioning on a MultiKueue manager: Kueue 0.19.2 deactivates a "
     "ClusterQueue with both a MultiKueue and a ProvisioningRequest check; give queued pools to the workers"),
    ({"cloud": "existing", "networkPolicyEnforced": True, "teams": [{"name": "research"}],
      "nodePools": [{"name": "gpu", "gpuModel": "h100", "gpusPerNode": 8}], "multikueue": {"role": "worker"}},
     "mgr: multikueue.role: a worker exports a kubeconfig built from its cluster's server and CA, and this existing "
     "cluster has no kubeconfig key (only the ambient one): give kubeconfig"),
])
def test_bad_sections_are_one_line_errors(raw, message):
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "mgr")
    assert str(err.value) == message


def test_a_manager_cannot_be_its_own_worker():
    mine = settings(workers=[{"name": "self", "stack": "acme/gpu-platform/mgr"}])
    with pytest.raises(ConfigError, match=r"^multikueue.workers\[0\].stack: 'acme/gpu-platform/mgr' is this stack: "
                                          r"a MultiKueue manager cannot be one of its own workers$"):
        mc.check_not_self(mine, "gpu-platform", "mgr")
    mc.check_not_self(mine, "other-project", "mgr")  # the same stack name in another project is another stack


def worker_config(teams=("research", "product"), role="worker"):
    raw = gcp_raw(teams=[{"name": t} for t in teams], **({"multikueue": {"role": role}} if role else {}))
    return parse_config(raw, "w")


def test_worker_stacks_at_hand_must_be_workers_with_every_team():
    manager = parse_config(manager_raw(), "mgr")
    mc.check_worker_stacks(manager.multikueue, manager.teams, "gpu-platform", "mgr",
                           {0: worker_config(), 1: worker_config(teams=("product", "research", "extra"))})
    with pytest.raises(ConfigError) as err:
        mc.check_worker_stacks(manager.multikueue, manager.teams, "gpu-platform", "mgr",
                               {1: worker_config(teams=("research", "prodcut"))})
    assert str(err.value) == ("multikueue.workers[1].stack: stack 'mk-worker-eu' has no team 'product': the manager's "
                              "jobs of that team need its namespace, ClusterQueue and LocalQueue there; did you mean "
                              "'prodcut'?")
    with pytest.raises(ConfigError) as err:
        mc.check_worker_stacks(manager.multikueue, manager.teams, "gpu-platform", "mgr", {0: worker_config(role=None)})
    assert str(err.value) == ("multikueue.workers[0].stack: stack 'mk-worker-us' is not a MultiKueue worker (its "
                              "multikueue.role is not set); give it multikueue: {role: worker}")


# ---------------------------------------------------------------------------------------------------------
# Pure objects


def test_manager_objects_are_kueues_v1beta2_kinds_and_validate_against_the_pinned_crds():
    mine = settings()
    us, eu = mine.workers
    cluster = mo.multikueue_cluster(us)
    assert cluster == {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
        "metadata": {"name": "us-central1", "labels": {**MANAGED, "gpu-platform.io/multikueue-worker": "us-central1"}},
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "multikueue-us-central1"}}},
    }
    config = mo.multikueue_config(mine)
    assert config == {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
                      "metadata": {"name": "multikueue", "labels": MANAGED},
                      "spec": {"clusters": ["us-central1", "europe-west4"]}}
    check = mo.admission_check()
    assert check == {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                     "metadata": {"name": "multikueue", "labels": MANAGED},
                     "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                              "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig",
                                             "name": "multikueue"}}}
    assert mo.kubeconfig_secret_metadata(eu) == {
        "name": "multikueue-europe-west4", "namespace": "kueue-system",
        "labels": {**MANAGED, "gpu-platform.io/multikueue-worker": "europe-west4"}}
    assert versions.KUEUE_API_VERSION == "kueue.x-k8s.io/v1beta2"
    for body in (cluster, mo.multikueue_cluster(eu), config, check):
        validate_manifest(body, "1.36")


def test_the_vendored_schemas_are_the_pinned_releases_and_are_enforced():
    root = Path(mo.__file__).resolve().parents[1] / "crd_schemas" / "kueue.x-k8s.io" / "v1beta2"
    for kind, crd in (("MultiKueueCluster", "multikueueclusters"), ("MultiKueueConfig", "multikueueconfigs")):
        source = json.loads((root / f"{kind}.json").read_text())["source"]
        assert source == f"kubernetes-sigs/kueue@v0.19.2:config/components/crd/bases/kueue.x-k8s.io_{crd}.yaml"
    too_many = {**mo.multikueue_config(settings()), "spec": {"clusters": [f"w{i}" for i in range(21)]}}
    with pytest.raises(ManifestError, match="spec.clusters"):
        validate_manifest(too_many, "1.36")
    by_path = mo.multikueue_cluster(settings().workers[0])
    by_path["spec"]["clusterSource"]["kubeConfig"]["locationType"] = "File"
    with pytest.raises(ManifestError, match="locationType"):
        validate_manifest(by_path, "1.36")


def test_the_kueue_configuration_gets_the_managers_multikueue_section():
    section = mo.controller_section(settings(dispatcher="incremental", workerLostTimeout="5m"))
    assert section == {"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
                       "workerLostTimeout": "5m"}
    configuration = ko.controller_configuration((), section)
    assert configuration["multiKueue"] == section
    assert unknown_keys(configuration, load_keys(DATA / f"kueue-configuration-v{versions.KUEUE.version}.keys")) == []
    assert "multiKueue" not in ko.controller_configuration()
    values = ko.helm_values(False, (), section)
    assert yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])["multiKueue"] == section


def queue(pool: GpuPool, checks=()):
    return ko.cluster_queue(ko.team_quotas([worker_config().teams[0]], ko.flavor_plans([pool]))[0],
                            ko.flavor_plans([pool]), checks)


def test_team_queues_pass_the_multikueue_check_on_every_flavor():
    l4 = GpuPool("l4", "gcp", "g2-standard-8", "l4", 1, 24, 0, 2)
    assert "admissionChecksStrategy" not in queue(l4)["spec"]
    body = queue(l4, ["multikueue"])
    assert body["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "multikueue"}]}
    validate_manifest(body, "1.36")
    queued = GpuPool("h100q", "gcp", "a3-highgpu-8g", "h100", 8, 80, 0, 2, provisioning="queued")
    assert queue(queued, ["extra"])["spec"]["admissionChecksStrategy"] == {"admissionChecks": [
        {"name": "queued-provisioning", "onFlavors": ["h100q"]}, {"name": "extra"}]}


UPSTREAM_RULES = [  # create-multikueue-kubeconfig.sh@v0.19.2, for the integrations the platform enables
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "delete", "get", "list", "watch"]},
    {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete", "get", "list", "watch"]},
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["create", "delete", "get", "list", "watch"]},
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"],
     "verbs": ["create", "delete", "get", "list", "watch", "update", "patch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
    *({"apiGroups": ["kubeflow.org"], "resources": [resource], "verbs": verbs}
      for kind in ("tfjobs", "pytorchjobs", "xgboostjobs", "mpijobs")
      for resource, verbs in ((kind, ["create", "delete", "get", "list", "watch"]), (f"{kind}/status", ["get"]))),
]


def test_the_worker_grants_the_manager_only_the_upstream_rules_of_the_platforms_integrations():
    assert mo.WORKER_RULES == UPSTREAM_RULES
    assert mo.cluster_role() == {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                 "metadata": {"name": "multikueue-sa-role", "labels": MANAGED},
                                 "rules": UPSTREAM_RULES}
    # Nothing for what Kueue does not manage here (no StatefulSets, Ray, AppWrappers, PaddleJobs), nor for pods
    # without the pod or deployment integration.
    assert mo.worker_rules(["batch/job"]) == [*UPSTREAM_RULES[:2], *UPSTREAM_RULES[5:8]]
    assert mo.worker_rules(["deployment"])[0]["resources"] == ["pods"]
    assert mo.cluster_role_binding() == {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "multikueue-sa-crb", "labels": MANAGED},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "multikueue-sa-role"},
        "subjects": [{"kind": "ServiceAccount", "name": "multikueue-sa", "namespace": "kueue-system"}]}
    assert mo.service_account() == {"apiVersion": "v1", "kind": "ServiceAccount", "automountServiceAccountToken": False,
                                    "metadata": {"name": "multikueue-sa", "namespace": "kueue-system",
                                                 "labels": MANAGED}}
    assert mo.token_secret() == {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                                 "metadata": {"name": "multikueue-sa", "namespace": "kueue-system", "labels": MANAGED,
                                              "annotations": {"kubernetes.io/service-account.name": "multikueue-sa"}}}
    for body in (mo.cluster_role(), mo.cluster_role_binding(), mo.service_account(), mo.token_secret()):
        validate_manifest(body, "1.36")


def test_the_worker_kubeconfig_holds_the_server_ca_and_token_only():
    cluster = json.loads(sample_kubeconfig("w1", "https://w1.example:443"))
    cluster["users"][0]["user"] = {"exec": {"command": "gke-gcloud-auth-plugin"}}  # never carried over
    cluster["clusters"].insert(0, {"name": "other", "cluster": {"server": "https://other", "certificate-authority-data":
                                                                "b3RoZXI="}})
    cluster["contexts"].insert(0, {"name": "other", "context": {"cluster": "other", "user": "other"}})
    got = yaml.safe_load(mo.worker_kubeconfig(yaml.safe_dump(cluster), base64.b64encode(b"tok").decode()))
    assert got == {
        "apiVersion": "v1", "kind": "Config", "current-context": "w1", "preferences": {},
        "clusters": [{"name": "w1", "cluster": {"server": "https://w1.example:443",
                                                "certificate-authority-data": cluster["clusters"][1]["cluster"][
                                                    "certificate-authority-data"]}}],
        "contexts": [{"name": "w1", "context": {"cluster": "w1", "user": "w1-multikueue-sa"}}],
        "users": [{"name": "w1-multikueue-sa", "user": {"token": "tok"}}],
    }
    chosen = yaml.safe_load(mo.worker_kubeconfig(yaml.safe_dump(cluster), "dG9r", context="other"))
    assert chosen["clusters"][0]["cluster"]["server"] == "https://other"
    with pytest.raises(ValueError, match="no server and certificate-authority-data for context 'w1'"):
        del cluster["clusters"][1]["cluster"]["certificate-authority-data"]
        mo.worker_kubeconfig(yaml.safe_dump(cluster), "dG9r")
    with pytest.raises(ValueError, match="has no token yet"):
        mo.worker_kubeconfig(yaml.safe_dump(cluster), None)


# ---------------------------------------------------------------------------------------------------------
# Components under the mocks


def test_the_manager_reads_each_worker_stack_into_a_secret_marked_secret():
    def program():
        MultiKueueManager("mk", {"workers": WORKERS})

    rec = run_program(program, stack="mgr")
    secrets = {r.name: r for r in rec.of_type("kubernetes:core/v1:Secret")}
    assert sorted(secrets) == ["mk-europe-west4-kubeconfig", "mk-us-central1-kubeconfig"]
    secret = secrets["mk-us-central1-kubeconfig"]
    assert secret.inputs == {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                             "metadata": {"name": "multikueue-us-central1", "namespace": "kueue-system",
                                          "labels": {**MANAGED, "gpu-platform.io/multikueue-worker": "us-central1"}},
                             "stringData": {"kubeconfig": "[secret]"}}
    assert secret.additional_secret_outputs == ["data", "stringData"]
    assert [(r.type, r.name, r.inputs) for r in rec.reads] == [
        ("pulumi:pulumi:StackReference", "mk-europe-west4-stack", {"id": "acme/gpu-platform/mk-worker-eu"}),
        ("pulumi:pulumi:StackReference", "mk-us-central1-stack", {"id": "acme/gpu-platform/mk-worker-us"})]
    cluster = rec.one("kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueCluster", "mk-us-central1")
    assert cluster.inputs["spec"] == {"clusterSource": {"kubeConfig": {"locationType": "Secret",
                                                                      "location": "multikueue-us-central1"}}}
    assert secret.urn in cluster.dependencies
    config = rec.one("kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueConfig")
    assert config.inputs["spec"] == {"clusters": ["us-central1", "europe-west4"]}
    check = rec.one("kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck")
    assert config.urn in check.dependencies and check.inputs["spec"]["controllerName"] == "kueue.x-k8s.io/multikueue"


def test_the_kubeconfig_the_manager_stores_is_the_worker_stacks_output():
    seen = {}

    def program():
        manager = MultiKueueManager("mk", {"workers": WORKERS[:1]})
        manager.secrets["us-central1"].string_data.apply(lambda d: seen.update(value=d["kubeconfig"]))

    run_program(program, stack="mgr")
    kubeconfig = json.loads(seen["value"])
    assert kubeconfig == json.loads(offline_stack_outputs("acme/gpu-platform/mk-worker-us")["multikueueKubeconfig"])
    assert kubeconfig["clusters"][0]["cluster"]["server"] == "https://mk-worker-us.offline.invalid"
    assert kubeconfig["users"][0]["user"]["token"] == OFFLINE_TOKEN


@pytest.mark.parametrize(("workers", "message"), [
    ([], "MultiKueueManager mk: workers: must list at least one worker"),
    ([WORKERS[0], {**WORKERS[1], "name": "us-central1"}],
     "MultiKueueManager mk: workers[1]: duplicate worker name 'us-central1' (also workers[0])"),
    ([WORKERS[0], {**WORKERS[1], "stack": WORKERS[0]["stack"]}],
     "MultiKueueManager mk: workers[1]: duplicate worker stack 'acme/gpu-platform/mk-worker-us' (also workers[0])"),
    ([{"name": "w", "stack": "w"}], "MultiKueueManager mk: workers[0].stack: 'w' is not a fully qualified stack "
                                    "name (<organization>/<project>/<stack>)"),
])
def test_bad_manager_args_register_nothing(pulumi_mocks, workers, message):
    with pytest.raises(ConfigError) as err:
        MultiKueueManager("mk", {"workers": workers})
    assert str(err.value) == message
    assert len(pulumi_mocks.finish()) == 0


def test_the_worker_exports_a_token_kubeconfig_marked_secret():
    def program():
        access = MultiKueueWorkerAccess("mk", {"cluster_kubeconfig": sample_kubeconfig("w1", "https://w1:443")})
        pulumi.export("multikueueKubeconfig", access.kubeconfig)
        pulumi.export("plain", access.kubeconfig.apply(lambda k: yaml.safe_load(k)))

    rec = run_program(program, stack="w1")
    assert rec.exports["multikueueKubeconfig"] == "[secret]"
    # Secret all the way down: what is derived from it is redacted leaf by leaf.
    assert rec.exports["plain"]["kind"] == "[secret]"
    assert rec.exports["plain"]["users"] == [{"name": "[secret]", "user": {"token": "[secret]"}}]
    names = sorted((r.type, r.name) for r in rec if r.custom)
    assert names == [("kubernetes:core/v1:Secret", "mk-token"), ("kubernetes:core/v1:ServiceAccount",
                                                                 "mk-service-account"),
                     ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "mk-role"),
                     ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "mk-binding")]
    assert rec.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole").inputs["rules"] == UPSTREAM_RULES
    token = rec.one("kubernetes:core/v1:Secret")
    assert token.inputs["type"] == "kubernetes.io/service-account-token"
    assert rec.one("kubernetes:core/v1:ServiceAccount").urn in token.dependencies


def test_the_worker_kubeconfig_value():
    seen = {}

    def program():
        access = MultiKueueWorkerAccess("mk", {"cluster_kubeconfig": sample_kubeconfig("w1", "https://w1:443")})
        access.kubeconfig.apply(lambda k: seen.update(value=yaml.safe_load(k)))

    run_program(program, stack="w1")
    assert seen["value"]["users"] == [{"name": "w1-multikueue-sa", "user": {"token": "mock-token-mk-token"}}]
    assert seen["value"]["clusters"][0]["cluster"]["server"] == "https://w1:443"


# ---------------------------------------------------------------------------------------------------------
# The reference stacks: a manager and two workers in two regions


def kinds(result, kind):
    return {m["metadata"]["name"]: m for m in result.manifests if m["kind"] == kind}


def test_a_manager_and_two_workers_plan_multikueue_objects_that_validate_with_secret_kubeconfigs():
    manager = planned_stack("mk-manager")
    assert manager.errors == []
    clusters, configs = kinds(manager, "MultiKueueCluster"), kinds(manager, "MultiKueueConfig")
    checks = kinds(manager, "AdmissionCheck")
    assert sorted(clusters) == ["europe-west4", "us-central1"]
    assert configs["multikueue"]["spec"] == {"clusters": ["us-central1", "europe-west4"]}
    assert checks["multikueue"]["spec"]["controllerName"] == "kueue.x-k8s.io/multikueue"
    for body in [*clusters.values(), *configs.values(), *checks.values()]:
        assert body["apiVersion"] == "kueue.x-k8s.io/v1beta2"
        validate_manifest(body, manager.config.kubernetes_version)
    for name, queue_body in kinds(manager, "ClusterQueue").items():
        assert queue_body["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "multikueue"}]}, name
    secrets = {n: s for n, s in kinds(manager, "Secret").items() if n.startswith("multikueue-")}
    assert secrets == {f"multikueue-{w}": {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque", "stringData": {"kubeconfig": "[secret]"},
        "metadata": {"name": f"multikueue-{w}", "namespace": "kueue-system",
                     "labels": {**MANAGED, "gpu-platform.io/multikueue-worker": w}}} for w in clusters}
    document = plan.plan_json(manager)
    assert document["stackReferences"] == [
        {"urn": "urn:pulumi:mk-manager::gpu-platform::gpuplatform:index:"
                "MultiKueueManager$pulumi:pulumi:StackReference::mk-manager-multikueue-europe-west4-stack",
         "stack": "acme/gpu-platform/mk-worker-eu", "outputs": plan.OFFLINE_OUTPUTS_NOTE},
        {"urn": "urn:pulumi:mk-manager::gpu-platform::gpuplatform:index:"
                "MultiKueueManager$pulumi:pulumi:StackReference::mk-manager-multikueue-us-central1-stack",
         "stack": "acme/gpu-platform/mk-worker-us", "outputs": plan.OFFLINE_OUTPUTS_NOTE}]
    assert OFFLINE_TOKEN not in json.dumps(document) and OFFLINE_TOKEN not in json.dumps(manager.manifests)
    assert "stack references (offline stand-in outputs): acme/gpu-platform/mk-worker-eu, " \
           "acme/gpu-platform/mk-worker-us" in plan.summary(manager)
    release = next(r for r in manager.recording.of_type("kubernetes:helm.sh/v3:Release")
                   if r.inputs["chart"].endswith("/kueue"))
    configuration = yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert configuration["multiKueue"] == {"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
                                           "workerLostTimeout": "10m"}
    for stack, region in (("mk-worker-us", "us-central1"), ("mk-worker-eu", "europe-west4")):
        worker = planned_stack(stack)
        assert worker.errors == [] and worker.config.region == region
        assert worker.recording.exports["multikueueKubeconfig"] == "[secret]"
        assert kinds(worker, "ClusterRole")["multikueue-sa-role"]["rules"] == UPSTREAM_RULES
        assert "multikueue-sa" in kinds(worker, "ServiceAccount")
        # The manager's queues are mirrored: the same team ClusterQueues and LocalQueues gpu.
        assert sorted(kinds(worker, "ClusterQueue")) == sorted(kinds(manager, "ClusterQueue")) == ["product",
                                                                                                  "research"]
        assert not any("admissionChecksStrategy" in q["spec"] for q in kinds(worker, "ClusterQueue").values())
        assert sorted((m["metadata"]["namespace"], m["spec"]["clusterQueue"]) for m in worker.manifests
                      if m["kind"] == "LocalQueue") == [("product", "product"), ("research", "research")]
        assert "multiKueue" not in yaml.safe_load(next(
            r for r in worker.recording.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"].endswith(
                "/kueue")).inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])


def copy_stacks(tmp_path: Path) -> Path:
    for name in ("Pulumi.mk-manager.yaml", "Pulumi.mk-worker-us.yaml", "Pulumi.mk-worker-eu.yaml"):
        shutil.copy(STACKS_DIR / name, tmp_path / name)
    shutil.copy(STACKS_DIR.parent / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    return tmp_path


def test_a_worker_stack_without_a_manager_team_is_refused_before_anything_is_registered(tmp_path):
    stacks = copy_stacks(tmp_path)
    path = stacks / "Pulumi.mk-worker-eu.yaml"
    document = yaml.safe_load(path.read_text())
    document["config"]["gpu-platform:teams"] = [{"name": "research", "gpuQuota": 16}]
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(ConfigError) as err:
        plan.plan_stack("mk-manager", stacks / "Pulumi.mk-manager.yaml")
    assert str(err.value) == ("mk-manager: multikueue.workers[1].stack: stack 'mk-worker-eu' has no team 'product': "
                              "the manager's jobs of that team need its namespace, ClusterQueue and LocalQueue there")


def test_a_worker_stack_that_is_not_a_worker_is_refused(tmp_path):
    stacks = copy_stacks(tmp_path)
    path = stacks / "Pulumi.mk-worker-us.yaml"
    document = yaml.safe_load(path.read_text())
    del document["config"]["gpu-platform:multikueue"]
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(ConfigError, match=r"^mk-manager: multikueue.workers\[0\].stack: stack 'mk-worker-us' is not "
                                          r"a MultiKueue worker \(its multikueue.role is not set\)"):
        plan.plan_stack("mk-manager", stacks / "Pulumi.mk-manager.yaml")


def minimal_manager(tmp_path: Path, section: dict) -> Path:
    """A small manager on an existing cluster (cheap to plan), its worker stacks not at hand."""
    config = {"gpu-platform:cloud": "existing", "gpu-platform:networkPolicyEnforced": True,
              "gpu-platform:nodePools": [{"name": "gpu", "gpuModel": "l4", "gpusPerNode": 1}],
              "gpu-platform:teams": [{"name": "research", "gpuQuota": 2}],
              "gpu-platform:monitoring": {"enabled": False}, "gpu-platform:inference": {"enabled": False},
              "gpu-platform:training": {"enabled": False},
              "gpu-platform:multikueue": {"role": "manager", **section}}
    path = tmp_path / "Pulumi.mgr.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    return path


def test_every_manager_key_changes_the_plan(tmp_path):
    def planned(section):
        result = plan.plan_stack("mgr", minimal_manager(tmp_path, section))
        assert result.errors == []
        release = next(r for r in result.recording.of_type("kubernetes:helm.sh/v3:Release")
                       if r.inputs["chart"].endswith("/kueue"))
        kueue = yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
        return (kueue["multiKueue"], kinds(result, "MultiKueueConfig")["multikueue"]["spec"]["clusters"],
                {n: c["spec"]["clusterSource"]["kubeConfig"]["location"]
                 for n, c in kinds(result, "MultiKueueCluster").items()},
                sorted(r.inputs["id"] for r in plan.stack_references(result.recording)))

    default = planned({"workers": [{"name": "a", "stack": "acme/gpu-platform/a"}]})
    assert default == ({"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
                        "workerLostTimeout": "15m"}, ["a"], {"a": "multikueue-a"}, ["acme/gpu-platform/a"])
    changed = planned({"workers": [{"name": "b", "stack": "acme/other/b"}, {"name": "a", "stack": "acme/p/a2"}],
                       "dispatcher": "incremental", "workerLostTimeout": "2m"})
    assert changed == ({"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
                        "workerLostTimeout": "2m"}, ["b", "a"], {"a": "multikueue-a", "b": "multikueue-b"},
                       ["acme/other/b", "acme/p/a2"])


def test_a_stack_without_the_section_is_unchanged(tmp_path):
    path = minimal_manager(tmp_path, {"workers": [{"name": "a", "stack": "acme/p/a"}]})
    document = yaml.safe_load(path.read_text())
    del document["config"]["gpu-platform:multikueue"]
    # No longer a manager: its teams' quotas are checked against its own pool, so it says it overcommits.
    document["config"]["gpu-platform:scheduling"] = {"overcommit": True}
    path.write_text(yaml.safe_dump(document))
    result = plan.plan_stack("mgr", path)
    assert not [m for m in result.manifests if m["kind"].startswith("MultiKueue") or m["kind"] == "AdmissionCheck"]
    assert "stackReferences" not in plan.plan_json(result)
    assert "multikueueKubeconfig" not in result.recording.exports


def test_a_manager_listing_its_own_stack_is_refused_by_the_plan(tmp_path):
    stacks = copy_stacks(tmp_path)
    path = stacks / "Pulumi.mk-manager.yaml"
    document = yaml.safe_load(path.read_text())
    document["config"]["gpu-platform:multikueue"]["workers"][1]["stack"] = "acme/gpu-platform/mk-manager"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(ConfigError) as err:
        plan.plan_stack("mk-manager", path)
    assert str(err.value) == ("mk-manager: multikueue.workers[1].stack: 'acme/gpu-platform/mk-manager' is this stack: "
                              "a MultiKueue manager cannot be one of its own workers")


def test_the_program_refuses_a_manager_listing_its_own_stack():
    from gpu_platform.platform import main

    config = {f"gpu-platform:{k}": v for k, v in manager_raw(
        workers=[{"name": "me", "stack": "acme/gpu-platform/mgr"}]).items()}
    with pytest.raises(pulumi.RunError) as err:
        run_program(main, stack="mgr", project="gpu-platform", config=config)
    assert str(err.value) == ("mgr: multikueue.workers[0].stack: 'acme/gpu-platform/mgr' is this stack: a MultiKueue "
                              "manager cannot be one of its own workers")


def test_worker_access_needs_the_cluster_kubeconfig(pulumi_mocks):
    with pytest.raises(ConfigError) as err:
        MultiKueueWorkerAccess("mk", {"context": "w1"})
    assert str(err.value) == "MultiKueueWorkerAccess mk: cluster_kubeconfig: is required"
    assert len(pulumi_mocks.finish()) == 0


def test_worker_access_takes_the_server_of_the_given_context():
    seen = {}
    cluster = json.loads(sample_kubeconfig("w1", "https://w1:443"))
    cluster["clusters"].append({"name": "w2", "cluster": {"server": "https://w2:443",
                                                          "certificate-authority-data": "Y2E="}})
    cluster["contexts"].append({"name": "admin@w2", "context": {"cluster": "w2", "user": "admin"}})

    def program():
        access = MultiKueueWorkerAccess("mk", {"cluster_kubeconfig": json.dumps(cluster), "context": "admin@w2"})
        access.kubeconfig.apply(lambda k: seen.update(value=yaml.safe_load(k)))

    run_program(program, stack="w2")
    assert seen["value"]["clusters"] == [{"name": "w2", "cluster": {"server": "https://w2:443",
                                                                    "certificate-authority-data": "Y2E="}}]


def test_a_context_the_kubeconfig_lacks_is_refused_not_swapped_for_another(pulumi_mocks):
    kubeconfig = sample_kubeconfig("w1", "https://w1:443")
    with pytest.raises(ConfigError) as err:
        MultiKueueWorkerAccess("mk", {"cluster_kubeconfig": kubeconfig, "context": "admin@w2"})
    assert str(err.value) == ("MultiKueueWorkerAccess mk: context: 'admin@w2' is not a context of the cluster's "
                              "kubeconfig (its contexts: w1)")
    assert len(pulumi_mocks.finish()) == 0
    # A kubeconfig known only at deploy time: the same words when the kubeconfig is read.
    with pytest.raises(ValueError) as value_err:
        mo.worker_kubeconfig(kubeconfig, "dG9r", context="admin@w2")
    assert str(value_err.value) == "'admin@w2' is not a context of the cluster's kubeconfig (its contexts: w1)"
    assert mo.missing_context(kubeconfig, "w1") is None
    assert mo.missing_context("", "w1") == "'w1' is not a context of the cluster's kubeconfig (its contexts: none)"
