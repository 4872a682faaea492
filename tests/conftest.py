"""Shared pytest set-up: the public mock-harness fixture, small config builders and the reference stacks' plans."""

import asyncio
import os
import pickle
from functools import cache
from pathlib import Path

import pytest

pytest_plugins = ["gpu_platform.testing"]

STACKS_DIR = Path(__file__).resolve().parent.parent / "stacks"


def aws_pool(**overrides):
    """A valid AWS node pool entry; tests override one field at a time."""
    return {"name": "infer", "instanceType": "g6.xlarge", "minNodes": 0, "maxNodes": 2, **overrides}


@pytest.fixture
def aws_config():
    """A minimal valid AWS stack configuration (namespace stripped)."""
    return {"cloud": "aws", "region": "us-west-2", "nodePools": [aws_pool()]}


@pytest.fixture(autouse=True)
def _current_event_loop():
    """Every test starts with a current event loop in the main thread, whatever ran before it in the process.

    Tests that build a ``pulumi.Output`` outside a mock run need one, and ``asyncio.run`` (the inference app's unit
    tests...) leaves none behind: such a test passed or failed by the files that happened to run before it, which
    ``pytest -n`` (pytest-xdist) changes."""
    try:
        asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:  # "There is no current event loop": asyncio.run or set_event_loop(None) came before
        asyncio.set_event_loop(asyncio.new_event_loop())


# Planning a reference stack takes one to several seconds, and most stacks are read by a dozen test files: each is
# planned once per test process and the same StackPlan goes to every test that reads it. Under pytest-xdist the
# workers share them too: the first worker to need a stack plans it and pickles it into the run's temporary
# directory (a lock per stack), the others load that file.
# A shared plan is read only. A test that needs to change one plans its own stack (plan.plan_stack), or deep-copies.
# `_shared_plans_unchanged` holds them to that: after each test file, every plan the file read is compared with the
# fingerprint it had when it was planned, and the file's last test fails naming the stack if it changed.
_fingerprints: dict[str, bytes] = {}
_read_by_this_file: set[str] = set()


def _fingerprint(result) -> bytes:
    return pickle.dumps((result.config, result.recording.registrations, result.recording.exports, result.manifests,
                         result.errors), protocol=pickle.HIGHEST_PROTOCOL)


_between_workers: list[Path] = []
"""The directory the workers of this run share plans in (under xdist, with file locks), else empty."""


@pytest.fixture(scope="session", autouse=True)
def _plans_shared_between_workers(tmp_path_factory):
    # Each worker's base temporary directory is <run>/popen-gw<n>; <run> is this run's, shared by its workers.
    if os.environ.get("PYTEST_XDIST_WORKER") and os.name == "posix":
        shared = tmp_path_factory.getbasetemp().parent / "shared-plans"
        shared.mkdir(exist_ok=True)
        _between_workers[:] = [shared]


def pytest_configure(config):
    config.addinivalue_line("markers", "alone: under pytest-xdist, no other worker runs a test meanwhile (for tests "
                                       "that assert latencies or throughput)")


# The files that take longest (docs/testing.md, "How long the suite takes"), longest first. Under `--dist
# loadfile` a worker takes the next file whenever it finishes one, in collection order, so a long file reached
# last keeps one worker busy while the other has nothing left: the run lasts as long as that tail. Starting the
# longest files first leaves the short ones to even out the end.
LONGEST_FILES = ("test_checkov.py", "test_inference_app.py", "test_policy_pack.py", "test_inputs_used.py",
                 "test_inference_app_deadlines.py", "test_plan.py", "test_upgrade_diff.py",
                 "test_inference_app_rollout.py", "test_inference_app_readonly.py", "test_training.py",
                 "test_optimizer.py", "test_scheduling_properties.py")


def pytest_collection_modifyitems(session, config, items):
    """The files of `LONGEST_FILES` first, in that order; the others after them, as collected (a stable sort)."""
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture(autouse=True)
def _alone_when_marked(request):
    """Under pytest-xdist, a test marked ``alone`` runs while the other workers wait between two of their tests
    (an exclusive file lock; every other test holds it shared). A turnstile lock keeps a stream of shared holders
    from starving it. Module fixtures (a server starting) are outside the lock."""
    if not _between_workers:
        yield
        return
    import fcntl

    alone = request.node.get_closest_marker("alone") is not None
    with open(_between_workers[0] / "turnstile.lock", "a") as turnstile, \
            open(_between_workers[0] / "alone.lock", "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        yield


def _plan_here(stack: str):
    from gpu_platform import plan

    return plan.plan_stack(stack, STACKS_DIR / f"Pulumi.{stack}.yaml")


@cache
def _plan(stack: str):
    if not _between_workers:
        result = _plan_here(stack)
    else:
        import fcntl

        pickled = _between_workers[0] / f"{stack}.pickle"
        with open(_between_workers[0] / f"{stack}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes (a worker that dies releases it too)
            if pickled.exists():
                result = pickle.loads(pickled.read_bytes())
            else:
                result = _plan_here(stack)
                partial = pickled.with_suffix(".partial")
                partial.write_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
                partial.replace(pickled)
    _fingerprints[stack] = _fingerprint(result)
    return result


def planned_stack(stack: str):
    """The `StackPlan` of ``stacks/Pulumi.<stack>.yaml`` (`gpu_platform.plan.plan_stack`), planned once per test
    process and shared: read it, never change it."""
    result = _plan(stack)
    _read_by_this_file.add(stack)
    return result


def refused(*builds) -> tuple[str, list[str]]:
    """Run ``builds`` as one program under the mock engine: every build but the last must succeed, the last must
    raise exactly one `ConfigError`. Returns its message and the names of what was registered (by the builds before
    it: a refused component registers nothing)."""
    from gpu_platform.errors import ConfigError
    from gpu_platform.testing import run_program

    errors: list[ConfigError] = []

    def program():
        for build in builds[:-1]:
            build()
        try:
            builds[-1]()
        except ConfigError as err:
            errors.append(err)

    recording = run_program(program)
    assert len(errors) == 1, "the last component did not refuse its arguments"
    return str(errors[0]), [r.name for r in recording]


def reference_stacks() -> list[str]:
    """Every reference stack's name (``stacks/Pulumi.<stack>.yaml``), sorted."""
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS_DIR.glob("Pulumi.*.yaml"))


def write_planned_stacks(out: Path) -> Path:
    """``out/<stack>/plan.json`` and ``manifests.yaml`` of every reference stack, from the shared plans: the files
    ``gpu-platform plan --out out`` writes (it runs `plan_stack` then `write_plan` per stack; tests/test_plan.py runs
    the command itself and compares its files with these byte for byte)."""
    from gpu_platform import plan

    for stack in reference_stacks():
        result = planned_stack(stack)
        assert result.errors == [], (stack, result.errors)  # where the command would exit 1
        plan.write_plan(result, out)
    return out


@pytest.fixture(scope="module", autouse=True)
def _shared_plans_unchanged(request):
    _read_by_this_file.clear()
    yield
    changed = sorted(s for s in _read_by_this_file if _fingerprint(_plan(s)) != _fingerprints[s])
    _read_by_this_file.clear()
    if changed:
        _plan.cache_clear()  # later files get fresh plans
        pytest.fail(f"{request.node.name} changed the shared plan of {', '.join(changed)} (tests/conftest.py "
                    "planned_stack): copy.deepcopy it, or plan the stack in the test", pytrace=False)
