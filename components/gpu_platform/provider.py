"""The component provider: the platform's components for TypeScript, Go, C#, Java and YAML programs.

``provider/`` at the repository root is a source-based Pulumi plugin (``PulumiPlugin.yaml``, runtime python)
whose ``__main__.py`` calls `main`. A program in any Pulumi language adds it with
``pulumi package add <path or git URL>/provider``; the CLI starts the plugin, reads the schema Pulumi's
analyzer infers from the components' type annotations (args TypedDicts, class-level output annotations,
attribute docstrings) and generates an SDK in the program's language.

`GpuPlatform` is not served: it takes a parsed `PlatformConfig` (frozen dataclasses with tuples), which has no
schema form, and stays a Python-only entry point. Other languages compose the served components instead.

The schema is checked in (``provider/schema.json``, what ``pulumi package get-schema ./provider`` prints), so
a pull request that changes a component's inputs or outputs shows the change; `schema_changes` names the
breaking ones.
"""

import ast
import importlib
import inspect
import json
import re
import sys
import textwrap
import typing
from typing import Any

import pulumi

from . import __version__

PACKAGE = "gpuplatform"
"""Package name: the first part of every type token (``gpuplatform:index:EksCluster``)."""
NAMESPACE = "gpu-platform"
"""Namespace of the generated SDKs (npm scope, Go module path element, .NET namespace prefix)."""

COMPONENTS: tuple[str, ...] = (
    "gpu_platform.clouds.aws.cluster:EksCluster",
    "gpu_platform.clouds.aws.cluster:EksGpuNodePool",
    "gpu_platform.clouds.azure.cluster:AksCluster",
    "gpu_platform.clouds.azure.cluster:AksGpuNodePool",
    "gpu_platform.clouds.gcp.cluster:GkeCluster",
    "gpu_platform.clouds.gcp.cluster:GkeGpuNodePool",
    "gpu_platform.clouds.oci.cluster:OkeCluster",
    "gpu_platform.clouds.oci.cluster:OkeGpuNodePool",
    "gpu_platform.clouds.oci.vcn:OkeVcn",
    "gpu_platform.clouds.existing.cluster:ExistingGpuNodes",
    "gpu_platform.security.network_policy_engine:CalicoPolicyEngine",
    "gpu_platform.accelerators.nvidia:NvidiaGpuStack",
    "gpu_platform.accelerators.neuron:NeuronStack",
    "gpu_platform.accelerators.amd:AmdGpuStack",
    "gpu_platform.accelerators.tpu:TpuJobSet",
    "gpu_platform.accelerators.tpu:TpuSliceJob",
    "gpu_platform.accelerators.rdma:RdmaStack",
    "gpu_platform.scheduling.policy:SchedulingPolicy",
    "gpu_platform.scheduling.tenancy:TeamNamespace",
    "gpu_platform.scheduling.multikueue:MultiKueueManager",
    "gpu_platform.scheduling.multikueue:MultiKueueWorkerAccess",
    "gpu_platform.monitoring.gpu_monitoring:GpuMonitoring",
    "gpu_platform.training.workload:TrainingWorkload",
    "gpu_platform.serving.keda:KedaOperator",
    "gpu_platform.serving.workloads:InferenceService",
    "gpu_platform.serving.gateway:InferenceGateway",
    "gpu_platform.serving.cert_manager:CertManager",
    "gpu_platform.serving.llm:LlmService",
    "gpu_platform.optimizer.gpu_optimizer:GpuOptimizer",
    "gpu_platform.health.gpu_health:GpuHealth",
    "gpu_platform.storage.data_plane:DataPlaneStorage",
    "gpu_platform.clouds.aws.storage_components:EksSharedFileSystem",
    "gpu_platform.clouds.aws.storage_components:EksBucketAccess",
    "gpu_platform.clouds.azure.storage_components:AksSharedFileSystem",
    "gpu_platform.clouds.azure.storage_components:AksBucketAccess",
    "gpu_platform.clouds.gcp.storage_components:GkeSharedFileSystem",
    "gpu_platform.clouds.gcp.storage_components:GkeBucketAccess",
    "gpu_platform.clouds.oci.storage_components:OkeSharedFileSystem",
    "gpu_platform.clouds.oci.storage_components:OkeBucketAccess",
    "gpu_platform.clouds.aws.cluster_autoscaler:EksClusterAutoscaler",
    "gpu_platform.clouds.aws.karpenter:KarpenterAutoscaler",
    "gpu_platform.clouds.oci.autoscaler:OkeClusterAutoscaler",
    "gpu_platform.autoscaling.workload_autoscaling:WorkloadAutoscaling",
)
"""Every served component, as ``module:Class``. Each takes ``args`` typed as a TypedDict."""

PYTHON_ONLY: dict[str, str] = {
    "gpu_platform.platform:GpuPlatform": "takes a parsed PlatformConfig (dataclasses and tuples), not a TypedDict",
}
"""Components deliberately not served, with the reason."""


def load(path: str) -> type[pulumi.ComponentResource]:
    """The class named by ``module:Class``."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def components() -> list[type[pulumi.ComponentResource]]:
    """The served component classes (imports every cloud SDK)."""
    return [load(path) for path in COMPONENTS]


def schema_problems(cls: type[pulumi.ComponentResource]) -> list[str]:
    """What keeps Pulumi's analyzer from inferring a component's schema (its own errors are cryptic)."""
    problems = []
    module = inspect.getmodule(cls)
    source = inspect.getsource(module) if module else ""
    if re.search(r"^from __future__ import annotations", source, re.MULTILINE):
        problems.append(f"{cls.__module__}: 'from __future__ import annotations' hides the annotations from the "
                        "analyzer")
    args = inspect.get_annotations(cls.__init__).get("args")
    if args is None:
        problems.append(f"{cls.__name__}.__init__ needs a parameter named 'args' with a type annotation")
    elif isinstance(args, str) or not typing.is_typeddict(args):
        problems.append(f"{cls.__name__}.__init__: 'args' must be annotated with a TypedDict, not {args!r} "
                        "(no Optional: pass {} for the defaults)")
    token = f"{PACKAGE}:index:{cls.__name__}"
    if f'"{token}"' not in inspect.getsource(cls):
        problems.append(f"{cls.__name__} must register as {token} (the schema's token for it)")
    return problems


def schema() -> dict[str, Any]:
    """The package schema Pulumi infers from the components, computed offline (no CLI, no engine)."""
    from pulumi.provider.experimental.component import ComponentProvider

    served = components()
    problems = [p for cls in served for p in schema_problems(cls)]
    if problems:
        raise ValueError("components the package schema cannot express:\n  " + "\n  ".join(problems))
    provider = ComponentProvider(served, PACKAGE, NAMESPACE, __version__)
    return _with_inherited_descriptions(json.loads(provider.schema), served)


def _typed_dict_docs(args: type) -> dict[str, str]:
    """Attribute docstrings of a TypedDict and of the TypedDicts it extends (the subclass's own win)."""
    from .docgen.attribute_docs import attribute_docs

    docs: dict[str, str] = {}
    # A TypedDict keeps no bases at runtime before Python 3.12 (`__orig_bases__`): read them from its source.
    node = ast.parse(textwrap.dedent(inspect.getsource(args))).body[0]
    module = sys.modules[args.__module__]
    for base in getattr(node, "bases", []):
        found = getattr(module, base.id, None) if isinstance(base, ast.Name) else None
        if found is not None and typing.is_typeddict(found):
            docs.update(_typed_dict_docs(found))
    return {**docs, **attribute_docs(args, raw=True)}


def _with_inherited_descriptions(value: dict[str, Any], served: list[type[pulumi.ComponentResource]]) -> dict[str, Any]:
    """The schema with the descriptions Pulumi's analyzer leaves out: it reads the docstrings of an args TypedDict's
    own fields only, not of those it inherits (`GkeGpuNodePoolArgs` extends `GkeGpuPoolArgs`)."""
    from .component_args import camel_case

    for cls in served:
        resource = (value.get("resources") or {}).get(f"{PACKAGE}:index:{cls.__name__}")
        if resource is None:
            continue
        docs = {camel_case(k): v for k, v in _typed_dict_docs(inspect.get_annotations(cls.__init__)["args"]).items()}
        for prop, spec in (resource.get("inputProperties") or {}).items():
            if not spec.get("description") and docs.get(prop):
                spec["description"] = docs[prop]
    return value


def schema_text(value: dict[str, Any]) -> str:
    """The schema as checked in: sorted keys, two-space indent, trailing newline (stable diffs)."""
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


def _props(resource: dict[str, Any], key: str) -> dict[str, Any]:
    return resource.get(key) or {}


def _type_of(prop: dict[str, Any]) -> str:
    return prop.get("$ref") or prop.get("type") or "?"


def schema_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Differences between two schemas a consumer would notice, breaking ones marked ``BREAKING``.

    Breaking: a removed resource, input, output or type property; an input that became required; a changed
    property type. Additive: new resources, optional inputs and outputs. Descriptions are ignored here (the
    snapshot diff shows them).
    """
    changes: list[str] = []
    for kind in ("resources", "types"):
        before, after = old.get(kind) or {}, new.get(kind) or {}
        for token in sorted(set(before) - set(after)):
            changes.append(f"BREAKING: {kind[:-1]} {token} removed")
        for token in sorted(set(after) - set(before)):
            changes.append(f"added {kind[:-1]} {token}")
        for token in sorted(set(before) & set(after)):
            sections = ("inputProperties", "properties") if kind == "resources" else ("properties",)
            for section in sections:
                label = {"inputProperties": "input", "properties": "output" if kind == "resources" else "property"}[
                    section]
                b, a = _props(before[token], section), _props(after[token], section)
                for prop in sorted(set(b) - set(a)):
                    changes.append(f"BREAKING: {token} {label} {prop} removed")
                for prop in sorted(set(a) - set(b)):
                    changes.append(f"added {token} {label} {prop}")
                for prop in sorted(set(a) & set(b)):
                    if _type_of(a[prop]) != _type_of(b[prop]):
                        changes.append(f"BREAKING: {token} {label} {prop} type {_type_of(b[prop])} -> "
                                       f"{_type_of(a[prop])}")
            required_key = "requiredInputs" if kind == "resources" else "required"
            newly = set(after[token].get(required_key) or []) - set(before[token].get(required_key) or [])
            for prop in sorted(newly):
                changes.append(f"BREAKING: {token} {prop} is now required")
    return changes


def main() -> None:
    """Serve the components to the Pulumi engine (called by ``provider/__main__.py``)."""
    from pulumi.provider.experimental import component_provider_host

    component_provider_host(components(), PACKAGE, NAMESPACE, __version__)
