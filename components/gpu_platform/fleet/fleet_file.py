"""The fleet file: which stacks roll out, in which waves, with which gates (``gpu-platform fleet``).

```yaml
name: reference              # optional: the fleet's name (default: the file's stem)
release: "2026.12"           # optional: the version rolled out (default: the gpu-platform package's version)
project: ../..               # optional: the Pulumi project directory (default: the project around this file)
waves:
  - name: canary
    stacks: [existing]       # stack names (stacks/Pulumi.<stack>.yaml) or mappings, see `FleetStack`
    bake: 30m                # wait after the wave passed its gates, before the next wave starts
    gates: [preview, verify] # default: both
    verify: {skip: [inference], timeoutPerCheck: 300}
  - name: rest
    allowDisruption: true    # this wave may replace nodes, state or Kueue flavors
    stacks:
      - stack: aws-dev
        pulumiStack: acme/gpu-platform/aws-dev
        kubeconfig: ~/.kube/aws-dev
        context: aws-dev
```

`load_fleet` reads the file and finds the stack files the way ``gpu-platform plan`` does (the project's
``stackConfigDir``); `parse_fleet` is the pure part. Bad input raises `FleetError`: one line naming the file, the
key path (``waves[1].bake``) and what is wrong.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import yaml

from ..errors import ConfigError, check_keys, did_you_mean, join, one_of
from ..fields import as_mapping, read_bool, read_float, read_list, read_str

GATES = {
    "preview": "the live preview (pulumi preview) replaces or deletes no node pool, control plane, state or Kueue "
               "flavor, unless the wave allows disruption",
    "verify": "gpu-platform verify passes against the stack's cluster after its update",
}
"""Every gate a wave may require, in the order a stack passes them, and what passing it means."""

DEFAULT_GATES = ("preview", "verify")

MAX_BAKE_S = 24 * 3600
"""The longest bake: the rollout process waits it out (and a resume waits what is left of it)."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


class FleetError(ConfigError):
    """Bad fleet file (or state): ``<file>: <key path>: <problem>`` on one line."""


@dataclass(frozen=True)
class FleetStack:
    """One stack of the fleet."""

    stack: str
    """The stack's name: its stack file is ``Pulumi.<stack>.yaml`` in the project's ``stackConfigDir``."""
    stack_file: Path
    pulumi_stack: str
    """The Pulumi stack ``fleet up`` selects (``pulumiStack``, e.g. ``acme/gpu-platform/aws-dev``; default: the
    stack's name). Its last segment is the stack's name: Pulumi reads ``Pulumi.<that>.yaml``, the planned file."""
    kubeconfig: Optional[str] = None
    """The kubeconfig ``gpu-platform verify`` uses for this stack's cluster (default: ``$KUBECONFIG``)."""
    context: Optional[str] = None
    """The kubeconfig context of this stack's cluster (default: the kubeconfig's current context)."""


@dataclass(frozen=True)
class VerifySettings:
    """How the ``verify`` gate runs ``gpu-platform verify`` (the wave's ``verify`` mapping)."""

    skip: tuple[str, ...] = ()
    """Checks not to run (``--skip``)."""
    timeout_per_check: float = 300.0
    """Bound of every wait of one check, seconds (``--timeout-per-check``)."""


@dataclass(frozen=True)
class Wave:
    """One wave: its stacks roll out one after the other, then it bakes before the next wave starts."""

    name: str
    stacks: tuple[FleetStack, ...]
    allow_disruption: bool = False
    """Whether the wave may replace or delete nodes, state or Kueue flavors (``fleet plan`` exits 3 and the
    ``preview`` gate fails otherwise)."""
    bake_s: float = 0.0
    """Seconds to wait after the wave passed its gates before the next wave starts (none after the last wave)."""
    gates: tuple[str, ...] = DEFAULT_GATES
    verify: VerifySettings = VerifySettings()


@dataclass(frozen=True)
class Fleet:
    """A parsed fleet file."""

    name: str
    source: Path
    """The fleet file."""
    release: str
    """The version this rollout brings every stack to (recorded per stack in the state)."""
    project_dir: Path
    """The Pulumi project ``fleet up`` runs in (the Automation API's ``work_dir``)."""
    waves: tuple[Wave, ...]

    @property
    def stacks(self) -> tuple[FleetStack, ...]:
        """Every stack, in rollout order."""
        return tuple(member for wave in self.waves for member in wave.stacks)

    def wave_of(self, stack: str) -> Wave:
        """The wave a stack is in."""
        return next(wave for wave in self.waves if any(m.stack == stack for m in wave.stacks))


def parse_duration(value: Any, path: str) -> float:
    """A bake time: seconds as a number, or ``1h30m``, ``30m``, ``45s``; at most `MAX_BAKE_S`."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(path, f"must be a duration like 30m, 1h30m or 45s, got {value!r}")
    if isinstance(value, str):
        match = _DURATION.match(value.strip())
        if not value.strip() or not match:
            raise ConfigError(path, f"'{value}' is not a duration like 30m, 1h30m or 45s")
        hours, minutes, seconds = (int(g or 0) for g in match.groups())
        seconds_total = float(hours * 3600 + minutes * 60 + seconds)
    else:
        seconds_total = float(value)
    if seconds_total < 0:
        raise ConfigError(path, f"must not be negative, got {value!r}")
    if seconds_total > MAX_BAKE_S:
        raise ConfigError(path, f"{value!r} is longer than 24h (the rollout process waits it out)")
    return seconds_total


def _stack(raw: Any, path: str, stack_files: Mapping[str, Path]) -> FleetStack:
    entry = {"stack": raw} if isinstance(raw, str) else as_mapping(raw, path)
    check_keys(entry, ("stack", "pulumiStack", "kubeconfig", "context"), path)
    stack_path = path if isinstance(raw, str) else join(path, "stack")
    name = read_str(entry, "stack", path, required=True)
    if name not in stack_files:
        raise ConfigError(stack_path, f"no stack file Pulumi.{name}.yaml in the project"
                                      f"{did_you_mean(name, sorted(stack_files))}")
    pulumi_stack = read_str(entry, "pulumiStack", path, default=name)
    if pulumi_stack.rsplit("/", 1)[-1] != name:
        raise ConfigError(join(path, "pulumiStack"), f"'{pulumi_stack}' reads Pulumi."
                          f"{pulumi_stack.rsplit('/', 1)[-1]}.yaml, not the stack file Pulumi.{name}.yaml")
    return FleetStack(name, stack_files[name], pulumi_stack, read_str(entry, "kubeconfig", path),
                      read_str(entry, "context", path))


def _verify(raw: Mapping, path: str, checks: tuple[str, ...]) -> VerifySettings:
    section = as_mapping(raw.get("verify") or {}, join(path, "verify"))
    where = join(path, "verify")
    check_keys(section, ("skip", "timeoutPerCheck"), where)
    skip = read_list(section, "skip", where)
    for index, name in enumerate(skip):
        if name not in checks:
            raise ConfigError(join(join(where, "skip"), index), one_of(name, checks))
    timeout = read_float(section, "timeoutPerCheck", where, VerifySettings.timeout_per_check, minimum=1.0)
    return VerifySettings(tuple(skip), timeout)


def _wave(raw: Any, path: str, stack_files: Mapping[str, Path], checks: tuple[str, ...]) -> Wave:
    wave = as_mapping(raw, path)
    check_keys(wave, ("name", "stacks", "allowDisruption", "bake", "gates", "verify"), path)
    name = read_str(wave, "name", path, required=True)
    entries = read_list(wave, "stacks", path, required=True)
    if not entries:
        raise ConfigError(join(path, "stacks"), "a wave needs at least one stack")
    stacks = tuple(_stack(entry, join(join(path, "stacks"), i), stack_files) for i, entry in enumerate(entries))
    gates = read_list(wave, "gates", path) if "gates" in wave else list(DEFAULT_GATES)
    for index, gate in enumerate(gates):
        if gate not in GATES:
            raise ConfigError(join(join(path, "gates"), index), f"unknown gate: {one_of(gate, GATES)}")
    if len(set(gates)) != len(gates):
        raise ConfigError(join(path, "gates"), "names a gate twice")
    if wave.get("verify") is not None and "verify" not in gates:
        raise ConfigError(join(path, "verify"), "set, but the wave has no verify gate (add verify to gates)")
    bake = parse_duration(wave["bake"], join(path, "bake")) if wave.get("bake") is not None else 0.0
    return Wave(name, stacks, read_bool(wave, "allowDisruption", path), bake,
                tuple(g for g in GATES if g in gates), _verify(wave, path, checks))


def parse_fleet(raw: Any, source: Path, project_dir: Path, stack_files: Mapping[str, Path],
                default_release: str, checks: tuple[str, ...]) -> Fleet:
    """The `Fleet` a parsed fleet file describes. ``stack_files`` are the project's stack files by stack name,
    ``checks`` the names ``gpu-platform verify`` knows. Raises `ConfigError` naming the key path."""
    document = as_mapping(raw if raw is not None else {}, "")
    check_keys(document, ("name", "release", "project", "waves"), "")
    waves_raw = read_list(document, "waves", "", required=True, non_empty=True)
    waves = tuple(_wave(w, join("waves", i), stack_files, checks) for i, w in enumerate(waves_raw))
    seen_waves: dict[str, int] = {}
    seen_stacks: dict[str, str] = {}
    seen_pulumi: dict[str, str] = {}
    for index, wave in enumerate(waves):
        if wave.name in seen_waves:
            raise ConfigError(join(join("waves", index), "name"),
                              f"'{wave.name}' is already the name of waves[{seen_waves[wave.name]}]")
        seen_waves[wave.name] = index
        for position, member in enumerate(wave.stacks):
            path = join(join(join("waves", index), "stacks"), position)
            if member.stack in seen_stacks:
                raise ConfigError(path, f"stack {member.stack} is already in wave {seen_stacks[member.stack]} "
                                        "(a stack rolls out in one wave)")
            if member.pulumi_stack in seen_pulumi:
                raise ConfigError(join(path, "pulumiStack"), f"'{member.pulumi_stack}' is already the Pulumi stack "
                                                             f"of {seen_pulumi[member.pulumi_stack]}")
            seen_stacks[member.stack] = wave.name
            seen_pulumi[member.pulumi_stack] = member.stack
    name = read_str(document, "name", "", default=source.stem)
    if not _NAME.match(name):
        raise ConfigError("name", f"'{name}' is not a fleet name (letters, digits, '.', '_' and '-', starting with a "
                                  "letter or digit): it names the folder build/fleet/<name>")
    release = read_str(document, "release", "", default=default_release)
    return Fleet(name, source, release, project_dir, waves)


def load_fleet(path: Path) -> Fleet:
    """Read and parse a fleet file, finding its stack files in the Pulumi project (``project:``, else the project
    around the file). Raises `FleetError` (one line) on any problem."""
    from .. import __version__, verify
    from .. import plan as planner

    try:
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as err:
            raise ConfigError("", f"cannot read the fleet file: {str(err).splitlines()[0]}") from None
        project_key = raw.get("project") if isinstance(raw, dict) else None
        if project_key is not None and not isinstance(project_key, str):
            raise ConfigError("project", f"must be a path, got {type(project_key).__name__}")
        if project_key is not None:
            start = (path.parent / project_key).resolve()
            if not any((start / name).is_file() for name in planner.PROJECT_FILES):
                raise ConfigError("project", f"no Pulumi.yaml in {start}")
        else:
            start = path.parent
        project = planner.find_project(start)
        stack_files = planner.discover_stacks(project.stacks_dir)
        return parse_fleet(raw, path, project.root, stack_files, __version__, tuple(verify.CHECKS))
    except FleetError:
        raise
    except ConfigError as err:
        raise FleetError(err.path, err.problem, str(path)) from None
