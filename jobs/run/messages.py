"""Messages whole and brief: a message is never cut; where one line is wanted (the console's
last line, a report's cell), `brief` gives its first sentence and the commands it advises,
and says where the whole message is."""

from __future__ import annotations

import re

# A command the product advises, as messages write it (jobs/commands.py): `python -m jobs`, then
# words as the shell reads them (shlex.quote's: plain, or in single quotes, whatever they hold), in
# backticks or bare; a message's prose after a bare command starts with other than a word.
_WORD = r"""(?:[\w@%+=:,./\-]|'[^']*'|"'")+"""
_COMMAND = re.compile(rf"`(python -m jobs(?: {_WORD})+)`|(?<![`\w])(python -m jobs(?: {_WORD})+)")
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
    commands = [_without_full_stop(a or b) for a, b in _COMMAND.findall(rest) if (a or b) not in first]
    line = first.rstrip(".") + "."
    if commands:
        line += " Commands that help: " + "; ".join(dict.fromkeys(c.strip() for c in commands)) + "."
    if whole_at:
        line += f" The whole message: {whole_at}"
    return line


def _without_full_stop(command: str) -> str:
    """A bare command that ends its sentence, without the sentence's full stop ('FILE...' keeps its dots)."""
    return command[:-1] if command.endswith(".") and not command.endswith("..") else command
