"""``docs/stack-config.schema.json``: a JSON Schema of ``Pulumi.<stack>.yaml`` for editors.

Built from the same sections as the configuration reference (`config_reference.all_sections`): every key the
parsers accept, at the place they accept it, typed from its dataclass field and described by the field's docstring.
Keys of one cloud are listed for every cloud (the parser refuses them on another cloud, with the reason): the
schema completes and catches typos and wrong types; the parser stays the judge of rules between keys.

Editors use it with a modeline in the stack file (YAML language server)::

    # yaml-language-server: $schema=../docs/stack-config.schema.json
"""

import dataclasses
import json
import typing
from typing import Any

from .. import catalog, config, labels, pools
from . import config_reference as reference

SECURE = {"type": "object", "properties": {"secure": {"type": "string"}}, "required": ["secure"],
          "additionalProperties": False, "description": "An encrypted value (pulumi config set --secret)."}


def _json_type(annotation: Any) -> dict[str, Any]:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Union:
        inner = [a for a in args if a is not type(None)]
        return _json_type(inner[0]) if len(inner) == 1 else {"anyOf": [_json_type(a) for a in inner]}
    if annotation is config.Secret:
        return {"anyOf": [{"type": "string"}, SECURE]}
    if origin is tuple:
        item = args[0] if args else Any
        if typing.get_origin(item) is tuple:
            if typing.get_args(item)[1:] == (int,):
                return {"type": "object", "additionalProperties": _json_type(int)}
            return {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}}
        return {"type": "array", "items": _json_type(item)}
    if annotation is labels.Taint:
        return {"anyOf": [{"type": "string", "pattern": r"^[^=:\s]+(=[^:\s]*)?:\w+$"}, {"type": "object"}]}
    # `pulumi config set` writes scalars as strings ("2", "true"); the parser reads those too.
    simple = {str: {"type": "string"},
              int: {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": r"^-?\d+$"}]},
              float: {"anyOf": [{"type": "number"}, {"type": "string", "pattern": r"^-?\d+(\.\d+)?$"}]},
              bool: {"anyOf": [{"type": "boolean"}, {"enum": ["true", "false"]}]}}
    if annotation in simple:
        return dict(simple[annotation])
    return {}


def _key_schema(section: reference.Section, key: str) -> dict[str, Any]:
    field = section.field_of(key)
    names = {f.name for f in dataclasses.fields(section.model)}
    hints = typing.get_type_hints(section.model)
    schema = _json_type(hints[field]) if field in names else {}
    schema["description"] = " ".join(reference.key_doc(section, key).replace("``", "`").split())
    return schema


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": dict(sorted(properties.items())),
                           "additionalProperties": False}
    if required:
        out["required"] = list(required)
    return out


def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a stack file."""
    by_path: dict[str, dict[str, Any]] = {}
    for section in reference.all_sections():
        keys = by_path.setdefault(section.path, {})
        for key in section.keys:
            entry = _key_schema(section, key)
            if key in keys and keys[key].get("description") != entry.get("description"):
                # A key with a cloud's own meaning (nodePools[].zones...): keep both descriptions.
                entry["description"] = keys[key]["description"] + " / " + entry["description"]
            keys[key] = {**keys.get(key, {}), **entry}
    by_path["nodePools[]"]["sharing"] = _object(by_path.pop("nodePools[].sharing"))
    by_path["nodePools[]"]["sharing"]["properties"]["mode"]["enum"] = list(pools.SHARING_MODES)
    taint = _object(by_path.pop("nodePools[].taints[]"), ("key",))
    by_path["nodePools[]"]["taints"] = {"type": "array", "items": {"anyOf": [
        {"type": "string", "pattern": r"^[^=:\s]+(=[^:\s]*)?:\w+$"}, taint]}}
    by_path["nodePools[]"]["name"]["pattern"] = config.DNS_LABEL.pattern
    # OCI availability domains are numbers (1-3), other clouds' zones names.
    by_path["nodePools[]"]["zones"]["items"] = {"type": ["string", "integer"]}
    by_path["nodePools[]"]["role"]["enum"] = list(config.POOL_ROLES)
    top = by_path.pop("")
    top["cloud"]["enum"] = list(catalog.CLOUDS)
    top["gpuSoftware"]["enum"] = list(config.GPU_SOFTWARE)
    top["nodePools"] = {"type": "array", "minItems": 1, "items": _object(by_path.pop("nodePools[]"), ("name",)),
                        "description": top["nodePools"].get("description", "")}
    team = _object(by_path.pop("teams[]"), ("name",))
    team["properties"]["name"]["pattern"] = config.DNS_LABEL.pattern
    top["teams"] = {"type": "array", "items": team, "description": top["teams"].get("description", "")}
    for path, keys in sorted(by_path.items()):
        description = top.get(path, {}).get("description", "")
        top[path] = {**_object(keys), "description": description}
    namespaced = {f"{config.NAMESPACE}:{key}": value for key, value in top.items()}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/gpu-platform/gpu-platform/docs/stack-config.schema.json",
        "title": "gpu-platform stack configuration (Pulumi.<stack>.yaml)",
        "description": "Generated by `python -m gpu_platform.generate` from the configuration model; "
                       "docs/configuration.md explains every key.",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": namespaced,
                "required": [f"{config.NAMESPACE}:cloud", f"{config.NAMESPACE}:nodePools"],
                # Other namespaces (aws:region, kubernetes:...) belong to other packages.
                "patternProperties": {rf"^(?!{config.NAMESPACE}:)": {}},
                "additionalProperties": False,
            },
        },
    }


def text() -> str:
    return json.dumps(schema(), indent=2, sort_keys=False) + "\n"
