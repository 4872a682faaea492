"""`Violation`: one guardrail a resource of a plan breaks."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """One broken rule, as ``gpu-platform policy check`` prints it."""

    resource: str
    """The resource's name as in ``plan.json`` (its logical name)."""
    rule: str
    """The rule's name (`rules.RULES`, the policy's name in the pack)."""
    message: str
    """Why, in one line."""

    def line(self) -> str:
        return f"{self.resource}: {self.rule}: {self.message}"
