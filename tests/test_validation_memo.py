"""Manifest validation remembers the parts it found valid (issue 37 item 2): a plan validates each distinct
(subschema, part) once, and nothing it remembers may change an answer or an error."""

import pytest

from gpu_platform import schemas
from gpu_platform.schemas import ManifestError, validate_manifest


def _policy(name: str, namespace: str) -> dict:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"podSelector": {}}], "ports": [{"port": 8080, "protocol": "TCP"}]}]}}


def _service(ports) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc", "namespace": "ml"},
            "spec": {"selector": {"app": "x"}, "ports": ports}}


def _error(obj: dict) -> str:
    with pytest.raises(ManifestError) as err:
        validate_manifest(obj, "1.34")
    return str(err.value)


@pytest.fixture
def keyword_calls(monkeypatch):
    """The objects the validators apply ``properties`` to (the manifest itself, then every object below it).

    A validator reads its root schema's keywords when it is built: the cached ones are built afresh inside (and
    again after), so that the root's count too whatever ran before."""
    calls = []
    for cached in (schemas.core_validator, schemas._custom_validator):
        cached.cache_clear()
    for cls in (schemas._Draft202012, schemas._Draft7):
        real = cls.VALIDATORS["properties"]

        def counting(validator, properties, instance, schema, real=real):
            calls.append(sorted(instance) if isinstance(instance, dict) else instance)
            return real(validator, properties, instance, schema)

        monkeypatch.setitem(cls.VALIDATORS, "properties", counting)
    yield calls
    for cached in (schemas.core_validator, schemas._custom_validator):
        cached.cache_clear()


def test_a_part_found_valid_is_not_validated_again(keyword_calls):
    schemas.forget_validated()
    validate_manifest(_policy("allow-a", "team-a"), "1.34")
    first = len(keyword_calls)
    assert first > 5  # metadata, spec, ingress rules, peers, ports
    keyword_calls.clear()
    validate_manifest(_policy("allow-b", "team-b"), "1.34")  # same spec, other metadata
    assert keyword_calls == [["apiVersion", "kind", "metadata", "spec"], ["name", "namespace"]]  # not the spec
    keyword_calls.clear()
    schemas.forget_validated()  # a new plan validates afresh
    validate_manifest(_policy("allow-b", "team-b"), "1.34")
    assert len(keyword_calls) == first


def test_a_wrong_part_fails_every_time_with_the_same_error():
    schemas.forget_validated()
    bad = _policy("allow", "team-a")
    bad["spec"]["ingress"][0]["ports"][0]["protocol"] = 7
    message = _error(bad)
    assert message.startswith("NetworkPolicy/allow: spec.ingress.0.ports.0.protocol: 7 is not of type 'string'")
    assert _error(bad) == message
    validate_manifest(_policy("allow", "team-a"), "1.34")  # the good part is remembered...
    assert _error(bad) == message  # ...and the bad one still fails


@pytest.mark.parametrize(("good", "bad", "problem"), [
    ([{"port": 80}], [{"port": True}], "spec.ports.0.port: True is not of type 'integer'"),
    ([{"port": 80}], [{"port": "80"}], "spec.ports.0.port: '80' is not of type 'integer'"),
    ([{"port": 80}], ({"port": 80},), "spec.ports: ({'port': 80},) is not of type 'array', 'null'"),
    ([{"port": 80}], [{1: 80}], None),
])
def test_values_equal_to_a_valid_one_but_of_another_type_are_validated_again(good, bad, problem):
    schemas.forget_validated()
    fresh = None
    try:
        validate_manifest(_service(bad), "1.34")
    except ManifestError as err:
        fresh = str(err)
    schemas.forget_validated()
    validate_manifest(_service(good), "1.34")  # remembered: equal to ``bad`` by ==, or by its JSON text
    try:
        validate_manifest(_service(bad), "1.34")
        after = None
    except ManifestError as err:
        after = str(err)
    assert after == fresh
    if problem is not None:
        assert after == f"Service/svc: {problem}"


def test_custom_resources_remember_their_parts_too(keyword_calls):
    schemas.forget_validated()
    queue = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
             "metadata": {"name": "gpu", "namespace": "team-a"}, "spec": {"clusterQueue": "team-a"}}
    validate_manifest(queue, "1.34")
    assert keyword_calls
    keyword_calls.clear()
    validate_manifest({**queue, "metadata": {"name": "gpu", "namespace": "team-b"}}, "1.34")
    assert keyword_calls == [["spec"]]  # the body, not its spec (the same); the metadata is checked apart
    bad = {**queue, "spec": {"clusterQueue": 3}}
    assert _error(bad) == "LocalQueue/gpu: spec.clusterQueue: 3 is not of type 'string'"
