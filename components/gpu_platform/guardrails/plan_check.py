"""The guardrails over an offline plan: `rules.RULES` run on the resources of a ``plan.json``.

Resource rules see each resource's inputs, as the Pulumi policy engine's ``Analyze`` does. Stack rules see every
resource with the id and outputs the plan's mock engine gave it (`gpu_platform.testing.outputs_for`, what
``gpu-platform plan`` ran under), as ``AnalyzeStack`` sees outputs after an update: a node group's
``launchTemplate.id`` then names its launch template's ``id``.

``policy_config`` has the shape of ``pulumi up --policy-pack-config``'s file: per rule name, an enforcement level
(``"disabled"`` skips the rule) or a mapping of configuration properties (with an optional ``enforcementLevel``).
"""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from .props import Resource
from .rules import RULES, Rule
from .violation import Violation

PLAN_FILE = "plan.json"


class PlanInputError(ValueError):
    """A plan that cannot be read: no plan.json, not JSON, not a plan."""


def read_plan(plan_dir: Path) -> dict:
    """The ``plan.json`` document of ``plan_dir`` (a plan folder, or the file itself)."""
    path = plan_dir / PLAN_FILE if plan_dir.is_dir() else plan_dir
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise PlanInputError(f"cannot read {path}: {err.strerror or err}") from None
    except ValueError as err:
        raise PlanInputError(f"{path} is not JSON: {err}") from None
    if not isinstance(document, dict) or not isinstance(document.get("resources"), list) or not all(
            isinstance(r, dict) and isinstance(r.get("type"), str) and isinstance(r.get("name"), str)
            for r in document["resources"]):
        raise PlanInputError(f"{path} is not a plan (a mapping whose resources each have a type and a name)")
    return document


def _settings(policy_config: Optional[Mapping[str, Any]], rule: Rule) -> Optional[dict]:
    """The rule's configuration, or None when it is disabled."""
    entry = (policy_config or {}).get(rule.name)
    if entry == "disabled" or (isinstance(entry, Mapping) and entry.get("enforcementLevel") == "disabled"):
        return None
    return {k: v for k, v in entry.items() if k != "enforcementLevel"} if isinstance(entry, Mapping) else {}


def _with_outputs(resource: dict) -> Resource:
    from ..testing import outputs_for  # the mock engine the plan ran under; imports pulumi

    _, state = outputs_for(resource["type"], resource["name"], resource.get("inputs") or {})
    return Resource(resource["type"], resource["name"], state, resource.get("urn", ""))


def check_document(document: Mapping[str, Any], policy_config: Optional[Mapping[str, Any]] = None) -> list[Violation]:
    """Every violation of a plan document (``plan.json``), rule by rule in `RULES` order. The settings are the
    plan's own ``policyConfig`` (what its stack's configuration implies) overridden rule by rule by
    ``policy_config``."""
    policy_config = {**(document.get("policyConfig") or {}), **(policy_config or {})}
    registered = [r for r in document["resources"] if r.get("custom", True)]
    stack_view: Optional[list[Resource]] = None
    found: list[Violation] = []
    for rule in RULES:
        config = _settings(policy_config, rule)
        if config is None:
            continue
        if rule.check_resource is not None:
            found += [Violation(r["name"], rule.name, message) for r in registered
                      for message in rule.check_resource(r["type"], r.get("inputs") or {}, config)]
        if rule.check_stack is not None:
            stack_view = stack_view if stack_view is not None else [_with_outputs(r) for r in registered]
            found += [Violation(resource.name, rule.name, message)
                      for resource, message in rule.check_stack(stack_view, config)]
    return found


def check_plan_dir(plan_dir: Path, policy_config: Optional[Mapping[str, Any]] = None) -> list[Violation]:
    """Every violation of the plan in ``plan_dir`` (``DIR/<stack>`` of ``gpu-platform plan --out DIR``). Raises
    `PlanInputError` when there is no readable plan there."""
    return check_document(read_plan(Path(plan_dir)), policy_config)


def policy_config_of(config: Any) -> dict:
    """The policy configuration a stack's own configuration implies (a parsed ``PlatformConfig``): an existing
    cluster declared to enforce NetworkPolicies (``networkPolicyEnforced: true``) runs its engine outside the
    stack."""
    if getattr(getattr(config, "cluster_options", None), "network_policy_enforced", False) is True:
        return {"network-policies-enforced": {"engineOutsideStack": True}}
    return {}
