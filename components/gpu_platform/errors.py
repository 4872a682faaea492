"""The one error type bad configuration raises: a single line naming the stack, the path and the problem."""

import difflib
import re
from collections.abc import Iterable, Mapping
from typing import Optional

STACK_KEY_ARGUMENTS = {"memoryQuotaGi": "memory_quota_gib"}
"""Stack keys whose component argument is not their snake_case: the stack key keeps the Kubernetes quantity suffix
(``Gi``), the argument names its unit (``gib``). Each side's messages name the other's spelling when it is used
where it does not belong."""


class ConfigError(ValueError):
    """Invalid stack configuration: ``<stack>: <path>: <problem>`` on one line."""

    def __init__(self, path: str, problem: str, stack: str = ""):
        self.path = path
        self.problem = problem
        self.stack = stack
        super().__init__(self._line())

    def _line(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{self.stack}: {where}{self.problem}" if self.stack else f"{where}{self.problem}"

    def for_stack(self, stack: str) -> "ConfigError":
        """The same error, attributed to ``stack``."""
        return ConfigError(self.path, self.problem, stack)


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` when a choice is close to ``value``, else ``""``."""
    near = difflib.get_close_matches(str(value), list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{near[0]}'?" if near else ""


def one_of(value: object, choices: Iterable[str]) -> str:
    """The problem text for a value outside an enumeration."""
    choices = list(choices)
    return f"'{value}' is not one of {', '.join(choices)}{did_you_mean(str(value), choices)}"


def join(path: str, key: "str | int") -> str:
    """``nodePools`` + 1 -> ``nodePools[1]``; ``nodePools[1]`` + ``name`` -> ``nodePools[1].name``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def argument_name(stack_key: str) -> str:
    """The component argument a stack key maps to: its snake_case (``gpuQuota`` -> ``gpu_quota``) or, where the two
    spellings differ, `STACK_KEY_ARGUMENTS`."""
    return STACK_KEY_ARGUMENTS.get(stack_key) or re.sub(r"(?<!^)(?=[A-Z])", "_", stack_key).lower()


def stack_spelling(key: str, allowed: Iterable[str]) -> Optional[str]:
    """The allowed stack key that ``key`` (an argument's spelling such as ``memory_quota_gib``, or its camelCase
    ``memoryQuotaGib``) stands for, or None."""
    wanted = argument_name(key) if "_" not in key else key
    return next((k for k in sorted(allowed) if argument_name(k) == wanted and k not in (key, wanted)), None)


def check_keys(raw: Mapping, allowed: Iterable[str], path: str) -> None:
    """Reject keys a section does not know, suggesting the closest known one (a component argument's spelling is
    named as such)."""
    allowed = set(allowed)
    for key in raw:
        if key not in allowed:
            spelled = stack_spelling(str(key), allowed)
            if spelled is not None:
                raise ConfigError(join(path, key), f"unknown key; stack files spell it '{spelled}' (the component "
                                                   f"argument is '{argument_name(spelled)}')")
            raise ConfigError(join(path, key), f"unknown key{did_you_mean(str(key), sorted(allowed))}")
