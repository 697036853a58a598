"""What is wrong with a declaration, all of it at once: a check that finds several problems
raises them together (pydantic reports them beside every other part's), and a name the
declaration does not know says which known one it is spelt like (difflib)."""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """ " (did you mean 'x'?)" when one of `choices` is spelt like `word`; else ""."""
    # 0.7, not difflib's 0.6: short words share enough letters at 0.6 to guess wrong ('median': 'min').
    close = get_close_matches(word, sorted(set(choices)), n=1, cutoff=0.7) if isinstance(word, str) else []
    return f" (did you mean {close[0]!r}?)" if close else ""


def refuse(problems: list[str]) -> None:
    """Raise every problem a check found, each an error of its own of the part it checks
    (pydantic reports them with the other parts'); nothing when there is none."""
    if problems:
        raise ValidationError.from_exception_data(
            "declaration",
            [
                InitErrorDetails(
                    type=PydanticCustomError("value_error", "{problem}", {"problem": problem}), loc=(), input=None
                )
                for problem in problems
            ],
        )
