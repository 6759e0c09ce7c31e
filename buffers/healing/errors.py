"""Errors that say what is wrong and where."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: a field path such as ``messages[3].metadata.tool_call_id``
    (or ``line 7: messages[3].role`` once a file reader has added its place) and a sentence."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"

    def within(self, prefix: str) -> Problem:
        return Problem(f"{prefix}{self.path}", self.message)


class InvalidInput(ValueError):
    """Raised with every problem found, so a client can fix them all in one go."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))

    def within(self, prefix: str) -> InvalidInput:
        return InvalidInput([p.within(prefix) for p in self.problems])
