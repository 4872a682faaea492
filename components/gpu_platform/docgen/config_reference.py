"""``docs/configuration.md``: every configuration key, its type, default and meaning, from the config model.

Where each column comes from:

- keys: the ``check_keys`` calls of the parsers (`accepted_keys`) and the ``TOP_LEVEL_KEYS``/``POOL_KEYS``/
  ``CLUSTER_KEYS`` constants, so the reference lists exactly what a stack file may contain;
- description: the docstring of the dataclass field the key is parsed into (`attribute_docs`);
- type: that field's annotation;
- default: found by running the parser. A key is *required* when leaving it out of a minimal stack is a
  ``ConfigError`` (``... is required``); otherwise the default is the value the parser produced for a minimal
  stack of each cloud, unless the description states the default itself (computed defaults such as "8 per GPU").

A key without a docstring on its field is an error: the reference never shows an undocumented key.
"""

import copy
import dataclasses
import importlib
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Optional

from .. import catalog, config, control_plane, labels, node_pools, pools
from ..autoscaling import autoscaling_config
from ..errors import ConfigError
from ..health import health_config
from ..monitoring import monitoring_config
from ..optimizer import optimizer_config
from ..scheduling import multikueue_config, queue_config, scheduling_config
from ..serving import gateway_config, inference_config, llm_config
from ..storage import storage_config
from ..training import training_config
from ..upgrades import maintenance, pool_upgrade
from .accepted_keys import keys_checked_in
from .attribute_docs import attribute_docs, class_doc

CLOUDS = ("aws", "azure", "gcp", "oci", "existing")
MANAGED_CLOUDS = ("aws", "azure", "gcp", "oci")
"""Clouds whose control plane the platform creates (`control_plane` keys)."""
SECTIONS: dict[str, ModuleType] = {
    "monitoring": monitoring_config,
    "scheduling": scheduling_config,
    "inference": inference_config,
    "optimizer": optimizer_config,
    "autoscaling": autoscaling_config,
    "training": training_config,
}
"""Top-level mapping sections, each parsed by ``<module>.parse_<section>`` (its feature's parser, `config`
composes them) into ``PlatformConfig.<section>``."""

# Keys whose field name is not the key in snake_case.
FIELD_ALIASES = {
    "memoryQuotaGi": "memory_quota_gib",
    "capacityBlock": "capacity_block",
    "profile": "mig_profile",
    "gpuCount": "gpus_per_node",
}
# A description that states the default itself (computed or conditional defaults); "AKS's own default" and
# "the cluster's default class" name someone else's default, not the key's.
DEFAULT_STATED = re.compile(r"(?<!own )\bdefault\b(?! class)|\bderived\b", re.IGNORECASE)

# Minimal stacks: only what each cloud requires. Defaults are read from parsing these.
_TEAM = {"name": "team-a"}


def _shape(cloud: str) -> str:
    """The first catalogued shape of a cloud that needs no attached accelerator."""
    return next(s.name for s in catalog.shapes_of(cloud) if not s.attachable_accelerators)


def minimal_raw(cloud: str) -> dict[str, Any]:
    """The smallest valid ``gpu-platform`` configuration of ``cloud`` (one pool, one team)."""
    if cloud == "existing":
        pool: dict[str, Any] = {"name": "gpu", "gpuModel": "h100", "gpusPerNode": 8}
        # A team is isolated by NetworkPolicies, which an existing cluster must declare it enforces.
        return {"cloud": cloud, "nodePools": [pool], "teams": [dict(_TEAM)], "networkPolicyEnforced": True}
    raw: dict[str, Any] = {"cloud": cloud, "region": {"aws": "us-west-2", "azure": "westeurope", "gcp": "us-central1",
                                                      "oci": "us-ashburn-1"}[cloud],
                           "nodePools": [{"name": "gpu", "instanceType": _shape(cloud)}], "teams": [dict(_TEAM)]}
    if cloud == "oci":
        raw["compartmentId"] = "ocid1.compartment.oc1..aaaaaaaadocsexample"
    return raw


# ---------------------------------------------------------------------------------------------------------
# Sections


@dataclass(frozen=True)
class Section:
    """One table of the reference: keys at one place in the stack file, parsed into one dataclass."""

    anchor: str
    title: str
    path: str
    """Where the keys live (``""`` top level, ``nodePools[]``, ``monitoring``...), as error paths spell it."""
    model: type
    """The dataclass the keys are parsed into."""
    keys: tuple[str, ...]
    clouds: tuple[str, ...]
    """Clouds the keys apply to."""
    values: Callable[[config.PlatformConfig], Any]
    """The parsed object of this section in a parsed configuration."""
    probe: Callable[[dict], dict] = lambda raw: raw
    """Adds what the minimal stack lacks for this section to exist (an example taint)."""
    field_of: Callable[[str], str] = lambda key: field_name(key)


def field_name(key: str) -> str:
    """``instanceType`` -> ``instance_type``; ``diskSizeGiB`` -> ``disk_size_gib``; aliases where they differ."""
    if key in FIELD_ALIASES:
        return FIELD_ALIASES[key]
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key.replace("GiB", "Gib")).lower()


def _options_module(cloud: str) -> ModuleType:
    return importlib.import_module(f"gpu_platform.clouds.{cloud}.options")


def _return_type(function: Callable) -> type:
    return typing.get_type_hints(function)["return"]


def _with_taint(raw: dict) -> dict:
    """The minimal stack with one taint in mapping form on its pool (only its key given)."""
    raw["nodePools"][0]["taints"] = [{"key": "example.com/dedicated"}]
    return raw


def _with_llm(raw: dict) -> dict:
    """The minimal stack serving a small model its pool holds on every cloud."""
    raw["llm"] = {"model": "Qwen/Qwen3-0.6B"}
    return raw


def _with_multikueue(raw: dict) -> dict:
    """The minimal stack as a MultiKueue manager of one worker stack."""
    raw["multikueue"] = {"role": "manager", "workers": [{"name": "worker", "stack": "acme/gpu-platform/worker"}]}
    return raw


def _with_storage(raw: dict) -> dict:
    """The minimal stack with a shared file system (a class on existing clusters) and, on clouds, a bucket."""
    cloud = raw["cloud"]
    shared: dict[str, Any] = {"sizeGiB": 36000}
    if cloud == "existing":
        shared["storageClass"] = "cephfs"
    raw["storage"] = {"sharedFileSystem": shared}
    if cloud != "existing":
        raw["storage"]["buckets"] = [{"name": "datasets", "bucket": "docs-example",
                                      **({"storageAccount": "docsexample"} if cloud == "azure" else {})}]
    return raw


def _storage_field(key: str) -> str:
    """The `storage_config` field of a storage key (``profile`` is a bucket's own, not a pool's MIG profile)."""
    return {"throughputPerTiB": "throughput_per_tib", "profile": "profile"}.get(key) or field_name(key)


def shared_sections() -> list[Section]:
    """Keys every cloud accepts."""
    sections = [
        Section("top-level-keys", "Top-level keys", "", config.PlatformConfig, tuple(sorted(config.TOP_LEVEL_KEYS)),
                CLOUDS, lambda c: c),
        Section("nodepools", "`nodePools[]`", "nodePools[]", config.NodePoolConfig, tuple(sorted(config.POOL_KEYS)),
                CLOUDS, lambda c: c.node_pools[0]),
        Section("nodepools-sharing", "`nodePools[].sharing`", "nodePools[].sharing", pools.Sharing,
                tuple(sorted(keys_checked_in(node_pools, "parse_sharing"))), CLOUDS, lambda c: c.node_pools[0].sharing),
        Section("nodepools-taints", "`nodePools[].taints[]`", "nodePools[].taints[]", labels.Taint,
                tuple(sorted(keys_checked_in(node_pools, "parse_taint"))), CLOUDS, lambda c: c.node_pools[0].taints[0],
                probe=_with_taint),
        Section("teams", "`teams[]`", "teams[]", config.TeamConfig,
                tuple(sorted(keys_checked_in(scheduling_config, "parse_team") - set(scheduling_config.QUEUE_KEYS))),
                CLOUDS, lambda c: c.teams[0]),
        # A team's own Kueue settings live in `TeamConfig.queue`, its preemption one level further.
        Section("teams-kueue", "`teams[]`: the team's Kueue queue", "teams[]", queue_config.TeamQueue,
                tuple(sorted(scheduling_config.QUEUE_KEYS)), CLOUDS, lambda c: c.teams[0].queue),
        _parsed_in(scheduling_config, "_parse_preemption", "teams[].preemption", queue_config.QueuePreemption,
                   lambda c: c.teams[0].queue.preemption),
    ]
    sections.append(Section("control-plane", "Managed clouds: API endpoint and Secrets encryption", "",
                            control_plane.ControlPlaneSecurity, tuple(sorted(control_plane.KEYS)), MANAGED_CLOUDS,
                            lambda c: c.cluster_options.control_plane))
    for name, module in SECTIONS.items():
        model = type(getattr(config.PlatformConfig(stack="", cloud="", region="", node_pools=()), name))
        sections.append(Section(name, f"`{name}`", name, model,
                                tuple(sorted(keys_checked_in(module, f"parse_{name}"))), CLOUDS,
                                lambda c, n=name: getattr(c, n)))
    # Parsed in their own modules: the Gateway in front of the inference services, node health (on by default), the
    # data plane (off by default) and the LLM service (absent unless the stack has it: probed with a small model).
    sections += [
        _parsed_in(gateway_config, "parse_gateway", "gateway", gateway_config.GatewayConfig, lambda c: c.gateway),
        _parsed_in(health_config, "parse_health", "health", health_config.HealthConfig, lambda c: c.health),
        _parsed_in(health_config, "parse_active_checks", "health.activeChecks", health_config.ActiveChecksConfig,
                   lambda c: c.health.active_checks),
        _parsed_in(health_config, "parse_remediation", "health.remediation", health_config.RemediationConfig,
                   lambda c: c.health.remediation),
        _parsed_in(storage_config, "parse_storage", "storage", storage_config.StorageConfig, lambda c: c.storage),
        _parsed_in(storage_config, "_parse_shared_file_system", "storage.sharedFileSystem",
                   storage_config.SharedFileSystemConfig, lambda c: c.storage.shared_file_system,
                   probe=_with_storage, field_of=_storage_field),
        _parsed_in(storage_config, "_parse_bucket", "storage.buckets[]", storage_config.BucketConfig,
                   lambda c: c.storage.buckets[0], clouds=MANAGED_CLOUDS, probe=_with_storage,
                   field_of=_storage_field),
        _parsed_in(storage_config, "_parse_image_pulls", "storage.imagePulls", storage_config.ImagePullsConfig,
                   lambda c: c.storage.image_pulls),
        _parsed_in(llm_config, "parse_llm", "llm", llm_config.LlmConfig, lambda c: c.llm, probe=_with_llm),
        _parsed_in(multikueue_config, "parse_multikueue", "multikueue", multikueue_config.MultiKueueSettings,
                   lambda c: c.multikueue, probe=_with_multikueue),
        _parsed_in(multikueue_config, "_parse_worker", "multikueue.workers[]", multikueue_config.MultiKueueWorker,
                   lambda c: c.multikueue.workers[0], probe=_with_multikueue),
        _parsed_in(pool_upgrade, "parse_pool_upgrade", "nodePools[].upgrade", pool_upgrade.PoolUpgrade,
                   lambda c: c.node_pools[0].upgrade, clouds=MANAGED_CLOUDS),
        _parsed_in(maintenance, "parse_window", "maintenance.window", maintenance.MaintenanceWindow,
                   lambda c: c.maintenance, clouds=MANAGED_CLOUDS),
    ]
    return sections


def _parsed_in(module: Any, parser: str, path: str, model: type, read: Callable, clouds: tuple = CLOUDS,
               **options: Any) -> Section:
    """The section of ``path`` parsed by ``module.parser``: its anchor and title follow from the path, its keys from
    the parser's ``check_keys`` call."""
    anchor = path.replace("[]", "").replace(".", "-").lower()
    return Section(anchor, f"`{path}`", path, model, tuple(sorted(keys_checked_in(module, parser))), clouds, read,
                   **options)


def cloud_sections(cloud: str) -> list[Section]:
    """The cloud's own keys: cluster keys (top level), pool keys (``nodePools[]``) and nested sections."""
    module = _options_module(cloud)
    label = catalog.CLOUD_NAMES[cloud]
    sections = [
        Section(f"{cloud}-cluster", f"{label}: top-level keys", "", _return_type(module.parse_cluster_options),
                tuple(sorted(set(module.CLUSTER_KEYS) - control_plane.KEYS)), (cloud,), lambda c: c.cluster_options),
        Section(f"{cloud}-pools", f"{label}: `nodePools[]` keys", "nodePools[]",
                _return_type(module.parse_pool_options), tuple(sorted(module.POOL_KEYS)), (cloud,),
                lambda c: c.node_pools[0].cloud_options),
    ]
    if cloud == "gcp":
        # N1 machine types take attached GPUs: the count is a pool key only GKE accepts (config.parse_node_pool).
        sections.append(Section("gcp-pools-n1", "GCP: N1 `nodePools[]` keys", "nodePools[]", config.NodePoolConfig,
                                ("gpuCount",), (cloud,), lambda c: c.node_pools[0]))
        system = typing.get_type_hints(module.GcpClusterOptions)["system_pool"]
        sections.append(Section("gcp-systempool", "GCP: `systemPool`", "systemPool", system,
                                tuple(sorted(keys_checked_in(module, "_parse_system_pool"))), (cloud,),
                                lambda c: c.cluster_options.system_pool))
    return sections


def all_sections() -> list[Section]:
    return shared_sections() + [s for cloud in CLOUDS for s in cloud_sections(cloud)]


def documented_keys() -> dict[str, set[str]]:
    """``{path: keys}`` over every section (what the reference documents)."""
    out: dict[str, set[str]] = {}
    for section in all_sections():
        out.setdefault(section.path, set()).update(section.keys)
    return out


# ---------------------------------------------------------------------------------------------------------
# Columns


def type_name(annotation: Any) -> str:
    """A field annotation in stack-file terms."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Union:
        inner = [a for a in args if a is not type(None)]
        return type_name(inner[0]) if len(inner) == 1 else " or ".join(type_name(a) for a in inner)
    if origin is tuple:
        item = args[0] if args else Any
        if typing.get_origin(item) is tuple:
            return "map of integers" if typing.get_args(item)[1:] == (int,) else "map of strings"
        return {str: "list of strings", int: "list of integers"}.get(item, f"list of {type_name(item)}")
    if annotation is config.Secret:
        return "string (secret)"
    if annotation is labels.Taint:
        return "taint"
    if dataclasses.is_dataclass(annotation):
        return "mapping"
    return {str: "string", int: "integer", float: "number", bool: "boolean"}.get(annotation, "value")


_KEY_TYPES = {"nodePools": "list of mappings", "teams": "list of mappings", "taints": "list of taints"}


def _render(value: Any, type_text: str) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, tuple) and type_text.startswith("map of"):
        return "`{" + ", ".join(f"{k}: {v}" for k, v in value) + "}`"
    if isinstance(value, tuple):
        return "`[" + ", ".join(str(v) for v in value) + "]`"
    if dataclasses.is_dataclass(value):
        return "see below"
    if value == "":
        return '`""`'
    return f"`{value}`"


def _remove(raw: dict, path: str, key: str) -> Optional[dict]:
    """A copy of ``raw`` without ``key`` at ``path``; None when the minimal stack does not set it there."""
    out = copy.deepcopy(raw)
    target: Any = out
    for part in [p for p in path.split(".") if p]:
        name = part.removesuffix("[]")
        if name not in target:
            return None
        target = target[name][0] if part.endswith("[]") else target[name]
    if not isinstance(target, dict) or key not in target:
        return None
    del target[key]
    return out


def required_on(section: Section, key: str) -> list[str]:
    """Clouds on which leaving ``key`` out of a minimal stack is a ``... is required`` error."""
    clouds = []
    for cloud in section.clouds:
        raw = _remove(section.probe(minimal_raw(cloud)), section.path, key)
        if raw is None:
            continue
        try:
            config.parse_config(raw, "docs")
        except ConfigError as err:
            if str(err).endswith("is required"):
                clouds.append(cloud)
    return clouds


def default_cell(section: Section, key: str, doc: str) -> str:
    required = required_on(section, key)
    if required:
        return "required" if len(required) == len(section.clouds) else "required on " + ", ".join(required)
    if DEFAULT_STATED.search(doc):
        return "see description"
    values: dict[str, str] = {}
    for cloud in section.clouds:
        raw = section.probe(minimal_raw(cloud))
        raw = _remove(raw, section.path, key) or raw  # the minimal stack sets teams: leave it out here
        parsed = section.values(config.parse_config(raw, "docs"))
        values[cloud] = _render(getattr(parsed, section.field_of(key)), key_type(section, key))
    distinct = set(values.values())
    if len(distinct) == 1:
        return distinct.pop()
    return "; ".join(f"{cloud}: {value}" for cloud, value in values.items())


def _property(section: Section, field: str) -> Optional[property]:
    """A documented read-only property of the model standing for a key that has no field of its own."""
    value = getattr(section.model, field, None)
    return value if isinstance(value, property) else None


def key_doc(section: Section, key: str) -> str:
    field = section.field_of(key)
    names = {f.name for f in dataclasses.fields(section.model)}
    prop = _property(section, field)
    if field not in names and prop is None:
        raise LookupError(f"{section.title}: key '{key}' has no field '{field}' in {section.model.__name__}; "
                          "add it to FIELD_ALIASES in gpu_platform/docgen/config_reference.py")
    doc = " ".join((prop.__doc__ or "").split()) if prop is not None else attribute_docs(section.model).get(field)
    if not doc:
        raise LookupError(f"{section.model.__module__}.{section.model.__name__}.{field} (key '{key}') has no "
                          "docstring; document it under the field")
    return doc


def key_type(section: Section, key: str) -> str:
    if section.path == "" and key in (*SECTIONS, "gateway", "llm", "health", "storage"):
        return f"mapping ([`{key}`](#{key}))"
    if key in _KEY_TYPES:
        return _KEY_TYPES[key]
    prop = _property(section, section.field_of(key))
    if prop is not None:
        return type_name(typing.get_type_hints(prop.fget)["return"])
    return type_name(typing.get_type_hints(section.model)[section.field_of(key)])


def _cell(text: str) -> str:
    """Markdown table cell: reST double backticks as Markdown code, pipes escaped."""
    return text.replace("``", "`").replace("|", "\\|")


def section_table(section: Section) -> str:
    rows = ["| key | type | default | description |", "|---|---|---|---|"]
    for key in section.keys:
        doc = key_doc(section, key)
        rows.append(f"| `{key}` | {key_type(section, key)} | {_cell(default_cell(section, key, doc))} | "
                    f"{_cell(doc)} |")
    return "\n".join(rows)


# ---------------------------------------------------------------------------------------------------------
# The page

HEADER = """<!-- Generated by `python -m gpu_platform.generate` from components/gpu_platform/config.py and
clouds/*/options.py (field docstrings, parsers). Do not edit: change the docstrings and regenerate. -->

# Configuration reference

Every key of the `gpu-platform` namespace of a stack file (`stacks/Pulumi.<stack>.yaml`), written as
`gpu-platform:<key>` there. A stack with only `cloud`, `region` (`compartmentId` on OCI) and `nodePools` is
complete; every other key has the default shown. Unknown keys are rejected, and a bad value fails before any
resource is registered with one line naming the stack and the key path:

```
error: aws-dev: nodePools[0].sharing.replicas: time-slicing needs at least 2 replicas per GPU, got 1
```

"Default" is what the parser produces when the key is left out (per cloud where it differs). Where the
default depends on other keys, the description says how.

Editors validate and complete stack files with the JSON Schema [stack-config.schema.json](stack-config.schema.json)
(generated from the same model): with the YAML language server, put this line at the top of the stack file:

```yaml
# yaml-language-server: $schema=../docs/stack-config.schema.json
```
"""

TAINT_NOTE = ("A taint is either a string `key=value:Effect` or a mapping; the GPU taint "
              "`nvidia.com/gpu=present:NoSchedule` is always added.")


def page() -> str:
    """The whole ``docs/configuration.md``."""
    parts = [HEADER, "## Contents\n"]
    shared, per_cloud = shared_sections(), {cloud: cloud_sections(cloud) for cloud in CLOUDS}
    for section in shared:
        parts.append(f"- [{section.title}](#{section.anchor})")
    for cloud, sections in per_cloud.items():
        parts.append(f"- [{catalog.CLOUD_NAMES[cloud]} keys](#{sections[0].anchor})")
    parts.append("")
    parts.append("## Keys of every cloud\n")
    for section in shared:
        parts.append(f'<a id="{section.anchor}"></a>\n\n### {section.title}\n')
        parts.append(_cell(class_doc(section.model)) + (" " + TAINT_NOTE if section.model is labels.Taint else "")
                     + "\n")
        parts.append(section_table(section) + "\n")
    parts.append("## Keys of one cloud\n")
    parts.append("Each cloud layer accepts its own keys, at the top level or per pool, and rejects them on "
                 "another cloud.\n")
    for sections in per_cloud.values():
        for section in sections:
            parts.append(f'<a id="{section.anchor}"></a>\n\n### {section.title}\n')
            parts.append(_cell(class_doc(section.model)) + "\n")
            parts.append(section_table(section) + "\n")
    return "\n".join(parts).rstrip() + "\n"
