"""Schema validation of rendered manifests: core kinds by Kubernetes' OpenAPI, custom resources by their CRDs.

Core objects are checked with `kubernetes-validate` at the stack's Kubernetes version (strict: unknown fields
fail). Custom resources are checked against the ``openAPIV3Schema`` of the upstream CRD at the pinned chart
version, kept under ``crd_schemas/<group>/<version>/<Kind>.json`` (each file names its source).
"""

import functools
import json
import marshal
import re
from pathlib import Path
from typing import Any, Optional

import jsonschema
import referencing
from kubernetes_validate import utils as kv_utils

CRD_SCHEMA_DIR = Path(__file__).parent / "crd_schemas"

# Parts of manifests already found valid, by (validator class, subschema, exact value): a plan renders the same
# parts many times (every team's NetworkPolicies, the same flavor entries in every ClusterQueue), and the answer for
# a part depends on nothing else. Only valid parts are kept: a wrong one is checked again and reported as before.
_VALID: set[tuple[int, int, bytes]] = set()
_VALID_LIMIT = 200_000
"""Entries kept at most (a bound for long-lived processes)."""


class ManifestError(ValueError):
    """A manifest that does not match its schema."""


@functools.cache
def crd_schema(api_version: str, kind: str) -> Optional[dict]:
    """The vendored ``openAPIV3Schema`` of a custom resource kind, or None when none is kept."""
    path = CRD_SCHEMA_DIR / api_version / f"{kind}.json"
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))["schema"]


def validate_manifest(obj: dict, kubernetes_version: str) -> None:
    """Raise `ManifestError` naming the object when it does not match its schema.

    A custom resource without a vendored schema raises too: every kind the platform renders must be checked.
    """
    name = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
    api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
    schema = crd_schema(api_version, kind)
    if schema is not None:
        _validate_custom(obj, schema, name)
        return
    validator = core_validator(kubernetes_version, api_version, kind)
    if validator is None:
        raise ManifestError(f"{name}: no schema for {api_version} {kind}")
    error = jsonschema.exceptions.best_match(validator.iter_errors(obj))
    if error is not None:
        path = ".".join(str(p) for p in error.path) or "(root)"
        raise ManifestError(f"{name}: {path}: {error.message}")


def forget_validated() -> None:
    """Empty the memo of parts found valid (`gpu_platform.plan.plan_stack` does before validating a plan's
    manifests, so every plan's figures and memory are its own)."""
    _VALID.clear()


def _part_key(validator: Any, schema: Any, instance: Any) -> Optional[tuple[int, int, bytes]]:
    """The memo key of validating ``instance`` (a mapping or list) against ``schema``, or None when it has none.

    `marshal` writes exact built-in types only and keeps apart what the validator tells apart but ``==`` mixes
    (``True`` and ``1``, ``1`` and ``1.0``, a list and a tuple, ``1`` and ``"1"`` as keys); it refuses anything
    else (a subclass, an object), which is validated without the memo. Version 2 writes no back-references, so
    the bytes depend on the values only. The subschema is keyed by identity: every schema is held by a validator
    cached for the process, and a subschema sits at one place of one document, so its base URI is fixed too."""
    if type(schema) is not dict or type(instance) not in (dict, list):
        return None  # True/False schemas and scalars are answered at once
    try:
        return id(type(validator)), id(schema), marshal.dumps(instance, 2)
    except ValueError:
        return None


def _remembering(base: Any) -> Any:
    """The jsonschema validator class ``base`` (same keywords, type and format checkers) whose ``descend``, the step
    into every subschema, skips a (subschema, part) pair already found valid and remembers those it finds valid.
    Errors are never remembered: an invalid part yields the same errors, in the same order, every time."""
    cls = jsonschema.validators.extend(base)
    descend = cls.descend

    def remembering_descend(self, instance, schema, path=None, schema_path=None, resolver=None):
        key = _part_key(self, schema, instance)
        if key is not None and key in _VALID:
            return
        errors = list(descend(self, instance, schema, path=path, schema_path=schema_path, resolver=resolver))
        if not errors and key is not None:
            if len(_VALID) >= _VALID_LIMIT:
                _VALID.clear()
            _VALID.add(key)
        yield from errors

    cls.descend = remembering_descend
    return cls


_Draft202012 = _remembering(jsonschema.validators.Draft202012Validator)
_Draft7 = _remembering(jsonschema.validators.Draft7Validator)


def _minor(version: str) -> tuple[int, int]:
    major, minor = kv_utils.major_minor(version.lstrip("v")).split(".")
    return int(major), int(minor)


@functools.cache
def _definitions(schema_dir: str, version: str) -> referencing.Registry:
    defs = kv_utils.schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json", version)
    return referencing.Resource.from_contents(defs) @ referencing.Registry()


@functools.cache
def core_validator(kubernetes_version: str, api_version: str, kind: str):
    """A strict validator for a core kind, built once per (version, kind): the same schema files and rules
    kubernetes-validate uses, without re-reading its 1 MB definitions file for every object."""
    wanted = _minor(kubernetes_version)
    candidates = [v for v in kv_utils.all_versions() if _minor(v) <= wanted]
    if not candidates:
        raise ManifestError(f"Kubernetes {kubernetes_version} is older than any schema kubernetes-validate ships")
    version = candidates[-1]
    schema_dir = f"v{version}-local-strict"
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = kv_utils.schema_contents(
            f"kubernetes-json-schema/{schema_dir}/{kind.lower()}-{group_version}.json", version)
    except (FileNotFoundError, kv_utils.SchemaNotFoundError):
        return None
    registry = referencing.Resource.from_contents(schema) @ _definitions(schema_dir, version)
    return _Draft202012(schema, registry=registry)


@functools.cache
def _custom_validator(api_version: str, kind: str):
    return _Draft7(_without_k8s_extensions(crd_schema(api_version, kind)))


def _validate_custom(obj: dict, schema: dict, name: str) -> None:
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    validator = _custom_validator(obj["apiVersion"], obj["kind"])
    errors = sorted(validator.iter_errors(body), key=lambda e: list(e.path))
    if errors:
        err = errors[0]
        path = ".".join(str(p) for p in err.path) or "(root)"
        raise ManifestError(f"{name}: {path}: {err.message}")
    if not obj.get("metadata", {}).get("name"):
        raise ManifestError(f"{name}: metadata.name is required")


CASE_INSENSITIVE_ANCHORED = "^(?i)"
"""How some CRD patterns start (Kueue's AdmissionCheck ``parameters.kind``, PrometheusRule's ``abort|warn``)."""


def _without_k8s_extensions(schema: dict) -> dict:
    """CRD schemas are structural OpenAPI; make them strict JSON Schema (unknown fields rejected)."""
    if not isinstance(schema, dict):
        return schema
    # ``properties`` maps names to schemas: each schema is converted once (converting the map as if it were a
    # schema too, as before, doubled the work at every level: 2 s for EnvoyProxy's deep schema, the same for
    # JobSet's and cert-manager's Issuer).
    out = {k: {name: _without_k8s_extensions(s) for name, s in v.items()} if k == "properties" else
           _without_k8s_extensions(v) if isinstance(v, dict) else
           [_without_k8s_extensions(i) for i in v] if isinstance(v, list) else v
           for k, v in schema.items() if not k.startswith("x-kubernetes-")}
    if ("properties" in out and "additionalProperties" not in out
            and not schema.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if schema.get("nullable"):
        out.pop("nullable", None)
    pattern = out.get("pattern")
    if isinstance(pattern, str) and pattern.startswith(CASE_INSENSITIVE_ANCHORED):
        # Go's RE2 takes a flag group after the anchor; Python's ``re`` wants global flags first.
        out["pattern"] = "(?i)^" + pattern[len(CASE_INSENSITIVE_ANCHORED):]
    return out
