"""What ``dcgmi diag -r <level> -j`` said: a parser for both DCGM 3.x and 4.x JSON documents.

DCGM 3.x nests everything under ``"DCGM GPU Diagnostic"``; DCGM 4.x renamed the key to ``"DCGM Diagnostic"``, reports
results per entity (``entity_group``/``entity_id`` instead of ``gpu_ids``/``gpu_id``) and adds a ``test_summary``
per test, ``entity_groups`` and ``metadata`` beside it (NVIDIA/DCGM ``nvvs/include/NvvsJsonStrings.h`` and
``testing/python3/dcgm_diag_schema.json``). A run that could not start reports ``runtime_error`` instead of tests.
Status words seen in real output: ``Pass``, ``Fail``, ``Warn``, ``Skip`` (older releases upper-case them), so they
are compared case-insensitively; an unknown word is never read as a pass.
"""

import json
from dataclasses import dataclass
from typing import Any, Optional

ROOT_KEYS = ("DCGM Diagnostic", "DCGM GPU Diagnostic")  # 4.x, then 3.x
PASSING = frozenset({"pass", "skip", "skipped", "warn", "warning"})
"""Statuses that do not fail a node: a skipped test (not applicable to the part) and a warning (DCGM's own word for
"not a hardware fault", e.g. persistence mode off) leave the node usable; the detail line still names them."""
FAILING = frozenset({"fail", "failed", "error"})


class DcgmParseError(ValueError):
    """The text is not a ``dcgmi diag -j`` document."""


@dataclass(frozen=True)
class TestOutcome:
    """One DCGM test (``software``, ``memory``, ``pcie``, ``diagnostic``...) over all the node's GPUs."""

    name: str
    """The test's name as DCGM prints it."""
    status: str
    """Lower-cased worst status: ``fail`` if any GPU failed, else ``warn``, ``skip`` or ``pass``; anything else is
    kept as DCGM spelled it (lower-cased) and counts as a failure."""
    messages: tuple[str, ...] = ()
    """DCGM's warning texts for failing or warning results (why it failed)."""
    failed_entities: tuple[str, ...] = ()
    """GPUs (``GPU 3``) whose result was not a pass, skip or warning."""

    @property
    def failed(self) -> bool:
        """Whether this test fails the node."""
        return self.status not in PASSING


@dataclass(frozen=True)
class DiagReport:
    """A whole ``dcgmi diag`` run."""

    tests: tuple[TestOutcome, ...]
    """Every test the document reports, in document order."""
    version: Optional[str] = None
    """DCGM's version when the document says (4.x ``metadata.version``, 3.x ``version``)."""
    runtime_error: Optional[str] = None
    """DCGM's reason when the diagnostic could not run at all."""

    @property
    def failures(self) -> tuple[TestOutcome, ...]:
        """The failing tests."""
        return tuple(t for t in self.tests if t.failed)

    @property
    def passed(self) -> bool:
        """True when the diagnostic ran, reported at least one test and no test failed."""
        return self.runtime_error is None and bool(self.tests) and not self.failures


_RANK = {"fail": 4, "warn": 2, "skip": 1, "pass": 0}
_ALIASES = {"failed": "fail", "error": "fail", "warning": "warn", "skipped": "skip", "passed": "pass"}


def _status(raw: Any) -> str:
    word = " ".join(str(raw or "").split()).lower()
    return _ALIASES.get(word, word)


def _entity(result: dict) -> str:
    if "entity_id" in result:
        return f"{result.get('entity_group', 'GPU')} {result['entity_id']}"
    gpus = result.get("gpu_ids", result.get("gpu_id"))
    return f"GPU {gpus}" if gpus is not None else "node"


def _warnings(result: dict) -> list[str]:
    raw = result.get("warnings") or result.get("warning") or []
    items = raw if isinstance(raw, list) else [raw]
    texts = []
    for item in items:
        text = item.get("warning") if isinstance(item, dict) else item
        if text:
            texts.append(" ".join(str(text).split()))
    return texts


def parse_test(test: dict) -> TestOutcome:
    """One test object of either version: the worst per-entity status, or the 4.x ``test_summary`` if worse."""
    statuses: list[str] = []
    messages: list[str] = []
    failed: list[str] = []
    for result in test.get("results") or []:
        if not isinstance(result, dict):
            continue
        status = _status(result.get("status"))
        statuses.append(status)
        if status != "pass":
            messages.extend(_warnings(result))
        if status not in PASSING:
            failed.append(_entity(result))
    summary = test.get("test_summary")
    if isinstance(summary, dict) and summary.get("status") is not None:
        statuses.append(_status(summary["status"]))
        messages.extend(_warnings(summary) if statuses[-1] != "pass" else [])
    # An unknown word ranks above fail so it is never hidden behind a pass; no status at all is "missing".
    worst = max(statuses, key=lambda s: _RANK.get(s, 5), default="missing")
    return TestOutcome(str(test.get("name", "?")), worst, tuple(dict.fromkeys(messages)), tuple(failed))


def _document(text: str) -> dict:
    # dcgmi may print a line ("Successfully ran diagnostic for group.", a warning) before the JSON document.
    start = text.find("{")
    if start < 0:
        raise DcgmParseError("no JSON document in the dcgmi output")
    try:
        doc = json.loads(text[start:])
    except json.JSONDecodeError as err:
        raise DcgmParseError(f"dcgmi output is not valid JSON: {err.msg} at line {err.lineno}") from None
    if not isinstance(doc, dict):
        raise DcgmParseError("dcgmi output is not a JSON object")
    return doc


def parse_diag(text: str) -> DiagReport:
    """Parse the text ``dcgmi diag -j`` wrote (DCGM 3.x or 4.x); raises `DcgmParseError` when it is no such document."""
    doc = _document(text)
    root = next((doc[k] for k in ROOT_KEYS if isinstance(doc.get(k), dict)), None)
    if root is None:
        raise DcgmParseError(f"dcgmi output has none of {', '.join(repr(k) for k in ROOT_KEYS)}")
    tests = [
        parse_test(test)
        for category in root.get("test_categories") or []
        if isinstance(category, dict)
        for test in category.get("tests") or []
        if isinstance(test, dict)
    ]
    metadata = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    version = metadata.get("version") or root.get("version")
    error = root.get("runtime_error") or doc.get("runtime_error")
    return DiagReport(tuple(tests), str(version) if version else None,
                      " ".join(str(error).split()) if error else None)
