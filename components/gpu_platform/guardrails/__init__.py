"""GPU guardrails: the rules of the GPU policy pack (``policy/`` at the repository root) as pure functions, and the
same rules over an offline plan (``gpu-platform policy check``, and the summary of ``gpu-platform plan``).

Modules: `rules` (one function per rule and `rules.RULES`, the table the pack and the plan check share), the
readers the rules use (`props`, `pool_view`, `placement`, `allocation`, `engines`, `images`), `violation`,
`plan_check` (``plan.json`` in, violations out; `plan_check.PlanInputError` for a missing or bad plan) and `command`
(``gpu-platform policy check``). Layer: above the features, beside `plan`, which imports it; it
imports the data modules (`catalog`, `labels`, `versions`) and, in `plan_check` only, the mock engine of
`gpu_platform.testing`. `rules` and its readers import neither pulumi nor pulumi-policy, so the pack's own
environment (pulumi-policy pins an older protobuf than the platform's) runs them unchanged.
"""

from pathlib import Path

from .violation import Violation

__all__ = ["Violation", "check_plan_dir"]


def check_plan_dir(plan_dir: Path, policy_config=None) -> list[Violation]:
    """Every violation of the plan in ``plan_dir`` (a folder holding ``plan.json``); see `plan_check`."""
    from .plan_check import check_plan_dir as check  # imports the mock engine (pulumi) only when a plan is checked

    return check(plan_dir, policy_config)
