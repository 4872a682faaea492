"""Stack-configuration field readers: each reads one key of a mapping and raises `ConfigError` with the field's path.

A data-layer module (errors only): every feature's parser reads its section with these, so no feature imports the
stack parser (`config`), which composes the features' parsers. ``config`` re-exports every name for callers that
read them from there.
"""

import re
from collections.abc import Mapping
from typing import Any, Optional

from .errors import ConfigError, check_keys, join, one_of  # noqa: F401  (check_keys: parsers take it from here too)


class Secret(str):
    """A configuration value that came from a ``secure:`` entry; its text is never the plaintext offline."""


DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
HOST_NAME = re.compile(r"^(\*\.)?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$")
MODEL_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


def as_mapping(value: Any, path: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise ConfigError(path, f"must be a mapping, got {type(value).__name__}")
    return value


def read_str(raw: Mapping, key: str, path: str, default: Optional[str] = None, required: bool = False) -> Any:
    if key not in raw or raw[key] is None:
        if required:
            raise ConfigError(join(path, key), "is required")
        return default
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConfigError(join(path, key), f"must be a string, got {type(value).__name__}")
    return value if isinstance(value, Secret) else str(value)


def read_int(raw: Mapping, key: str, path: str, default: Optional[int] = None, minimum: Optional[int] = None,
             required: bool = False) -> Any:
    if key not in raw or raw[key] is None:
        if required:
            raise ConfigError(join(path, key), "is required")
        return default
    value = raw[key]
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(join(path, key), f"must be an integer, got {raw[key]!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(join(path, key), f"must be >= {minimum}, got {value}")
    return value


def read_float(raw: Mapping, key: str, path: str, default: float, minimum: float = 0.0,
               maximum: Optional[float] = None) -> float:
    if key not in raw or raw[key] is None:
        return default
    value = raw[key]
    try:
        if isinstance(value, bool):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(join(path, key), f"must be a number, got {value!r}") from None
    if number < minimum or (maximum is not None and number > maximum):
        bound = f"between {minimum:g} and {maximum:g}" if maximum is not None else f">= {minimum:g}"
        raise ConfigError(join(path, key), f"must be {bound}, got {number:g}")
    return number


def read_bool(raw: Mapping, key: str, path: str, default: bool = False) -> bool:
    if key not in raw or raw[key] is None:
        return default
    value = raw[key]
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise ConfigError(join(path, key), f"must be true or false, got {value!r}")
    return value


def read_enum(raw: Mapping, key: str, path: str, choices: tuple[str, ...], default: Optional[str] = None,
              required: bool = False) -> Any:
    value = read_str(raw, key, path, default, required)
    if value is not None and value not in choices:
        raise ConfigError(join(path, key), one_of(value, choices))
    return value


def read_list(raw: Mapping, key: str, path: str, required: bool = False, non_empty: bool = False) -> list:
    if key not in raw or raw[key] is None:
        if required:
            raise ConfigError(join(path, key), "is required")
        return []
    value = raw[key]
    if not isinstance(value, list):
        raise ConfigError(join(path, key), f"must be a list, got {type(value).__name__}")
    if non_empty and not value:
        raise ConfigError(join(path, key), "must have at least one entry")
    return value


def read_string_map(raw: Mapping, key: str, path: str) -> dict[str, str]:
    if key not in raw or raw[key] is None:
        return {}
    value = as_mapping(raw[key], join(path, key))
    out = {}
    for k, v in value.items():
        if isinstance(v, (dict, list)) or v is None:
            raise ConfigError(join(join(path, key), str(k)), "must be a string")
        out[str(k)] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


def read_dns_label(raw: Mapping, key: str, path: str) -> str:
    value = read_str(raw, key, path, required=True)
    if not DNS_LABEL.match(value):
        raise ConfigError(join(path, key), f"'{value}' is not a DNS label (lower-case letters, digits and '-', "
                                            "starting and ending with a letter or digit, at most 63 characters)")
    return value


def section(raw: Mapping, key: str) -> Mapping:
    value = raw.get(key)
    return {} if value is None else as_mapping(value, key)

