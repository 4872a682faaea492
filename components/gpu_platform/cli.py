"""``gpu-platform``: the command line.

``gpu-platform plan [STACK ...] [--config FILE] [--out DIR]`` plans stacks offline (see `gpu_platform.plan`): the
stacks of the Pulumi project around the working directory (the nearest ``Pulumi.yaml`` upwards, its
``stackConfigDir``). ``gpu-platform --version`` prints the package's version. Exit codes: 0 planned and valid,
1 a manifest failed schema validation or the program failed, 2 bad configuration or usage, 3 (with
``--compare OLD_PLAN_DIR``) the new plan would disrupt GPU nodes, state or queued jobs against the old one (the
plan is written all the same). Errors are one line each; no traceback reaches the user.

``gpu-platform diff OLD NEW [--json]`` compares two offline plans (`gpu_platform.upgrades.plan_diff`): per resource
the added, removed and changed inputs, a verdict per change (disruptive or in place, with the reason) and a total;
``--json`` prints the same as a document. Exit codes: 0 nothing disruptive, 3 something disruptive, 2 bad input
(a missing file, not a plan, different stacks, a Kubernetes minor that skips one or goes down).

``gpu-platform policy check PLAN_DIR`` runs the GPU guardrails (the policy pack's rules, `gpu_platform.guardrails`)
over offline plans: one line per violation; exit 0 clean, 1 violations, 2 bad input. ``plan`` prints the same
violations in its summary without changing its exit code.

``gpu-platform fleet plan FLEET`` / ``fleet up FLEET`` plan and roll out stacks in waves (`gpu_platform.fleet.command`
has their exit codes; docs/fleet.md).
"""

import argparse
import sys
from pathlib import Path
from typing import Optional

from .errors import ConfigError

EXIT_OK, EXIT_INVALID, EXIT_CONFIG, EXIT_DISRUPTIVE = 0, 1, 2, 3


def _plan(args: argparse.Namespace) -> int:
    from . import plan as planner

    out_dir = Path(args.out)
    try:
        if args.config:
            stacks = planner.resolve_stacks([], Path(args.config))
        else:
            project = planner.find_project()
            stacks = planner.resolve_stacks(args.stacks, None, project.stacks_dir)
            if not stacks:
                raise ConfigError("", f"no Pulumi.<stack>.yaml in {project.stacks_dir} (project {project.name})")
        # Validate every configuration first: a bad stack writes nothing at all.
        configs = {stack: planner.parse_config(planner.strip_namespace(planner.load_stack_file(path)), stack)
                   for stack, path in stacks.items()}
        old_plans = _old_plans(Path(args.compare), configs) if getattr(args, "compare", None) else {}
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_CONFIG
    except ValueError as err:  # PlanError: a missing or bad old plan, a refused minor step
        print(f"error: {err}", file=sys.stderr)
        return EXIT_CONFIG
    disruptive = False
    status = EXIT_OK
    for stack, path in stacks.items():
        try:
            result = planner.plan_stack(stack, path)
        except ConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_CONFIG
        except Exception as err:  # noqa: BLE001 - one line per failing stack, never a traceback
            print(f"error: {stack}: the program failed: {type(err).__name__}: {err}".splitlines()[0], file=sys.stderr)
            status = EXIT_INVALID
            continue
        target = planner.write_plan(result, out_dir)
        if getattr(args, "diagram", False):
            from . import diagram

            diagram.write_diagram(result, target)
        print(planner.summary(result))
        print(f"  wrote {target / 'plan.json'} and {target / 'manifests.yaml'}")
        if result.errors:
            status = EXIT_INVALID
        if stack in old_plans:
            from .upgrades import plan_diff

            new_plan = plan_diff.read_plan(planner.plan_json(result), str(target / "plan.json"))
            diff = plan_diff.diff_plans(old_plans[stack], new_plan)
            print(plan_diff.render_text([diff]))
            disruptive = disruptive or bool(diff.disruptive)
    return status if status != EXIT_OK or not disruptive else EXIT_DISRUPTIVE


def _old_plans(old_dir: Path, configs: dict) -> dict:
    """Each planned stack's old plan for ``--compare``: ``OLD_PLAN_DIR/<stack>/plan.json``, or ``OLD_PLAN_DIR``
    itself when it holds a plan.json and one stack is planned. Refuses (`PlanError`) a missing plan, another stack's
    plan, and a Kubernetes minor step the control plane cannot take, all before anything is planned or written."""
    from .upgrades import plan_diff, version_skew

    plans = {}
    for stack, config in configs.items():
        if len(configs) == 1 and (old_dir / plan_diff.PLAN_FILE).is_file():
            path = old_dir / plan_diff.PLAN_FILE
        else:
            path = old_dir / stack / plan_diff.PLAN_FILE
        if not path.is_file():
            raise plan_diff.PlanError(f"--compare: no old plan of stack {stack} at {path}")
        [old] = plan_diff.load_plans(path).values()
        if old.stack != stack:
            raise plan_diff.PlanError(f"--compare: {path} is a plan of stack {old.stack}, not {stack}")
        if old.kubernetes_version is not None:
            problem = version_skew.control_plane_step_problem(old.kubernetes_version, config.kubernetes_version)
            if problem:
                raise plan_diff.PlanError(f"{stack}: {problem}")
        plans[stack] = old
    return plans


def _diff(args: argparse.Namespace) -> int:
    from .upgrades import plan_diff

    try:
        diffs = plan_diff.compare(plan_diff.load_plans(Path(args.old)), plan_diff.load_plans(Path(args.new)))
    except plan_diff.PlanError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_CONFIG
    if args.json:
        import json

        print(json.dumps(plan_diff.to_json(diffs), indent=2, sort_keys=True))
    else:
        print(plan_diff.render_text(diffs))
    return EXIT_DISRUPTIVE if any(d.disruptive for d in diffs) else EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="gpu-platform", description="GPU Kubernetes platform tooling")
    parser.add_argument("--version", action="version", version=f"gpu-platform {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    plan = sub.add_parser("plan", help="plan stacks offline: plan.json, manifests.yaml, summary, validation")
    plan.add_argument("stacks", nargs="*", metavar="STACK",
                      help="stacks to plan (default: every Pulumi.*.yaml in the project's stackConfigDir)")
    plan.add_argument("--config", metavar="FILE", help="plan this one stack file instead")
    plan.add_argument("--out", metavar="DIR", default="build/plan", help="output directory (default: build/plan)")
    plan.add_argument("--diagram", action="store_true", help="also write diagram.mmd and diagram.svg per stack")
    plan.add_argument("--compare", metavar="OLD_PLAN_DIR",
                      help="compare each new plan with OLD_PLAN_DIR/<stack>/plan.json as gpu-platform diff does; "
                           "exit 3 when the change is disruptive")
    plan.set_defaults(func=_plan)
    diff = sub.add_parser("diff", help="compare two offline plans: what an upgrade replaces, rolls or keeps in place",
                          description="Compare two offline plans (plan.json files, plan folders, or plan roots with "
                                      "a folder per stack). Exit 0: nothing disruptive; 3: something disruptive; "
                                      "2: bad input.")
    diff.add_argument("old", metavar="OLD", help="the old plan: plan.json, build/plan/<stack> or build/plan")
    diff.add_argument("new", metavar="NEW", help="the new plan, in the same form")
    diff.add_argument("--json", action="store_true", help="print a machine-readable document instead")
    diff.set_defaults(func=_diff)
    from .guardrails import command as guardrails

    policy = sub.add_parser("policy", help="the GPU guardrails of the policy pack (policy/) over offline plans")
    policy_check = policy.add_subparsers(dest="policy_command", required=True).add_parser(
        "check", help="check offline plans against the GPU guardrails: one line per violation",
        description=guardrails.__doc__.splitlines()[0])
    guardrails.build_parser(policy_check)
    policy_check.set_defaults(func=guardrails.run)
    from .optimizer import run as optimizer

    optimize = sub.add_parser("optimize", help="find idle GPU allocations in Prometheus and right-size them")
    optimizer.build_parser(optimize)
    optimize.set_defaults(func=optimizer.run)
    from .monitoring import usage

    usage_help = "GPU showback from Prometheus: GPU-hours admitted, busy and idle share per team and pool"
    usage_parser = sub.add_parser("usage", help=usage_help, description=usage_help + ".")
    usage.build_parser(usage_parser)
    usage_parser.set_defaults(func=usage.run)
    from .health import controller as remediation
    from .health import reporter

    remediate = sub.add_parser("remediate", help="quarantine GPU nodes with fatal conditions, capped per pool, "
                                                 "with a cool-down; dry-run unless the config says otherwise",
                               description=remediation.__doc__.splitlines()[0])
    remediation.build_parser(remediate)
    remediate.set_defaults(func=remediation.run)
    health_report = sub.add_parser("health-report", help="record an active check's DCGM and all-reduce results on "
                                                         "the node: label, annotation, GpuHealthCheckFailed condition",
                                   description=reporter.__doc__.splitlines()[0])
    reporter.build_parser(health_report)
    health_report.set_defaults(func=reporter.run)
    from .health import dispatch

    health_dispatch = sub.add_parser("health-dispatch", help="bind each pool's active health check to its idle nodes "
                                                             "(one Job per node, nodeName set): no check is ever "
                                                             "pending for an autoscaler",
                                     description=dispatch.__doc__.splitlines()[0])
    dispatch.build_parser(health_dispatch)
    health_dispatch.set_defaults(func=dispatch.run)
    from . import verify_live

    verify = sub.add_parser("verify", help="conformance run against the live cluster of a stack: nodes, GPU software, "
                                           "smoke pods, two-node all-reduce, Kueue, DCGM, inference",
                            description="Conformance run against the live cluster of a stack: does it hold what "
                                        "the plan of the same stack configuration promised?")
    verify_live.build_parser(verify)
    verify.set_defaults(func=verify_live.run)
    from .fleet import command as fleet_command

    fleet = sub.add_parser("fleet", help="plan and roll out many stacks in waves: canary first, gates, bake times",
                           description="Plan (offline) and roll out (pulumi.automation) the stacks of a fleet file.")
    fleet_command.build_parser(fleet)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point of the ``gpu-platform`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
