"""The contract every component enforces on its arguments when it is constructed.

A component's args are a TypedDict; `check_args` reads that TypedDict (the same annotations Pulumi's analyzer
turns into the package schema other languages see) and refuses, before any child resource is registered:

- args that are not a mapping, unknown keys (with the nearest known one; a camelCase key whose snake_case form
  exists is named as such), missing ``Required[...]`` keys;
- values of the wrong type, recursively through lists, string maps and nested TypedDicts; an ``Output`` where
  the component needs a plain value (only ``pulumi.Input[...]`` arguments take Outputs);
- values outside the component's `Rule`s: ranges, enumerations, patterns (Kubernetes versions, quantities,
  durations, DNS labels).

Every refusal is one `ConfigError` line ``<Component> <name>: <argument path>: <problem>``, the shape stack files
get. Integers that other Pulumi languages send as floats (``2.0``) are normalised to ``int``.
"""

import collections.abc
import dataclasses
import functools
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Optional

import pulumi

from .cidrs import CidrRule
from .errors import ConfigError, argument_name, did_you_mean, one_of
from .pools import GpuPool, GpuPoolSpec
from .upgrades import kubernetes_versions

# ---------------------------------------------------------------------------------------------------------
# Rules: what a value must satisfy beyond its type.


@dataclasses.dataclass(frozen=True)
class Rule:
    """Constraints on one argument (``None`` fields do not apply)."""

    minimum: Optional[float] = None
    maximum: Optional[float] = None
    choices: tuple[Any, ...] = ()
    pattern: Optional[str] = None
    """A full-match regular expression for strings."""
    what: str = ""
    """What the pattern describes, for the error (``a Kubernetes minor version such as 1.34``)."""
    check: Optional[Callable[[Any], Optional[str]]] = None
    """Returns the problem with a value, or None."""


def at_least(minimum: float) -> Rule:
    return Rule(minimum=minimum)


def between(minimum: float, maximum: float) -> Rule:
    return Rule(minimum=minimum, maximum=maximum)


def choice(*choices: Any) -> Rule:
    return Rule(choices=tuple(choices))


def matching(pattern: str, what: str) -> Rule:
    return Rule(pattern=pattern, what=what)


def cidr(rule: CidrRule) -> Rule:
    """An IPv4 CIDR argument checked by the same `cidrs.CidrRule` as its stack key."""
    return Rule(check=rule.problem)


DNS_LABEL = matching(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", "a DNS label (lower-case letters, digits and '-')")
KUBERNETES_VERSION = matching(r"1\.(2[5-9]|3[0-9])", "a Kubernetes minor version from 1.25 to 1.39 such as "
                              f"{kubernetes_versions.default_minor()}")


def offered_kubernetes_version(cloud: str) -> Rule:
    """`KUBERNETES_VERSION`, and a minor ``cloud`` offers (`upgrades.kubernetes_versions.offered`)."""
    return dataclasses.replace(KUBERNETES_VERSION,
                               check=lambda minor: kubernetes_versions.offered_problem(cloud, minor))


STORAGE_QUANTITY = matching(r"[1-9]\d*(Ki|Mi|Gi|Ti|Pi)", "a storage quantity such as 50Gi")
_STORAGE_UNITS = {"Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3, "Ti": 1024 ** 4, "Pi": 1024 ** 5}


def storage_bytes(quantity: str) -> int:
    """A `STORAGE_QUANTITY` (``500Gi``, ``2Ti``) in bytes: here, below storage and scheduling, because both compare
    a team's ``storage_quota`` with what `DataPlaneStorage` assumed (``1Ti`` and ``1024Gi`` agree)."""
    return int(quantity[:-2]) * _STORAGE_UNITS[quantity[-2:]]


def storage_text(size: int) -> str:
    """Bytes as the largest whole binary unit (``5Ti``, ``1537Gi``)."""
    unit = next(u for u in reversed(_STORAGE_UNITS) if size % _STORAGE_UNITS[u] == 0)
    return f"{size // _STORAGE_UNITS[unit]}{unit}"


CPU_QUANTITY = matching(r"([1-9]\d*m|\d+(\.\d+)?)", "a CPU quantity such as 500m or 2")
MEMORY_QUANTITY = matching(r"[1-9]\d*(Ki|Mi|Gi|Ti|k|M|G|T)?", "a memory quantity such as 2Gi")
PROMETHEUS_DURATION = matching(r"([1-9]\d*(ms|s|m|h|d|w|y))+", "a Prometheus duration such as 15d")
CRON = matching(r"\S+( \S+){4}", "a five-field cron schedule such as '*/30 * * * *'")
NON_EMPTY = Rule(check=lambda v: "must not be empty" if not v else None)


# ---------------------------------------------------------------------------------------------------------
# Keyword arguments


class KeywordArgs(type):
    """Metaclass of the components: their args may be given as keywords, as Pulumi's own resources take theirs
    (``NvidiaGpuStack("nvidia", cloud="aws", pools=[...])`` is ``NvidiaGpuStack("nvidia", {"cloud": "aws", "pools":
    [...]})``); keywords join the ``args`` mapping, and a key given both ways is refused in one line."""

    def __call__(cls, *positional: Any, **keywords: Any) -> Any:
        names = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
        extra = {k: v for k, v in keywords.items() if k not in names}
        if not extra:
            return super().__call__(*positional, **keywords)
        keywords = {k: v for k, v in keywords.items() if k in names}
        if len(positional) > len(names):
            return super().__call__(*positional, **keywords, **extra)  # Python's own TypeError says what is wrong
        bound = dict(zip(names[:len(positional)], positional, strict=True))
        if set(bound) & set(keywords):
            return super().__call__(*positional, **keywords, **extra)  # Python's own TypeError says what is wrong
        bound.update(keywords)
        args = bound.get("args", {})
        if not isinstance(args, Mapping):
            return super().__call__(*positional, **keywords, **extra)  # the args checker names the bad args
        for key in extra:
            if key in args:
                raise ConfigError(key, "is given twice, as a keyword and in args: give it once",
                                  f"{cls.__name__} {bound.get('name', '')}".strip())
        bound["args"] = {**args, **extra}
        return super().__call__(**bound)


# ---------------------------------------------------------------------------------------------------------
# The checker


def snake_case(key: str) -> str:
    """``systemNodeInstanceType`` -> ``system_node_instance_type``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def camel_case(key: str) -> str:
    """``system_node_instance_type`` -> ``systemNodeInstanceType``."""
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _join(path: str, key: "str | int") -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _rule_key(path: str) -> str:
    """``gpu_pools[2].desired_nodes`` -> ``gpu_pools[].desired_nodes`` (how rules name list items)."""
    return re.sub(r"\[\d+\]", "[]", path)


def type_hints(schema: type) -> dict[str, Any]:
    """The annotations of a TypedDict, evaluated; ``pulumi.Input[...]`` holds forward references to ``Output``
    that only resolve in ``pulumi.output``'s namespace. A copy of `_type_hints`' (evaluated once per class)."""
    return dict(_type_hints(schema))


@functools.cache
def _type_hints(schema: type) -> dict[str, Any]:
    # Every component checks its args on construction (a plan builds a TeamNamespace per team): evaluating the
    # annotations each time was most of a check.
    return typing.get_type_hints(schema, localns=dict(vars(pulumi.output)))


def _is_output(value: Any) -> bool:
    return isinstance(value, pulumi.Output) or inspect.isawaitable(value)


class Args:
    """Checks the args of one component instance: ``Args("EksCluster", name, cloud="aws")``; errors name both.

    Every `GpuPoolSpec` in the args (a `GpuPool` is taken too) is re-checked by `pool_spec.check_pool` against
    ``cloud`` (None: each pool against its own cloud) and replaced by its complete spec, catalog facts filled in.
    """

    def __init__(self, component: str, name: str, cloud: Optional[str] = None):
        self.component = component
        self.name = name
        self.cloud = cloud

    @property
    def where(self) -> str:
        return f"{self.component} {self.name}"

    def fail(self, path: str, problem: str) -> typing.NoReturn:
        """Raise the one-line error for ``path``."""
        raise ConfigError(path, problem, self.where)

    def unique(self, names: list[str], path: str, what: str = "name") -> None:
        """Refuse a repeated name: ``path`` is the list (``gpu_pools``), ``names`` its items' names in order."""
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            if name in seen:
                self.fail(f"{path}[{i}]", f"duplicate {what} '{name}' (also {path}[{seen[name]}])")
            seen[name] = i

    def check(self, args: Any, schema: type, rules: Optional[Mapping[str, Rule]] = None) -> dict[str, Any]:
        """``args`` checked against the TypedDict ``schema`` and ``rules`` (keyed by argument path, list items as
        ``[]``: ``{"gpu_pools[].desired_nodes": at_least(0)}``); a normalised copy."""
        return self._typed_dict(args, schema, "", dict(rules or {}))

    # -- types -------------------------------------------------------------------------------------------

    def _typed_dict(self, value: Any, schema: type, path: str, rules: dict[str, Rule]) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(path or "args", f"must be a mapping of {schema.__name__} keys, got {type(value).__name__}")
        hints = _type_hints(schema)  # read only
        required = set(getattr(schema, "__required_keys__", set()))
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str) or key not in hints:
                self.fail(_join(path, str(key)), self._unknown(str(key), hints))
            if item is None and key not in required:
                continue  # None means "the default" for every optional argument
            out[key] = self._value(item, hints[key], _join(path, key), rules)
        for key in sorted(required - set(out)):
            self.fail(_join(path, key), "is required")
        return out

    def _unknown(self, key: str, hints: Mapping[str, Any]) -> str:
        snake = argument_name(key)
        if snake != key and snake in hints:
            return f"unknown argument; arguments are snake_case in Python: use '{snake}' (camelCase is the stack " \
                   "file's spelling)"
        return f"unknown argument{did_you_mean(key, sorted(hints))}"

    def _value(self, value: Any, tp: Any, path: str, rules: dict[str, Rule]) -> Any:
        tp, takes_output = _unwrap(tp)
        if _is_output(value) or isinstance(value, pulumi.Resource):
            if takes_output or tp is Any:
                return value
            self.fail(path, f"must be a plain {_type_name(tp)}, not an Output: the component reads it when it is "
                            "constructed")
        value = self._typed(value, tp, path, rules)
        rule = rules.get(_rule_key(path))
        if rule is not None:
            self._apply(rule, value, path)
        return value

    def _typed(self, value: Any, tp: Any, path: str, rules: dict[str, Rule]) -> Any:
        origin = typing.get_origin(tp)
        if tp is Any:
            return value
        if tp is GpuPoolSpec:
            from .pool_spec import check_pool  # pool_spec builds on this module

            spec = value.spec() if isinstance(value, GpuPool) else value
            cloud = self.cloud or (spec.get("cloud") if isinstance(spec, Mapping) else None) or ""
            return check_pool(self, value, path, cloud).spec()
        if typing.is_typeddict(tp):
            return self._typed_dict(value, tp, path, rules)
        if origin in (list, typing.Sequence, tuple, collections.abc.Sequence) or tp in (list,):
            if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
                self.fail(path, f"must be a list, got {_describe(value)}")
            (item_tp,) = typing.get_args(tp)[:1] or (Any,)
            if item_tp is GpuPoolSpec and _rule_key(_join(path, 0)) not in rules:
                # Every TeamNamespace of a plan gets the same pools: checked once per plan (`pool_spec`).
                from .pool_spec import checked_pool_list

                return checked_pool_list((list(value), self.cloud), lambda: [
                    self._value(v, item_tp, _join(path, i), rules) for i, v in enumerate(value)])
            return [self._value(v, item_tp, _join(path, i), rules) for i, v in enumerate(value)]
        if origin in (dict, Mapping, typing.Mapping) or tp is dict:
            if not isinstance(value, Mapping):
                self.fail(path, f"must be a mapping, got {_describe(value)}")
            key_tp, item_tp = (typing.get_args(tp) + (Any, Any))[:2]
            out = {}
            for k, v in value.items():
                if key_tp is str and not isinstance(k, str):
                    self.fail(_join(path, str(k)), "keys must be strings")
                out[k] = self._value(v, item_tp, f"{path}.{k}", rules)
            return out
        if tp is bool:
            if not isinstance(value, bool):
                self.fail(path, f"must be true or false, got {_describe(value)}")
            return value
        if tp is int:
            if isinstance(value, float) and value.is_integer():
                return int(value)  # other Pulumi languages send every number as a float
            if isinstance(value, bool) or not isinstance(value, int):
                self.fail(path, f"must be an integer, got {_describe(value)}")
            return value
        if tp is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.fail(path, f"must be a number, got {_describe(value)}")
            return float(value)
        if tp is str:
            if not isinstance(value, str):
                self.fail(path, f"must be a string, got {_describe(value)}")
            return value
        return value

    def _apply(self, rule: Rule, value: Any, path: str) -> None:
        if rule.choices and value not in rule.choices:
            self.fail(path, one_of(value, [str(c) for c in rule.choices]))
        if rule.minimum is not None and isinstance(value, (int, float)) and value < rule.minimum:
            self.fail(path, f"must be >= {rule.minimum:g}, got {value:g}")
        if rule.maximum is not None and isinstance(value, (int, float)) and value > rule.maximum:
            self.fail(path, f"must be <= {rule.maximum:g}, got {value:g}")
        if rule.pattern is not None and isinstance(value, str) and not re.fullmatch(rule.pattern, value):
            self.fail(path, f"'{value}' is not {rule.what}")
        if rule.check is not None:
            problem = rule.check(value)
            if problem:
                self.fail(path, problem)


def _unwrap(tp: Any) -> tuple[Any, bool]:
    """(the plain type, whether Outputs are accepted) of an annotation: ``Optional[X]`` -> X,
    ``pulumi.Input[X]`` -> (X, True)."""
    takes_output = False
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Union or origin is types.UnionType:
            members = [a for a in typing.get_args(tp) if a is not type(None)]
            outputs = [a for a in members if typing.get_origin(a) is pulumi.Output or a is pulumi.Output
                       or typing.get_origin(a) in (typing.Awaitable, __import__("collections.abc").abc.Awaitable)]
            plain = [a for a in members if a not in outputs]
            takes_output = takes_output or bool(outputs)
            if len(plain) == 1:
                tp = plain[0]
                continue
            return (plain[0] if plain else Any), takes_output
        return tp, takes_output


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


def _describe(value: Any) -> str:
    return f"{value!r}" if isinstance(value, (str, int, float, bool)) or value is None else type(value).__name__
