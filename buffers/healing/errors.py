"""Errors that say what is wrong and where."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where (a field path such as
    ``messages[3].metadata.tool_call_id``, with the file and line in front once a file
    reader has added them: ``a.jsonl: line 7: conversation.messages[3].role``) and a sentence."""

    path: str
    message: str

    def __post_init__(self) -> None:
        # A place or a sentence may quote the input, which may hold lone surrogates (a
        # JSON key "\ud800"): no page, terminal or JSON answer can encode those.
        for name in ("path", "message"):
            text = getattr(self, name)
            if not text.isascii():
                safe = text.encode("utf-8", "backslashreplace").decode("utf-8")
                object.__setattr__(self, name, safe)

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


def parse_each[T](items: Sequence[object], parse: Callable[[object, str], T], path: str) -> list[T]:
    """``parse(item, "path[i]")`` for every item, raising one InvalidInput with every problem."""
    parsed: list[T] = []
    problems: list[Problem] = []
    for index, item in enumerate(items):
        try:
            parsed.append(parse(item, f"{path}[{index}]"))
        except InvalidInput as error:
            problems.extend(error.problems)
    if problems:
        raise InvalidInput(problems)
    return parsed
