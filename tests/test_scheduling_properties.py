"""Properties of the Kueue objects over random pools and teams: quotas add up (per accelerator resource, with pools
of several vendors mixed), flavors select exactly their pool, every toleration matches a taint, and every object
matches the upstream CRD schema.

Teams are drawn as configuration and read by `config.parse_team` with the resources the drawn pools advertise, so
they obey the configuration's rules (``gpuQuota`` only where a pool advertises ``nvidia.com/gpu``, ``lendingLimit``
at most ``gpuQuota``, ``quotas`` only of advertised resources)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_platform import catalog
from gpu_platform.config import parse_team
from gpu_platform.labels import AKS_SPOT_TAINT, TAINT_EFFECTS, Taint
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.scheduling import kueue_objects as ko
from gpu_platform.schemas import validate_manifest

NAMES = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)
MIG_MODELS = [m for m in catalog.GPU_MODELS.values() if m.mig_capable]


@st.composite
def sharing(draw, gpu: str):
    model = catalog.GPU_MODELS[gpu]
    # Only the modes the model's vendor supports (NVIDIA's; the others are exclusive).
    modes = [m for m in ("exclusive", "time-slicing", "mps", "mig") if m in catalog.VENDORS[model.vendor].sharing_modes]
    mode = draw(st.sampled_from(modes))
    if mode == "mig" and model.mig_capable:
        return Sharing("mig", 1, draw(st.sampled_from(model.mig_profiles)))
    if mode in ("time-slicing", "mps"):
        return Sharing(mode, draw(st.integers(2, 8)))
    return Sharing()


@st.composite
def gpu_pool(draw, name: str, cloud: str) -> GpuPool:
    gpu = draw(st.sampled_from(sorted(catalog.GPU_MODELS)))
    max_nodes = draw(st.integers(1, 16))
    min_nodes = draw(st.integers(0, max_nodes))
    fabric = draw(st.sampled_from([None, "efa", "infiniband", "roce", "gpudirect-tcpxo"]))
    taints = tuple(draw(st.lists(
        st.builds(Taint, NAMES.map(lambda k: f"example.com/{k}"), NAMES, st.sampled_from(TAINT_EFFECTS)),
        max_size=5, unique_by=lambda t: t.key)))
    spot = cloud == "azure" and draw(st.booleans())
    return GpuPool(name, cloud, "x", gpu, draw(st.sampled_from([1, 2, 4, 8])), 80, min_nodes, max_nodes,
                   sharing=draw(sharing(gpu)), rdma_fabric=fabric, rdma_interfaces=8 if fabric else 0,
                   user_taints=taints, extra_taints=(AKS_SPOT_TAINT,) if spot else (),
                   user_labels=tuple(sorted(draw(st.dictionaries(NAMES, NAMES, max_size=2)).items())))


@st.composite
def pools_and_teams(draw):
    cloud = draw(st.sampled_from(catalog.CLOUDS))
    pool_names = draw(st.lists(NAMES, min_size=1, max_size=5, unique=True))
    pools = [draw(gpu_pool(n, cloud)) for n in pool_names]
    advertised = tuple(dict.fromkeys(r for p in pools for r in p.resources))
    teams = []
    for name in draw(st.lists(NAMES, max_size=6, unique=True)):
        raw = {"name": name, "cpuQuota": draw(st.integers(0, 1024)), "memoryQuotaGi": draw(st.integers(0, 8192))}
        if GPU in advertised:
            raw["gpuQuota"] = draw(st.integers(0, 96))
            lend = draw(st.one_of(st.none(), st.integers(0, raw["gpuQuota"])))
            if lend is not None:
                raw["lendingLimit"] = lend
        others = [r for r in advertised if r != GPU]
        if others:
            raw["quotas"] = draw(st.dictionaries(st.sampled_from(others), st.integers(0, 96)))
        borrow = draw(st.one_of(st.none(), st.integers(0, 64)))
        if borrow is not None:
            raw["borrowingLimit"] = borrow
        teams.append(parse_team(raw, "teams[0]", advertised))
    return pools, teams


GPU = catalog.NVIDIA_GPU_RESOURCE


def fits_within_capacity(resource, plans, teams) -> bool:
    return sum(t.quota_of(resource) for t in teams) <= sum(plan.capacity_of(resource) for plan in plans)


PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(pools_and_teams())
def test_quotas_add_up(case):
    pools, teams = case
    plans = ko.flavor_plans(pools)
    quotas = ko.team_quotas(teams, plans)
    resources = ko.accelerator_resources(plans)
    assert resources == tuple(dict.fromkeys(r for p in pools for r in p.resources))
    primaries = {p.resource for p in pools}
    for quota in quotas:
        team = quota.team
        for resource in resources:
            row = quota.quota_of(resource)
            assert sum(row) == team.quota_of(resource), resource
            # Only pools advertising the resource get quota of it.
            assert all(n == 0 for n, p in zip(row, pools, strict=True) if resource not in p.resources), resource
        # Per flavor, the primary resource's quota: every team's device quotas, nothing lost or added.
        assert sum(quota.gpus) == sum(team.quota_of(r) for r in primaries)
        assert quota.cpu_only_cpu + sum(quota.cpu) == team.cpu_quota
        assert quota.cpu_only_memory_gib + sum(quota.memory_gib) == team.memory_quota_gib
        assert min((*quota.gpus, *quota.cpu, *quota.memory_gib, 0)) >= 0
        if team.lending_limit is not None:
            # lendingLimit counts NVIDIA GPUs, like gpuQuota: split over the NVIDIA flavors only.
            assert sum(n or 0 for n in quota.lending) == team.lending_limit
            assert all(lend <= gpus for lend, gpus in zip(quota.lending, quota.quota_of(GPU), strict=True)
                       if lend is not None)
            # Other vendors' flavors carry no lending limit at all.
            assert all(lend is None for lend, p in zip(quota.lending, pools, strict=True) if p.resource != GPU)
    for resource in resources:
        if fits_within_capacity(resource, plans, teams):
            for i, plan in enumerate(plans):
                assert sum(q.quota_of(resource)[i] for q in quotas) <= plan.capacity_of(resource), (plan.name, resource)
    # The rendered ClusterQueues carry the same numbers.
    for quota in quotas:
        cq = ko.cluster_queue(quota, plans)
        [group] = cq["spec"]["resourceGroups"]
        assert group["coveredResources"] == ["cpu", "memory", *resources]
        listed = [{r["name"]: r for r in f["resources"]} for f in group["flavors"]]
        assert all(list(f) == group["coveredResources"] for f in listed)
        for resource in resources:
            assert sum(f[resource]["nominalQuota"] for f in listed) == quota.team.quota_of(resource), resource
            lending = [f[resource]["lendingLimit"] for f in listed if "lendingLimit" in f[resource]]
            if resource != GPU or quota.team.lending_limit is None:
                assert lending == [], resource
            else:
                assert sum(lending) == quota.team.lending_limit
                assert all(f[resource]["lendingLimit"] <= f[resource]["nominalQuota"]
                           for f in listed if "lendingLimit" in f[resource])


@PROPERTY
@given(pools_and_teams())
def test_every_flavor_selects_exactly_its_pool(case):
    pools, _ = case
    for plan in ko.flavor_plans(pools):
        node_labels = ko.resource_flavor(plan)["spec"]["nodeLabels"]
        selected = [p.name for p in pools if node_labels.items() <= p.labels.items()]
        assert selected == [plan.name]


@PROPERTY
@given(pools_and_teams())
def test_every_toleration_matches_a_taint_and_every_taint_is_tolerated(case):
    pools, _ = case
    for plan in ko.flavor_plans(pools):
        tolerations = ko.resource_flavor(plan)["spec"]["tolerations"]
        taints = plan.pool.taints

        def tolerates(tol, taint):
            value_ok = tol["operator"] == "Exists" or tol.get("value", "") == taint.value
            return tol["key"] == taint.key and value_ok and tol.get("effect") in (None, taint.effect)

        assert all(any(tolerates(tol, t) for t in taints) for tol in tolerations)
        assert all(any(tolerates(tol, t) for tol in tolerations) for t in taints)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pools_and_teams())
def test_every_kueue_object_matches_the_upstream_crd(case):
    pools, teams = case
    plans = ko.flavor_plans(pools)
    objects = [ko.cpu_flavor(), ko.cohort(), *ko.topologies(plans)]
    objects += [ko.resource_flavor(p) for p in plans]
    objects += [ko.cluster_queue(q, plans) for q in ko.team_quotas(teams, plans)]
    objects += [ko.local_queue(t.name, t.name) for t in teams]
    for obj in objects:
        validate_manifest(obj, "1.34")
