"""Regenerate (or check) every generated file the repository checks in.

    python -m gpu_platform.generate          # rewrite them
    python -m gpu_platform.generate --check  # exit 1 and name the stale ones

- ``docs/configuration.md``: the configuration reference (`docgen.config_reference`);
- ``docs/support-matrix.md``: clouds, shapes, sharing, drivers, RDMA, autoscalers (`docgen.support_matrix`);
- ``provider/schema.json``: the component package schema other Pulumi languages see (`provider`);
- ``docs/components.md``: every served component's inputs and outputs, from that schema;
- ``docs/stack-config.schema.json``: the stack file's JSON Schema for editors (`docgen.stack_schema`);
- the support-matrix table in ``README.md`` (between ``<!-- generated:support-matrix -->`` markers).

Run from the repository root (or pass ``--root``). The tests fail with this command in their message when a
checked-in copy differs from what the code generates.
"""

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Optional

COMMAND = "python -m gpu_platform.generate"


def _configuration() -> str:
    from .docgen import config_reference

    return config_reference.page()


def _support_matrix() -> str:
    from .docgen import support_matrix

    return support_matrix.page()


def _schema() -> str:
    from . import provider

    return provider.schema_text(_package_schema())


def _components() -> str:
    from .docgen import components_reference

    return components_reference.page(_package_schema())


_SCHEMA: dict = {}


def _package_schema() -> dict:
    """The package schema, computed once per run (it imports every cloud SDK: a few seconds)."""
    if not _SCHEMA:
        from . import provider

        _SCHEMA.update(provider.schema())
    return _SCHEMA


def _stack_schema() -> str:
    from .docgen import stack_schema

    return stack_schema.text()


GENERATED: dict[str, Callable[[], str]] = {
    "docs/stack-config.schema.json": _stack_schema,
    "docs/configuration.md": _configuration,
    "docs/support-matrix.md": _support_matrix,
    "provider/schema.json": _schema,
    "docs/components.md": _components,
}
"""Checked-in path (relative to the repository root) -> the function that renders it."""


def _support_overview() -> str:
    from .docgen import support_matrix

    return support_matrix.overview_table()


GENERATED_SECTIONS: dict[str, dict[str, Callable[[], str]]] = {
    "README.md": {"support-matrix": _support_overview},
}
"""Hand-written files with generated parts between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``."""


def replace_section(text: str, name: str, body: str) -> str:
    """``text`` with the generated section ``name`` holding ``body``; a missing marker is an error."""
    begin, end = f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise ValueError(f"missing markers {begin} ... {end}")
    return text[:start + len(begin)] + "\n" + body + text[stop:]


def _rendered(root: Path, path: str) -> str:
    """What ``path`` should contain now."""
    if path in GENERATED:
        return GENERATED[path]()
    text = (root / path).read_text(encoding="utf-8")
    for name, render in GENERATED_SECTIONS[path].items():
        text = replace_section(text, name, render())
    return text


def stale(root: Path, only: Optional[list[str]] = None) -> list[str]:
    """Generated files (and generated sections) whose checked-in copy differs from what the code renders now."""
    out = []
    for path in [*GENERATED, *GENERATED_SECTIONS]:
        if only and path not in only:
            continue
        target = root / path
        if not target.exists() or target.read_text(encoding="utf-8") != _rendered(root, path):
            out.append(path)
    return out


def write(root: Path) -> list[str]:
    """Render every generated file and section; return the files that changed."""
    changed = []
    for path in [*GENERATED, *GENERATED_SECTIONS]:
        target = root / path
        text = _rendered(root, path)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description="regenerate the checked-in generated files")
    parser.add_argument("--check", action="store_true", help="only check; exit 1 when a file is stale")
    parser.add_argument("--root", default=".", help="repository root (default: the current directory)")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if not (root / "pyproject.toml").exists():
        print(f"error: {root.resolve()} is not the repository root (no pyproject.toml)", file=sys.stderr)
        return 2
    if args.check:
        outdated = stale(root)
        for path in outdated:
            print(f"stale: {path}", file=sys.stderr)
        return 1 if outdated else 0
    for path in write(root):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
