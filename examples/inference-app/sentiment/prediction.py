"""One text's answer; a module of its own so the HTTP process never imports torch."""

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Prediction:
    label: str
    score: float


def answer_document(predictions: Sequence[Prediction], batched: bool) -> object:
    """The JSON answer to /analyze: ``{"label", "score"}`` for one text, ``{"results": [...]}`` for a list; the
    one definition both the aiohttp handler and the fast path answer with."""
    results = [{"label": p.label, "score": round(p.score, 6)} for p in predictions]
    return {"results": results} if batched else results[0]
