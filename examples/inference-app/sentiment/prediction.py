"""One text's answer; a module of its own so the HTTP process never imports torch."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Prediction:
    label: str
    score: float
