"""The offline plan: run the project program under the mock engine per stack and write what it would create.

Per stack, ``<out>/<stack>/plan.json`` (every registration with its inputs in wire form, secrets redacted) and
``<out>/<stack>/manifests.yaml`` (every Kubernetes object, validated against its schema). Output is
deterministic: registrations and objects are sorted and serialised with sorted keys.

The project is the Pulumi project around the working directory (`find_project`: the nearest ``Pulumi.yaml``
upwards); its stack files are in its ``stackConfigDir`` and its program is its ``main``, so a project that installs
the package (not only this repository) plans its own stacks.
"""

import datetime
import json
import os
import runpy
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from .config import PlatformConfig, Secret, parse_config, redact_secure, strip_namespace
from .errors import ConfigError
from .schemas import ManifestError, forget_validated, validate_manifest
from .testing import Recording, Registration, is_manifest_type, run_program
from .upgrades import kubernetes_versions

PROJECT_NAME = "gpu-platform"
"""The project name a run uses when the stack file is in no Pulumi project (``--config FILE`` elsewhere)."""
PROJECT_FILES = ("Pulumi.yaml", "Pulumi.yml")

# Namespaces and cluster-wide kinds first, so `kubectl apply -f manifests.yaml` creates what others need.
_APPLY_ORDER = {"Namespace": 0, "CustomResourceDefinition": 1, "PriorityClass": 2, "ServiceAccount": 3,
                "ClusterRole": 3, "Role": 3, "ConfigMap": 4, "Secret": 4}


@dataclass(frozen=True)
class Project:
    """A Pulumi project as ``gpu-platform plan`` uses it."""

    root: Path
    """The directory of ``Pulumi.yaml``."""
    name: str
    stacks_dir: Path
    """Where ``Pulumi.<stack>.yaml`` files are: ``stackConfigDir``, else the project directory."""
    program: Path
    """``main`` (a directory with ``__main__.py`` or a ``.py`` file), else the project directory."""


def read_project(project_file: Path) -> Project:
    """The `Project` a ``Pulumi.yaml`` describes."""
    try:
        document = yaml.safe_load(project_file.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError("", f"cannot read {project_file}: {str(err).splitlines()[0]}") from None
    if not isinstance(document, dict):
        raise ConfigError("", f"{project_file} is not a Pulumi project file (a mapping with name and runtime)")
    root = project_file.parent.resolve()
    name = str(document.get("name") or root.name)
    stacks_dir = root / str(document.get("stackConfigDir") or ".")
    program = root / str(document.get("main") or ".")
    return Project(root, name, stacks_dir.resolve(), program.resolve())


def find_project(start: Optional[Path] = None) -> Project:
    """The Pulumi project containing ``start`` (default: the working directory): the nearest ``Pulumi.yaml`` at or
    above it. Raises `ConfigError` (one line) when there is none."""
    here = Path(start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        for name in PROJECT_FILES:
            if (directory / name).is_file():
                return read_project(directory / name)
    raise ConfigError("", f"not inside a Pulumi project: no Pulumi.yaml in {here} or any parent directory "
                          "(run gpu-platform plan in your project, or pass --config FILE)")


def _stacks_dir(stacks_dir: Optional[Path]) -> Path:
    return stacks_dir if stacks_dir is not None else find_project().stacks_dir


@dataclass
class StackPlan:
    """The result of planning one stack."""

    stack: str
    config: PlatformConfig
    recording: Recording
    manifests: list[dict]
    errors: list[str] = field(default_factory=list)


def stack_name_of(path: Path) -> str:
    """``Pulumi.aws-dev.yaml`` -> ``aws-dev``."""
    name = path.name
    if not (name.startswith("Pulumi.") and name.endswith((".yaml", ".yml"))) or name in ("Pulumi.yaml", "Pulumi.yml"):
        raise ConfigError("", f"'{path}' is not a stack file (Pulumi.<stack>.yaml)")
    return name[len("Pulumi."):].rsplit(".", 1)[0]


def discover_stacks(stacks_dir: Optional[Path] = None) -> dict[str, Path]:
    """Every ``Pulumi.<stack>.yaml`` in the stacks directory (default: the working directory's project's), by stack
    name."""
    return {stack_name_of(p): p for p in sorted(_stacks_dir(stacks_dir).glob("Pulumi.*.yaml"))}


def load_stack_file(path: Path) -> dict[str, Any]:
    """The stack file's ``config:`` mapping (namespaced keys), with ``secure:`` values redacted."""
    stack = stack_name_of(path)
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError("", f"cannot read {path.name}: {str(err).splitlines()[0]}", stack) from None
    if not isinstance(document, dict) or not isinstance(document.get("config", {}), dict):
        raise ConfigError("config", "must be a mapping of namespaced keys", stack)
    return redact_secure(document.get("config") or {})


def _secret_keys(config: dict[str, Any]) -> list[str]:
    def has_secret(v: Any) -> bool:
        if isinstance(v, Secret):
            return True
        if isinstance(v, dict):
            return any(has_secret(x) for x in v.values())
        if isinstance(v, list):
            return any(has_secret(x) for x in v)
        return False

    return sorted(k for k, v in config.items() if has_secret(v))


def _program(program: Optional[Path]):
    """The project's program (``main``: a directory with ``__main__.py`` or a Python file), else the platform's."""
    if program is not None:
        if program.is_dir() and (program / "__main__.py").exists():
            return lambda: runpy.run_path(str(program), run_name="__main__")  # its directory on sys.path, as Pulumi
        if program.is_file() and program.suffix == ".py":
            return lambda: runpy.run_path(str(program), run_name="__main__")
    from .platform import main as platform_main

    return platform_main


def project_of(stack_file: Path) -> Optional[Project]:
    """The project a stack file belongs to: the one around it, else the working directory's, else None."""
    for start in (stack_file.parent, None):
        try:
            return find_project(start)
        except ConfigError:
            continue
    return None


def plan_stack(stack: str, stack_file: Path, program_dir: Optional[Path] = None) -> StackPlan:
    """Validate one stack's configuration, then run the project program offline and render its objects.

    The program is ``program_dir``'s ``__main__.py`` when given, else the ``main`` of the stack file's project,
    else the platform's own program (`gpu_platform.platform.main`). Raises `ConfigError` (nothing registered)
    for bad configuration.
    """
    namespaced = load_stack_file(stack_file)
    config = parse_config(strip_namespace(namespaced), stack)
    project = project_of(stack_file)
    _check_multikueue_workers(config, stack_file, project.name if project else PROJECT_NAME)
    program = program_dir if program_dir is not None else project.program if project else None
    recording = run_program(_program(program), stack=stack, project=project.name if project else PROJECT_NAME,
                            config=namespaced, secret_keys=_secret_keys(namespaced))
    manifests = render_manifests(recording)
    forget_validated()  # each plan validates afresh: nothing carries over from another plan
    errors = []
    for obj in manifests:
        try:
            validate_manifest(obj, config.kubernetes_version)
        except ManifestError as err:
            errors.append(str(err))
    return StackPlan(stack, config, recording, manifests, errors)


def _check_multikueue_workers(config: PlatformConfig, stack_file: Path, project: str) -> None:
    """A MultiKueue manager's worker stacks whose stack files are beside its own (same project): each must be a
    worker with every team of the manager (`multikueue_config.check_worker_stacks`). Raises `ConfigError`."""
    from .scheduling.multikueue_config import check_worker_stacks

    settings = config.multikueue
    if settings is None or not settings.manager:
        return
    found = {}
    for i, worker in enumerate(settings.workers):
        path = stack_file.parent / f"Pulumi.{worker.stack_name}.yaml"
        if worker.project == project and path.is_file():
            found[i] = parse_config(strip_namespace(load_stack_file(path)), worker.stack_name)
    try:
        check_worker_stacks(settings, config.teams, project, config.stack, found)
    except ConfigError as err:
        raise err.for_stack(config.stack) from None


def manifest_of(reg: Registration) -> dict:
    """The Kubernetes object a registration creates (the logical name stands in for an auto-name)."""
    obj = dict(reg.inputs)
    group_version, kind = reg.type.split(":")[1], reg.type.split(":")[2]
    group, version = group_version.split("/")
    obj.setdefault("apiVersion", version if group == "core" else f"{group}/{version}")
    obj.setdefault("kind", kind)
    metadata = dict(obj.get("metadata") or {})
    metadata.setdefault("name", reg.name)
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items() if not k.startswith("pulumi.com/")}
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    obj["metadata"] = metadata
    return obj


def _sort_key(obj: dict) -> tuple:
    meta = obj.get("metadata", {})
    return (_APPLY_ORDER.get(obj["kind"], 9), obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


def render_manifests(recording: Recording) -> list[dict]:
    """Every Kubernetes object of a run, in apply order."""
    objects = [manifest_of(r) for r in recording if r.custom and is_manifest_type(r.type)]
    return sorted(objects, key=_sort_key)


def plan_json(plan: StackPlan) -> dict:
    """The ``plan.json`` document of DESIGN § gpu-platform plan, with the stack's ``cloud`` and Kubernetes minor
    (``kubernetesVersion``) that ``gpu-platform diff`` checks an upgrade step against, and, where the stack's
    configuration implies any, the GPU guardrails' settings (``policyConfig``: an existing cluster whose
    NetworkPolicy engine runs outside the stack) that ``gpu-platform policy check`` applies to the plan."""
    from .guardrails.plan_check import policy_config_of

    document = {
        "stack": plan.stack,
        "cloud": plan.config.cloud,
        "kubernetesVersion": plan.config.kubernetes_version,
        "resources": [
            {"urn": r.urn, "type": r.type, "name": r.name, "parent": r.parent, "custom": r.custom,
             "protect": r.protect, "inputs": r.inputs, **_moved_from(r)}
            for r in plan.recording
        ],
    }
    implied = policy_config_of(plan.config)
    if implied:
        document["policyConfig"] = implied
    references = stack_references(plan.recording)
    if references:
        document["stackReferences"] = [{"urn": r.urn, "stack": r.inputs["id"], "outputs": OFFLINE_OUTPUTS_NOTE}
                                       for r in references]
    return document


OFFLINE_OUTPUTS_NOTE = "offline stand-ins (gpu_platform.testing.offline_stack_outputs): no stack was read"
"""What plan.json says of the outputs of every stack the program references: the plan is offline."""


def stack_references(recording: Recording) -> list[Registration]:
    """The `pulumi.StackReference` reads of a run (answered with `testing.offline_stack_outputs`)."""
    return [r for r in getattr(recording, "reads", []) if r.type == "pulumi:pulumi:StackReference"]


def _moved_from(registration: Any) -> dict[str, list[str]]:
    """``aliases``: the former URNs of a custom resource that moved (another parent or name, same type), which
    ``gpu-platform diff`` pairs it with; absent otherwise. The providers' own aliases of versioned types are left
    out: they name no URN an earlier plan had."""
    same_type = [a for a in registration.aliases if a.split("::")[2].split("$")[-1] == registration.type]
    return {"aliases": same_type} if same_type and registration.custom else {}


def write_plan(plan: StackPlan, out_dir: Path) -> Path:
    """Write ``plan.json`` and ``manifests.yaml`` under ``out_dir/<stack>``; returns that directory."""
    target = out_dir / plan.stack
    target.mkdir(parents=True, exist_ok=True)
    (target / "plan.json").write_text(json.dumps(plan_json(plan), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    docs = yaml.safe_dump_all(plan.manifests, sort_keys=True, default_flow_style=False, width=120)
    (target / "manifests.yaml").write_text(docs, encoding="utf-8")
    return target


def component_counts(recording: Recording) -> list[tuple[str, str, int]]:
    """(component type, component name, custom resources directly under it), components in URN order."""
    components = {r.urn: r for r in recording if not r.custom and not r.type.startswith("kubernetes:")}
    counts = Counter(r.parent for r in recording if r.custom)
    return [(c.type.split(":")[-1], c.name, counts.get(urn, 0)) for urn, c in components.items()]


def summary(plan: StackPlan, today: Optional[datetime.date] = None) -> str:
    """The readable summary printed per stack. ``today`` (default: the system date) dates the warning about a
    Kubernetes minor near or past its end of standard support; plan.json never depends on it."""
    rec = plan.recording
    custom = [r for r in rec if r.custom]
    pools = plan.config.gpu_pools()
    # The NVIDIA software choice means nothing on a cluster of other vendors' accelerators, which gets none.
    software = (plan.config.gpu_software if any(p.vendor == "nvidia" for p in pools) or not pools
                else "none (no NVIDIA pools)")
    lines = [
        f"stack {plan.stack} ({plan.config.cloud}{', ' + plan.config.region if plan.config.region else ''}, "
        f"Kubernetes {plan.config.kubernetes_version}, GPU software {software}): "
        f"{len(rec)} resources, {len(custom)} custom, {len(plan.manifests)} Kubernetes objects",
    ]
    warning = kubernetes_versions.support_warning(plan.config.cloud, plan.config.kubernetes_version,
                                                  today or datetime.date.today())
    if warning:
        lines.append(f"  {warning}")
    lines.append("  components:")
    lines += [f"    {kind:<28} {name:<40} {count:>4}" for kind, name, count in component_counts(rec)]
    lines.append("  GPU pools:")
    lines.append(f"    {'pool':<18} {'instance type':<28} {'GPU':<10} {'GPUs/node':>9} {'nodes':>8} "
                 f"{'max GPUs':>8} {'sharing':<16} rdma")
    for pool in pools:
        sharing = pool.sharing.mode + (f" x{pool.sharing.replicas}" if pool.sharing.shared else "") + (
            f" {pool.sharing.mig_profile}" if pool.sharing.mig_profile else "")
        lines.append(f"    {pool.name:<18} {pool.instance_type or '-':<28} {pool.gpu_model:<10} "
                     f"{pool.gpus_per_node:>9} "
                     f"{pool.min_nodes:>3}-{pool.max_nodes:<4} {pool.max_gpus:>8} {sharing:<16} "
                     f"{pool.rdma_fabric or '-'}")
    references = stack_references(rec)
    if references:
        lines.append(f"  stack references (offline stand-in outputs): {', '.join(r.inputs['id'] for r in references)}")
    for err in plan.errors:
        lines.append(f"  INVALID {err}")
    # The guardrails of the policy pack (gpu-platform policy check): printed, never a planning error.
    from .guardrails import plan_check

    for violation in plan_check.check_document(plan_json(plan)):
        lines.append(f"  POLICY {violation.line()}")
    return "\n".join(lines)


def resolve_stacks(names: list[str], config_file: Optional[Path],
                   stacks_dir: Optional[Path] = None) -> dict[str, Path]:
    """The stacks a ``plan`` invocation covers: ``--config FILE``, the named stacks, or every stack (of the
    working directory's project unless ``stacks_dir`` is given)."""
    if config_file is not None:
        return {stack_name_of(config_file): config_file}
    stacks_dir = _stacks_dir(stacks_dir)
    available = discover_stacks(stacks_dir)
    if not names:
        return available
    missing = [n for n in names if n not in available]
    if missing:
        from .errors import did_you_mean

        raise ConfigError("", f"no stack file {_display(stacks_dir / f'Pulumi.{missing[0]}.yaml')}"
                              f"{did_you_mean(missing[0], list(available))}", missing[0])
    return {n: available[n] for n in names}


def _display(path: Path) -> str:
    """A path relative to the working directory when it is below it, else absolute."""
    relative = os.path.relpath(path)
    return path.as_posix() if relative.startswith("..") else Path(relative).as_posix()
