"""``gpu-platform``: the command line.

``gpu-platform plan [STACK ...] [--config FILE] [--out DIR]`` plans stacks offline (see `gpu_platform.plan`): the
stacks of the Pulumi project around the working directory (the nearest ``Pulumi.yaml`` upwards, its
``stackConfigDir``). ``gpu-platform --version`` prints the package's version. Exit codes: 0 planned and valid,
1 a manifest failed schema validation or the program failed, 2 bad configuration or usage. Errors are one line
each; no traceback reaches the user.
"""

import argparse
import sys
from pathlib import Path
from typing import Optional

from .errors import ConfigError

EXIT_OK, EXIT_INVALID, EXIT_CONFIG = 0, 1, 2


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
        for stack, path in stacks.items():
            planner.parse_config(planner.strip_namespace(planner.load_stack_file(path)), stack)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_CONFIG
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
    return status


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
    plan.set_defaults(func=_plan)
    from .optimizer import run as optimizer

    optimize = sub.add_parser("optimize", help="find idle GPU allocations in Prometheus and right-size them")
    optimizer.build_parser(optimize)
    optimize.set_defaults(func=optimizer.run)
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
    from .health import verify_live

    verify = sub.add_parser("verify", help="conformance run against the live cluster of a stack: nodes, GPU software, "
                                           "smoke pods, two-node all-reduce, Kueue, DCGM, inference",
                            description="Conformance run against the live cluster of a stack: does it hold what "
                                        "the plan of the same stack configuration promised?")
    verify_live.build_parser(verify)
    verify.set_defaults(func=verify_live.run)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point of the ``gpu-platform`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
