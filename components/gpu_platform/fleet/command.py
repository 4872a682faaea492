"""``gpu-platform fleet plan`` and ``gpu-platform fleet up``: the arguments and the wiring, no decision.

``fleet plan FLEET [--out DIR] [--baseline DIR]``: plan every stack offline, print the matrix (`matrix`). Exit 0
clean; 1 a stack failed to plan, has an invalid manifest or violates a policy; 2 bad input (fleet file, stack
configuration, a baseline that is not a plan of its stack, a Kubernetes minor step the control plane cannot take),
nothing planned; 3 a wave not marked ``allowDisruption`` would disrupt.

``fleet up FLEET [--state FILE] [--resume]``: roll the fleet out wave by wave through ``pulumi.automation``
(`rollout`, `automation`). Exit 0 every stack is on the release with its gates passed; 1 the rollout stopped at a
failed step or gate (the state file says where; ``--resume`` continues there); 2 bad input (fleet file, state, a
refused resume, a stack that cannot be selected, no Pulumi CLI), nothing run; 130 interrupted (the state holds
what finished).
"""

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Optional

from ..errors import ConfigError
from . import matrix, rollout, state
from .fleet_file import Fleet, FleetStack, VerifySettings, load_fleet

EXIT_OK, EXIT_STOPPED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def default_dir(fleet: Fleet) -> Path:
    """Where a fleet's plans and state go unless ``--out``/``--state`` say otherwise."""
    return Path("build") / "fleet" / fleet.name


def policy_check() -> matrix.Violations:
    """The GPU guardrails' check of one stack's plan folder (``gpu_platform.guardrails.check_plan_dir``), with the
    settings the plan records from its stack's configuration, as ``gpu-platform plan`` and ``policy check`` run it."""
    from ..guardrails import check_plan_dir

    return check_plan_dir


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def plan(args: argparse.Namespace) -> int:
    """``gpu-platform fleet plan``."""
    from .. import plan as planner
    from ..upgrades import plan_diff

    try:
        fleet = load_fleet(Path(args.fleet))
        # Every configuration first: a bad stack plans and writes nothing.
        versions = {m.stack: planner.parse_config(planner.strip_namespace(planner.load_stack_file(m.stack_file)),
                                                  m.stack).kubernetes_version for m in fleet.stacks}
        out_dir = Path(args.out) if args.out else default_dir(fleet) / "plans"
        baseline_dir = Path(args.baseline) if args.baseline else out_dir
        baselines = matrix.load_baselines(baseline_dir, fleet)
        problems = matrix.step_problems(baselines, versions)
        if problems:
            return _error(problems[0])
        check = policy_check()
        rows = matrix.build_rows(fleet, lambda member: matrix.plan_offline(member, out_dir), baselines, check)
    except (ConfigError, plan_diff.PlanError) as err:
        return _error(str(err))
    print(matrix.render(fleet, rows, baseline_dir))
    print(f"wrote the plans to {out_dir} (the next fleet plan's baseline unless --baseline says otherwise)")
    return matrix.exit_code(rows)


def verify_args(member: FleetStack, settings: VerifySettings) -> argparse.Namespace:
    """The arguments of ``gpu-platform verify`` for one stack of the fleet (``--config <its stack file>``)."""
    kubeconfig = os.path.expanduser(member.kubeconfig) if member.kubeconfig else None  # the file may say ~/.kube/..
    return argparse.Namespace(stack=None, config=str(member.stack_file), kubeconfig=kubeconfig,
                              context=member.context, json=False, timeout_per_check=settings.timeout_per_check,
                              skip=list(settings.skip))


def verify_stack(member: FleetStack, settings: VerifySettings) -> int:
    """The ``verify`` gate: ``gpu-platform verify`` against the stack's cluster; its exit code."""
    from .. import verify_live

    print(f"gpu-platform verify --config {member.stack_file}"
          + (f" --kubeconfig {member.kubeconfig}" if member.kubeconfig else "")
          + (f" --context {member.context}" if member.context else ""))
    return verify_live.run(verify_args(member, settings))


def up(args: argparse.Namespace, driver: Optional[rollout.Driver] = None, verify: rollout.Verify = verify_stack,
       clock=time.time, sleep=time.sleep) -> int:
    """``gpu-platform fleet up``; a test passes a fake ``driver``, ``verify``, ``clock`` and ``sleep``."""
    try:
        fleet = load_fleet(Path(args.fleet))
        state_path = Path(args.state) if args.state else default_dir(fleet) / "state.json"
        previous = state.load(state_path)
        current = rollout.start(fleet, previous, args.resume)
    except ConfigError as err:
        return _error(str(err))
    if not rollout.pending(fleet, current):
        print(f"every stack is on release {fleet.release} with its gates passed: nothing to roll out")
        print(rollout.render_versions(fleet, current))
        return EXIT_OK
    if previous is not None and previous.stopped is not None and not args.resume:
        print(f"a rollout stopped at {previous.stopped.wave}/{previous.stopped.stack} is recorded: starting over "
              "from the first wave (--resume continues it instead)")
    if driver is None:
        from .automation import AutomationDriver

        driver = AutomationDriver(fleet.project_dir)
    problems = rollout.preflight(fleet, current, driver)
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        final = rollout.run(fleet, current, driver, verify, clock, sleep, lambda s: state.save(s, state_path), print)
    except KeyboardInterrupt:
        print(f"interrupted: what finished is recorded in {state_path}; gpu-platform fleet up {args.fleet} --resume "
              "continues", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(rollout.render_versions(fleet, final))
    if final.stopped is not None:
        stop = final.stopped
        print(f"stopped at wave {stop.wave}, stack {stop.stack}: {stop.step} failed: {stop.reason}")
        print(f"recorded in {state_path}; after the fix: gpu-platform fleet up {args.fleet} --resume")
        return EXIT_STOPPED
    print(f"complete: every stack is on release {fleet.release}")
    return EXIT_OK


def build_parser(parser: argparse.ArgumentParser) -> None:
    """The ``fleet`` command's subcommands."""
    from .fleet_file import GATES

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "gates:\n" + "\n".join(f"  {name}: {meaning}" for name, meaning in GATES.items()) + (
        "\n\nThe Pulumi CLI must be installed for fleet up (pulumi.automation runs it); fleet plan needs none.")
    sub = parser.add_subparsers(dest="fleet_command", required=True)
    plan_parser = sub.add_parser(
        "plan", help="plan every stack of a fleet offline: the matrix of resources, disruption, policy violations",
        description="Plan every stack of the fleet offline and print the matrix. Exit 0: clean; 1: a stack failed, "
                    "is invalid or violates a policy; 2: bad input; 3: a wave not marked allowDisruption would "
                    "disrupt.")
    plan_parser.add_argument("fleet", metavar="FLEET", help="the fleet file (YAML)")
    plan_parser.add_argument("--out", metavar="DIR", help="where the plans go (default: build/fleet/<fleet>/plans)")
    plan_parser.add_argument("--baseline", metavar="DIR",
                             help="the recorded plans to compare with, DIR/<stack>/plan.json (default: the plans "
                                  "already in --out, the previous fleet plan's)")
    plan_parser.set_defaults(func=plan)
    up_parser = sub.add_parser(
        "up", help="roll the fleet out wave by wave through pulumi.automation, with gates and bake times",
        description="Per stack, wave by wave: refresh, preview, up, gpu-platform verify; stop at the first failed "
                    "gate. Exit 0: complete; 1: stopped (resume with --resume); 2: bad input, nothing run; 130: "
                    "interrupted.")
    up_parser.add_argument("fleet", metavar="FLEET", help="the fleet file (YAML)")
    up_parser.add_argument("--state", metavar="FILE",
                           help="the rollout state (default: build/fleet/<fleet>/state.json)")
    up_parser.add_argument("--resume", action="store_true",
                           help="continue the recorded rollout from where it stopped instead of starting over")
    up_parser.set_defaults(func=up)
