"""The package's layers (issue 37, docs/architecture.md): no import cycle, nothing imports upward, the Kubernetes
features stay free of cloud SDKs, and the old module paths of moved modules keep importing.

The import graph is built here with `ast` over ``components/gpu_platform`` (module-level and function-level
imports alike, a package's ``__init__`` importing its own submodules not counted), so the test needs nothing
outside the repository.
"""

import ast
import importlib
from pathlib import Path

import pytest

import gpu_platform
from gpu_platform import _moved

PACKAGE_DIR = Path(gpu_platform.__file__).parent
ROOT = PACKAGE_DIR.parents[1]

DATA = {"errors", "fields", "catalog", "versions", "labels", "architectures", "pools", "provisioning", "schemas",
        "_lazy", "_moved"}
"""The data modules, below every feature: they import only each other."""

FEATURES = {"kubernetes_base", "security", "accelerators", "scheduling", "monitoring", "serving", "training",
            "storage", "health", "autoscaling", "optimizer", "upgrades"}
"""The feature packages (``kubernetes_base``, the plumbing they share, among them)."""

ABOVE = {"config", "platform", "plan", "cli", "diagram", "generate", "docgen", "testing", "verify", "verify_live",
         "pool_builder", "provider", "guardrails", "fleet"}
"""The stack parser that composes the features' parsers, the composer, the commands and the generators."""

CLOUD_SDKS = ("pulumi_aws", "pulumi_azure_native", "pulumi_gcp", "pulumi_oci", "boto3", "azure", "google.cloud",
              "oci")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


FILES = {_module_name(p): p for p in PACKAGE_DIR.rglob("*.py")}


def _imported(path: Path, name: str) -> list[tuple[str, int]]:
    """Every dotted name ``path`` imports (absolute), with its line, as the import statement spells it."""
    package = path.name == "__init__.py"
    base = name.split(".") if package else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                prefix = base[: len(base) - node.level + 1]
                module = ".".join(prefix + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found += [(module, node.lineno)] + [(f"{module}.{a.name}", node.lineno) for a in node.names]
    return found


def _graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (a name resolves to its longest known module prefix)."""
    graph: dict[str, set[str]] = {}
    for name, path in FILES.items():
        deps = set()
        for target, _ in _imported(path, name):
            while target and target not in FILES:
                target = target.rpartition(".")[0]
            if target and target != name:
                deps.add(target)
        if path.name == "__init__.py":  # a package exporting its submodules is not a cycle of design
            deps = {d for d in deps if not d.startswith(name + ".")}
        deps -= {d for d in deps if FILES[d].name == "__init__.py" and name.startswith(d + ".")}
        graph[name] = deps
    return graph


GRAPH = _graph()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _layer(module: str) -> str:
    top = module.split(".")[1] if "." in module else ""
    if top in DATA:
        return "data"
    if top in FEATURES:
        return "feature"
    if top in ABOVE:
        return "above"
    if top == "clouds":
        return "clouds"
    return "model"  # config_model and the section parsers beside it, the component contract


def test_the_graph_sees_the_package():
    assert len(FILES) > 150 and "gpu_platform.config" in GRAPH
    assert "gpu_platform.config_model" in GRAPH["gpu_platform.config"]


def test_cycle_detection_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle():
    cycles = _cycles(GRAPH)
    assert cycles == [], "\n".join(
        f"cycle of {len(c)}: " + "; ".join(f"{m} -> {', '.join(sorted(GRAPH[m] & set(c)))}" for m in c)
        for c in cycles)


def test_data_modules_import_only_data():
    upward = {(m, d) for m in GRAPH if _layer(m) == "data" for d in GRAPH[m]
              if d != "gpu_platform" and _layer(d) != "data"}
    assert upward == set()


def test_features_import_nothing_above_them():
    upward = {(m, d) for m in GRAPH if _layer(m) in ("feature", "model", "data") for d in GRAPH[m]
              if _layer(d) == "above"}
    assert upward == set()


def test_no_cloud_sdk_outside_clouds():
    found = [(name, target, line) for name, path in FILES.items() if _layer(name) != "clouds"
             for target, line in _imported(path, name)
             if any(target == sdk or target.startswith(sdk + ".") for sdk in CLOUD_SDKS)]
    assert found == []


# ---------------------------------------------------------------------------------------------------------
# Old module paths


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_an_old_module_path_imports_the_moved_module(old):
    new = _moved.MOVED[old]
    module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__.name == new
    public = [n for n in vars(module) if not n.startswith("_")]
    assert public
    namespace: dict = {}
    exec(f"from {old} import {public[0]}", namespace)
    assert namespace[public[0]] is getattr(module, public[0])
    parent, _, leaf = old.rpartition(".")
    assert getattr(importlib.import_module(parent), leaf) is module  # ``from gpu_platform.kube import nvidia``


def test_old_names_do_not_shadow_live_modules():
    assert not set(_moved.MOVED) & set(FILES)
    assert set(_moved.MOVED.values()) <= set(FILES)


def test_an_unknown_old_name_still_fails():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("gpu_platform.kube.no_such_module")


def _repository_python_files():
    for folder in ("components", "tests", "examples", "stacks", "benchmarks", "scripts", "provider"):
        for path in (ROOT / folder).rglob("*.py"):
            if ".venv" not in path.parts and path.name != "_moved.py":
                yield path


def test_the_repository_imports_the_new_paths():
    """The old paths are for users' code: the library, its tests and examples name the modules where they are."""
    old_names = set(_moved.MOVED)
    found = []
    for path in _repository_python_files():
        name = _module_name(path) if PACKAGE_DIR in path.parents else "outside"
        for target, line in _imported(path, name):
            if target in old_names:
                found.append(f"{path.relative_to(ROOT)}:{line}: {target} -> {_moved.MOVED[target]}")
    assert found == []


def test_only_the_cli_imports_the_fleet_commands():
    """``fleet/`` sits on top of ``plan`` and ``verify_live`` (docs/fleet.md): only the command line imports it."""
    importers = {m for m, deps in GRAPH.items() if not m.startswith("gpu_platform.fleet")
                 and any(d == "gpu_platform.fleet" or d.startswith("gpu_platform.fleet.") for d in deps)}
    assert importers == {"gpu_platform.cli"}
