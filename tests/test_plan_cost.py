"""What keeps a plan's cost proportional to its size (issue 37 item 2): each pool spec checked once per plan, no
source positions captured under the mocks, inputs deserialized once per registration. None of it may change a
result or an error."""

import asyncio
import contextlib
import re
from typing import Optional as Opt

import pulumi
import pulumi_kubernetes as k8s
import pytest
from pulumi.runtime import resource as resource_runtime
from pulumi.runtime import rpc

from gpu_platform import pool_spec, testing
from gpu_platform.component_args import Args
from gpu_platform.errors import ConfigError
from gpu_platform.pool_builder import gpu_pool
from gpu_platform.scheduling.tenancy import TeamNamespace

POOLS = [gpu_pool("aws", {"name": f"pool-{i}", "instanceType": shape, "maxNodes": 2}).spec()
         for i, shape in enumerate(["g6.xlarge", "g6e.12xlarge", "p5.48xlarge"])]


@pytest.fixture
def parses(monkeypatch):
    """The specs that reach the parser (`pool_spec._check_pool`), by pool name, in order."""
    seen: list[str] = []
    real = pool_spec._check_pool

    def counting(args, value, path, cloud):
        seen.append(value.get("name") if isinstance(value, dict) else type(value).__name__)
        return real(args, value, path, cloud)

    monkeypatch.setattr(pool_spec, "_check_pool", counting)
    return seen


def _teams(count: int) -> None:
    for i in range(count):
        TeamNamespace(f"team-{i}", {"team": {"name": f"team-{i}", "gpu_quota": 1}, "pools": POOLS})


def test_each_pool_is_parsed_once_per_program_whatever_the_number_of_teams(parses):
    recording = testing.run_program(lambda: _teams(8))
    assert parses == [p["name"] for p in POOLS]
    assert len([r for r in recording if r.type == "gpuplatform:index:TeamNamespace"]) == 8
    testing.run_program(lambda: _teams(1))  # the next program checks afresh
    assert parses == [p["name"] for p in POOLS] * 2


def test_a_remembered_pool_is_the_one_the_parser_gives():
    pool_spec.forget_checked_pools()
    first = pool_spec.check_pool(Args("A", "a"), POOLS[2], "pools[2]", "aws")
    assert pool_spec.check_pool(Args("B", "b"), dict(POOLS[2]), "pools[0]", "aws") is first
    assert first == pool_spec._check_pool(Args("C", "c"), POOLS[2], "pools[2]", "aws")


def test_a_bad_spec_fails_each_time_with_each_components_own_line(parses):
    bad = {**POOLS[0], "sharing_mode": "slices"}
    for component, name, path in [("TeamNamespace", "ml", "pools[0]"), ("SchedulingPolicy", "kueue", "pools[3]")]:
        with pytest.raises(ConfigError, match=f"^{re.escape(component)} {name}: {re.escape(path)}.sharing_mode: "
                                              "'slices' is not one of "):
            pool_spec.check_pool(Args(component, name), bad, path, "aws")
    assert parses == ["pool-0", "pool-0"]


@pytest.mark.parametrize(("key", "good", "bad", "problem"), [
    ("spot", False, 0, "must be true or false, got 0"),
    ("max_nodes", 2, True, "must be an integer, got True"),
    ("taints", [], (), None),  # a tuple is a list to the checker: both pass, each parsed once
    ("labels", {"tier": "a"}, {1: "a"}, "keys must be strings"),
])
def test_values_equal_to_a_checked_one_but_of_another_type_are_checked_again(key, good, bad, problem):
    pool_spec.forget_checked_pools()
    spec = {"name": "l4", "cloud": "aws", "instance_type": "g6.xlarge", "max_nodes": 2, key: good}
    pool_spec.check_pool(Args("A", "a"), spec, "pool", "aws")
    other = {**spec, key: bad}
    if problem is None:
        assert pool_spec.check_pool(Args("A", "a"), other, "pool", "aws") == pool_spec._check_pool(
            Args("A", "a"), other, "pool", "aws")
        return
    with pytest.raises(ConfigError, match=re.escape(problem)):
        pool_spec.check_pool(Args("A", "a"), other, "pool", "aws")


def test_a_spec_holding_an_object_is_checked_without_the_memo(parses):
    pool_spec.forget_checked_pools()

    class Name(str):
        pass

    spec = {**POOLS[0], "name": Name("pool-0")}
    for _ in range(2):
        pool_spec.check_pool(Args("A", "a"), spec, "pool", "aws")
    assert parses == ["pool-0", "pool-0"]
    assert not pool_spec._CHECKED


def test_the_same_spec_for_another_cloud_is_checked_again():
    pool_spec.forget_checked_pools()
    pool_spec.check_pool(Args("A", "a"), POOLS[0], "pool", "aws")
    with pytest.raises(ConfigError, match=re.escape("A a: pool.cloud: pool 'pool-0' is an AWS pool; A takes GCP "
                                                    "pools")):
        pool_spec.check_pool(Args("A", "a"), POOLS[0], "pool", "gcp")


def test_source_positions_are_left_out_only_while_a_program_runs():
    real = resource_runtime._get_stack_trace
    seen = []
    testing.run_program(lambda: seen.append(resource_runtime._get_stack_trace))
    assert seen and seen[0] is not real
    assert len(seen[0]().frames) == 0
    assert resource_runtime._get_stack_trace is real


def test_the_recording_keeps_the_inputs_sent_even_when_the_mocks_change_them():
    class Meddling(testing.PlatformMocks):
        def new_resource(self, args):
            args.inputs["data"]["key"] = "changed"
            return super().new_resource(args)

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        pulumi.runtime.settings.reset_options(project="p", stack="s", preview=False)
        mocks = Meddling()
        monitor = testing.RecordingMonitor(mocks)
        pulumi.runtime.set_mocks(mocks, project="p", stack="s", preview=False, monitor=monitor)
        k8s.core.v1.ConfigMap("cm", metadata={"name": "cm"}, data={"key": "sent"})
        testing.Recorder(monitor).finish()
    finally:
        loop.close()
        asyncio.set_event_loop(None)
        pulumi.runtime.settings.reset_options()
    (registration,) = monitor.registrations
    assert registration.inputs["data"] == {"key": "sent"}


def test_a_list_of_pools_is_checked_once_and_each_component_gets_its_own_copy(parses):
    pool_spec.forget_checked_pools()
    from gpu_platform.scheduling.tenancy import checked_args

    args = {"team": {"name": "ml", "gpu_quota": 1}, "pools": POOLS}
    first, second = checked_args("a", args)["pools"], checked_args("b", args)["pools"]
    assert parses == [p["name"] for p in POOLS]  # the second list is not checked item by item
    assert first == second == [pool_spec.check_pool(Args("A", "a"), p, "p", "aws").spec() for p in POOLS]
    assert first is not second and all(a is not b and a["labels"] is not b["labels"] and
                                       a["taints"] is not b["taints"] for a, b in zip(first, second, strict=True))
    first[0]["labels"]["tier"] = "changed"  # a component changing its copy changes no other
    assert "tier" not in checked_args("c", args)["pools"][0]["labels"]


def test_a_wrong_list_of_pools_fails_each_time_with_the_components_line():
    pool_spec.forget_checked_pools()
    from gpu_platform.scheduling.tenancy import checked_args

    bad = [POOLS[0], {**POOLS[1], "max_nodes": 2.5}]
    for name in ("a", "b"):
        with pytest.raises(ConfigError, match=f"^TeamNamespace {name}: pools\\[1\\].max_nodes: must be an integer, "
                                              "got 2.5$"):
            checked_args(name, {"team": {"name": "ml", "gpu_quota": 1}, "pools": bad})
    assert not pool_spec._CHECKED_LISTS


def test_equal_lists_of_specs_share_their_pools_and_others_get_their_own():
    from gpu_platform.pools import GpuPool, pools_from_specs

    specs = [dict(p) for p in POOLS]
    pools = pools_from_specs(specs)
    assert pools == [GpuPool.from_spec(s) for s in POOLS]
    again = pools_from_specs([dict(p) for p in POOLS])
    assert again is not pools and all(a is b for a, b in zip(again, pools, strict=True))
    floats = pools_from_specs([{**POOLS[0], "max_nodes": 2.0}])  # 2.0 is not 2 to the memo, equal as a pool
    assert floats == [GpuPool.from_spec(POOLS[0])] and floats[0] is not pools[0]


def _struct(value: dict):
    from google.protobuf import struct_pb2

    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


PLAIN_STATES = [
    {},
    {"metadata": {"name": "ns", "labels": {"a": "b"}, "annotations": None}, "spec": {"replicas": 3, "ratio": 0.5}},
    {"list": [1, None, True, "x", {"k": None, "n": 2}, [], {}], "flag": False, "zero": 0, "big": 2 ** 60},
    {"tuple": ("a", 1), "nested": {"deeper": {"deepest": [{"x": (None,)}]}}, "none": None},
]


def _typed(value):
    """``value`` with every type spelled out (3.0 is not 3, True is not 1.0, a list is not a tuple, an Unknown is
    an Unknown); dicts as sorted items: protobuf iterates a Struct in an order that changes from process to
    process, so no reader of the SDK's promises one."""
    if isinstance(value, dict):
        return ("dict", sorted((k, _typed(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_typed(v) for v in value])
    if type(value).__name__ == "Unknown":
        return ("Unknown",)
    return (type(value).__name__, value)


@pytest.mark.parametrize("state", PLAIN_STATES)
def test_plain_structs_read_as_the_sdk_reads_them(state):
    struct = testing._plain_struct(state)
    sdk = _typed(testing._SDK_DESERIALIZE_PROPERTIES(struct))
    assert _typed(testing._deserialize_properties(struct)) == sdk
    assert _typed(testing._round_trip(state)) == sdk  # the state read back without a Struct
    assert list(testing._deserialize_properties(struct)) == list(struct.fields)  # the Struct's own order


NOT_PLAIN = [
    {"password": {rpc.__dict__.get("_special_sig_key", ""): rpc._special_secret_sig, "value": "hunter2"}},
    {"endpoint": rpc.UNKNOWN, "name": "n"},
    {"items": [rpc.UNKNOWN, "x"]},
]


@pytest.mark.parametrize("value", NOT_PLAIN)
@pytest.mark.parametrize("keep_unknowns", [None, True])
def test_secrets_and_unknowns_are_read_by_the_sdks_reader(value, keep_unknowns):
    struct = _struct(value)
    sdk = _typed(testing._SDK_DESERIALIZE_PROPERTIES(struct, keep_unknowns))
    assert _typed(testing._deserialize_properties(struct, keep_unknowns)) == sdk
    assert _typed(testing._deserialize_properties(testing._PlainState(value), keep_unknowns)) == sdk


def test_internal_keys_are_left_out_as_the_sdk_leaves_them_out():
    struct = _struct({"__internal": 1, "__provider": "p", "name": "n"})
    assert testing._deserialize_properties(struct, None, False) == {"__provider": "p", "name": "n"}
    assert testing._deserialize_properties(struct) == testing._SDK_DESERIALIZE_PROPERTIES(struct)


def test_the_plain_reader_is_the_sdks_only_while_a_program_runs():
    seen = []
    testing.run_program(lambda: seen.append(rpc.deserialize_properties))
    assert seen == [testing._deserialize_properties]
    assert rpc.deserialize_properties is testing._SDK_DESERIALIZE_PROPERTIES


@pytest.mark.parametrize(("shortcut", "stack"), [
    ("plain_wire_form", "aws-dev"), ("plain_serialization", "aws-dev"), ("outputs_tracked_directly", "aws-dev"),
    ("aliases_on_demand", "azure-dev"),  # azure-native resources carry about 150 aliases each
])
def test_a_plan_is_the_same_with_and_without_a_shortcut_of_the_harness(monkeypatch, shortcut, stack):
    """Every registration's inputs, parent, dependencies and options, the exports and the manifests of a reference
    stack, planned with the shortcut and then without it."""
    from pathlib import Path

    from gpu_platform import plan

    path = Path(__file__).resolve().parents[1] / "stacks" / f"Pulumi.{stack}.yaml"
    fast = plan.plan_stack(stack, path)
    monkeypatch.setattr(testing, shortcut, contextlib.nullcontext)
    slow = plan.plan_stack(stack, path)
    assert [vars(r) for r in fast.recording] == [vars(r) for r in slow.recording]
    assert fast.recording.exports == slow.recording.exports
    assert fast.manifests == slow.manifests


def test_the_dependency_walk_answers_as_the_sdks():
    from pulumi.runtime import resource_cycle_breaker as breaker

    class Node:
        def __init__(self, name):
            self.name = name

    a, b, c, d, e = (Node(n) for n in "abcde")
    for source, targets in ((a, [b, c]), (b, [d]), (c, [d]), (d, [a])):  # a -> b, c -> d -> a: a cycle
        setattr(source, breaker._DEPENDENCIES_PROPERTY, set(targets))
    nodes = [a, b, c, d, e]
    for source in nodes:
        for target in nodes:
            assert testing._reachable(source, target) == breaker._reachable(source, target), (source.name,
                                                                                               target.name)
    assert testing._reachable(b, c) and not testing._reachable(e, a) and testing._reachable(e, e)


def test_the_dependency_walk_is_the_sdks_only_while_a_program_runs():
    from pulumi.runtime import resource_cycle_breaker as breaker

    real, seen = breaker._reachable, []
    testing.run_program(lambda: seen.append(breaker._reachable))
    assert seen == [testing._reachable] and breaker._reachable is real


@pytest.mark.parametrize("value", [
    "x", 1, None, [], {}, {"a": [1, {"b": "c"}]}, [[[]]],
    {"a": [1, {"b": pulumi.output.Unknown()}]}, [pulumi.output.Unknown()], pulumi.output.Unknown(),
])
def test_unknowns_are_found_as_the_sdk_finds_them(value):
    assert testing._contains_unknowns(value) == rpc.contains_unknowns(value)


def test_remembered_type_unwrapping_answers_as_the_sdk():
    from typing import Optional as Opt

    import pulumi_kubernetes as kubernetes
    from pulumi import _types

    annotations = [str, int, Opt[str], pulumi.Output[str], pulumi.Input[str], Opt[pulumi.Input[dict]],
                   pulumi.Input["kubernetes.meta.v1.ObjectMetaArgs"], kubernetes.meta.v1.ObjectMetaArgs,
                   Opt[kubernetes.meta.v1.outputs.ObjectMeta], list[str], dict[str, str]]
    for name in ("unwrap_type", "unwrap_optional_type"):
        real = getattr(_types, name)
        remembered = testing._remembered(real)
        for annotation in annotations * 2:  # the second time from the memo
            assert remembered(annotation) == real(annotation), (name, annotation)


def test_type_unwrapping_is_remembered_only_while_a_program_runs():
    from pulumi import _types

    real, seen = _types.unwrap_type, []
    testing.run_program(lambda: seen.append(_types.unwrap_type))
    assert seen[0] is not real and _types.unwrap_type is real


def test_a_program_is_collected_once_after_it_ran_and_the_collector_is_as_before():
    import gc

    states = []
    testing.run_program(lambda: states.append((gc.isenabled(), gc.get_freeze_count())))
    assert states == [(False, 0)]  # paused, nothing frozen
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        testing.run_program(lambda: None)
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()


def test_the_garbage_of_a_program_is_freed_when_it_returns():
    import gc
    import weakref

    class Held:
        pass

    refs = []

    def program():
        held = Held()
        held.cycle = held  # only the cyclic collector frees it
        refs.append(weakref.ref(held))

    testing.run_program(program)
    assert refs[0]() is None
    gc.freeze()  # a process that froze objects of its own: nothing of it is unfrozen
    try:
        testing.run_program(program)
        assert refs[1]() is None and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_what_a_caller_kept_from_a_program_and_dropped_is_freed_by_the_next_run():
    import asyncio
    import gc
    import weakref

    gc.collect()  # a clean start: nothing of earlier tests pending
    kept: list = []

    def program():
        kept.append(k8s.core.v1.ConfigMap("cm", data={"a": "b"}))  # its Outputs and their tasks refer back to it

    testing.run_program(program)
    ref, tasks = weakref.ref(kept[0]), len(asyncio.tasks._all_tasks)
    assert ref() is not None and tasks > 0  # alive when the run ended: the caller holds it
    kept.clear()  # dropped: garbage, in reference cycles only the cyclic collector frees
    testing.run_program(lambda: None)
    # Freed at the next run's start, not left among the old objects where only a rare full collection looks
    # (where 100,000 tasks once piled up, walked by every run's `asyncio.all_tasks`).
    assert ref() is None and len(asyncio.tasks._all_tasks) < tasks


def _alias_urns(monkeypatch, on_demand: bool):
    """The exported alias URNs of a ConfigMap with a former type, a former name and a former parent."""
    if not on_demand:
        monkeypatch.setattr(testing, "aliases_on_demand", contextlib.nullcontext)
    kinds = []

    def program():
        parent = pulumi.ComponentResource("test:index:Box", "box")
        old_parent = pulumi.ComponentResource("test:index:Old", "old")
        cm = k8s.core.v1.ConfigMap("cm", data={"a": "b"}, opts=pulumi.ResourceOptions(parent=parent, aliases=[
            pulumi.Alias(type_="kubernetes:core/v1:OldMap"), pulumi.Alias(name="former"),
            pulumi.Alias(parent=old_parent), "urn:pulumi:test::gpu-platform::x::y"]))
        kinds.extend(type(a).__name__ for a in cm._aliases)
        pulumi.export("aliases", pulumi.Output.all(*cm._aliases))

    return testing.run_program(program).exports["aliases"], kinds


def test_alias_urns_built_on_demand_are_the_ones_built_at_once(monkeypatch):
    eager, eager_kinds = _alias_urns(monkeypatch, on_demand=False)
    monkeypatch.undo()
    lazy, lazy_kinds = _alias_urns(monkeypatch, on_demand=True)
    assert lazy == eager
    stack = "urn:pulumi:test::gpu-platform::pulumi:pulumi:Stack$"
    assert eager[:3] == [f"{stack}test:index:Box$kubernetes:core/v1:OldMap::cm",
                         f"{stack}test:index:Box$kubernetes:core/v1:ConfigMap::former",
                         f"{stack}test:index:Old$kubernetes:core/v1:ConfigMap::cm"]
    assert lazy_kinds == ["_AliasUrn"] * 4 and "_AliasUrn" not in eager_kinds


def test_an_alias_that_could_fail_is_built_at_once():
    def program():
        cm = k8s.core.v1.ConfigMap("cm", data={"a": "b"}, opts=pulumi.ResourceOptions(aliases=[
            pulumi.Alias(parent="urn:pulumi:test::gpu-platform::test:index:Old::old"),
            pulumi.Output.from_input(pulumi.Alias(name="former"))]))
        assert [type(a) for a in cm._aliases] == [pulumi.Output, pulumi.Output]

    testing.run_program(program)


def _sdk_and_plain(value, typ=None, transformer=None):
    """(the SDK's serialization of ``value``, the plain serializer's), each an answer or the exception raised."""
    from pulumi.runtime.sync_await import _sync_await

    def answer(serialize):
        try:
            return _sync_await(serialize(value, [], "prop", None, transformer, typ))
        except Exception as err:  # noqa: BLE001 - compared below, type and message
            return type(err), str(err)

    return answer(testing._SDK_SERIALIZE_PROPERTY), answer(testing._serialize_property)


@pytest.mark.parametrize(("value", "typ"), [
    ({"name": "a", "labels": {"x": "y"}, "owner_references": [{"api_version": "v1"}]},
     k8s.meta.v1.ObjectMetaArgs),  # snake_case keys of an input type translated, nested ones too
    ({"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}]},
     k8s.meta.v1.ObjectMetaArgs),  # camelCase keys kept
    ({"snake_key": {"deep_key": 1}}, dict[str, dict]),  # a user-defined dict: no translation
    ({"a": [1, 2.5, True, None, "s"], "b": (1, 2)}, None),
    ([{"a": 1}, [2, [3]]], list),
    ({"a": 1}, str),  # a dict where the type says str: passed as is, as the SDK allows
    ([1, 2], str),  # a list where the type says str: the SDK's AssertionError
    ({"x": {"y": "z"}}, Opt[pulumi.Input[dict]]),
])
def test_plain_values_serialize_as_the_sdk_serializes_them(value, typ):
    sdk, plain = _sdk_and_plain(value, typ)
    assert plain == sdk


def test_plain_serialization_translates_keys_with_the_resources_transformer_when_no_type_says():
    sdk, plain = _sdk_and_plain({"a_b": {"c_d": 1}}, None, lambda key: key.upper())
    assert plain == sdk == {"A_B": {"C_D": 1}}


@pytest.mark.parametrize("value", [
    {"a": pulumi.Output.from_input("x")}, [pulumi.Output.secret("s")], {1: "non-string key"},
    k8s.meta.v1.ObjectMetaArgs(name="a"), {"e": pulumi.output.Unknown()},
])
def test_values_holding_more_than_plain_data_go_to_the_sdks_serializer(value):
    with pytest.raises(testing._NotPlain):
        testing._serialized_plain(value, None, None)


def test_plain_serialization_and_direct_output_tracking_only_while_a_program_runs():
    seen = []
    testing.run_program(lambda: seen.append((rpc.serialize_property, pulumi.Output._track)))
    assert seen[0][0] is testing._serialize_property and seen[0][1] is not testing._SDK_OUTPUT_TRACK
    assert rpc.serialize_property is testing._SDK_SERIALIZE_PROPERTY
    assert pulumi.Output._track is testing._SDK_OUTPUT_TRACK


def test_outputs_tracked_directly_leave_the_sdks_set_as_its_own_tracking_does():
    """Unfinished Outputs wait in the run's set; finished ones leave it; a failed one stays for the SDK to report."""
    from pulumi.runtime import settings

    sizes = []

    def program():
        pending = asyncio.get_event_loop().create_future()
        out = pulumi.Output(set(), pending, asyncio.sleep(0, True))
        sizes.append(out._data in settings.SETTINGS.outputs)
        pending.set_result("done")

    testing.run_program(program)
    assert sizes == [True]
    with pytest.raises(RuntimeError, match="boom"):
        testing.run_program(lambda: pulumi.Output.from_input("x").apply(_boom))


def _boom(_value):
    raise RuntimeError("boom")
