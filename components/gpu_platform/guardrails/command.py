"""``gpu-platform policy check PLAN_DIR [--policy-config FILE]``: the GPU guardrails over offline plans.

PLAN_DIR is a plan folder (``DIR/<stack>``, holding ``plan.json``), a ``plan.json`` itself, or a plan root (``DIR``
of ``gpu-platform plan --out DIR``, a folder per stack). Each violation is one line on stdout,
``RESOURCE: RULE: REASON`` (``STACK: RESOURCE: RULE: REASON`` for a root). Exit codes: 0 no violation, 1 some,
2 bad input (no plan there, a file that is no plan, an unreadable policy configuration).
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

from .plan_check import PLAN_FILE, PlanInputError, check_plan_dir
from .rules import RULES

EXIT_CLEAN, EXIT_VIOLATIONS, EXIT_BAD_INPUT = 0, 1, 2


def build_parser(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``policy check``."""
    parser.add_argument("plan_dir", metavar="PLAN_DIR",
                        help="a plan folder (build/plan/<stack>), its plan.json, or a plan root (build/plan)")
    parser.add_argument("--policy-config", metavar="FILE",
                        help="per-policy configuration: the JSON file `pulumi up --policy-pack-config` takes "
                             "({\"network-policies-enforced\": {\"engineOutsideStack\": true}}, "
                             "{\"image-digest\": \"disabled\"})")


def plans_under(path: Path) -> list[tuple[Optional[str], Path]]:
    """(stack or None, plan folder) for each plan ``path`` names; raises `PlanInputError` when it names none."""
    if path.is_file() or (path / PLAN_FILE).is_file():
        return [(None, path)]
    stacks = sorted(p.parent for p in path.glob(f"*/{PLAN_FILE}")) if path.is_dir() else []
    if not stacks:
        raise PlanInputError(f"no {PLAN_FILE} in {path} or its folders (run gpu-platform plan --out DIR first)")
    return [(p.name, p) for p in stacks]


def _policy_config(path: Optional[str]) -> Optional[dict]:
    if path is None:
        return None
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise PlanInputError(f"cannot read the policy configuration {path}: {err}") from None
    if not isinstance(document, dict):
        raise PlanInputError(f"{path}: a policy configuration maps policy names to a level or to properties")
    unknown = sorted(set(document) - {rule.name for rule in RULES})
    if unknown:
        raise PlanInputError(f"{path}: no policy named {unknown[0]} (policies: {', '.join(r.name for r in RULES)})")
    return document


def run(args: argparse.Namespace) -> int:
    """Check every plan PLAN_DIR names; print one line per violation."""
    try:
        config = _policy_config(args.policy_config)
        plans = plans_under(Path(args.plan_dir))
        found = [(stack, violation) for stack, plan_dir in plans
                 for violation in check_plan_dir(plan_dir, config)]
    except PlanInputError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for stack, violation in found:
        print(f"{stack}: {violation.line()}" if stack else violation.line())
    checked = f"{len(plans)} plan{'s' if len(plans) != 1 else ''}, {len(RULES)} policies"
    if found:
        print(f"{len(found)} violation{'s' if len(found) != 1 else ''} ({checked})", file=sys.stderr)
        return EXIT_VIOLATIONS
    print(f"no violations ({checked})")
    return EXIT_CLEAN
