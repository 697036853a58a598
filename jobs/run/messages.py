"""Messages whole and brief: a message is never cut; where one line is wanted (the console's
last line, a report's cell), `brief` gives its first sentence and the commands it advises,
and says where the whole message is."""

from __future__ import annotations

import re

# A command the product advises, as messages write it: `python -m jobs ...` in backticks, or
# bare up to the end of its clause.
_COMMAND = re.compile(r"`(python -m jobs [^`]+)`|(?<![`\w])(python -m jobs [^;()`]+?)(?=\s*[;(]|\)|,? then |\. |\.?$)")
BRIEF_CHARS = 300


# A sentence ends at ". ", but not in "e.g. " or "i.e. ", nor inside brackets (an error quoted).
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)\. ")


def _first_sentence(message: str) -> tuple[str, str]:
    for found in _SENTENCE_END.finditer(message):
        before = message[: found.start()]
        if before.count("(") <= before.count(")") and before.count("[") <= before.count("]"):
            return before, message[found.end() :]
    return message, ""


def brief(message: str, whole_at: str | None = None) -> str:
    """A message as one console line: whole when short; else its first sentence, then each
    command it advises, then where it is whole (the run report, the log)."""
    if len(message) <= BRIEF_CHARS:
        return message
    first, rest = _first_sentence(message)
    if not rest:
        return message  # one sentence: nothing to leave out
    commands = [a or b for a, b in _COMMAND.findall(rest) if (a or b) not in first]
    line = first.rstrip(".") + "."
    if commands:
        line += " Commands that help: " + "; ".join(dict.fromkeys(c.strip() for c in commands)) + "."
    if whole_at:
        line += f" The whole message: {whole_at}"
    return line
