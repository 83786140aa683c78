"""The judge's prompt: a text file (the package's ``umbrela.prompt`` or the team's own ``--prompt FILE``), the
messages made from it for one (query, passage) pair, and the one reading of the judge's answer.

A prompt file holds the system message, a line ``=== user ===``, then the user message. ``{grade_min}``,
``{grade_max}`` and ``{rubric}`` are replaced by the dataset's scale and rubric; ``{data}`` (required, in the user
message) by one JSON object ``{"query": ..., "passage": ...}``. The query and the passage are JSON-escaped there,
so no text in them can close the object or pose as the prompt's own words: they reach the model as delimited
data, never as instructions. Substitution is literal (``str.replace``): braces in the data mean nothing.

The prompt's identity is the SHA-256 of the file's bytes, stored with every answer and label.

An answer is read strictly: exactly one ``grade: N`` line (or an answer that is nothing but one integer), N in
ASCII digits without a sign, on the dataset's scale. Anything else is *unparsed*: kept verbatim and counted, never
guessed into a grade. That includes no grade, a second grade anywhere in the text ("grade: 3" then "Actually
grade: 0" mid-sentence: which one the model meant is not for the reader to choose), the same grade twice, a sign
(``+2``, ``-0``), digits of another script (``٣``, fullwidth ``３``), a grade off the scale and prose around a bare
number.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

USER_MARK = "=== user ==="
DEFAULT_PROMPT = Path(__file__).with_name("umbrela.prompt")
_GRADE_LINE = re.compile(r"^\s*(?:#+\s*)?(?:final\s+)?(?:grade|score)\s*[:=]\s*([0-9]+)\s*\.?\s*$", re.I | re.M)
_BARE = re.compile(r"^\s*([0-9]+)\s*$")
#: Anything that reads as a grade, wherever it stands and in whatever digits or sign: what "exactly one" counts.
_MENTION = re.compile(r"(?:grade|score)\s*[:=]\s*([+\-\u2212\uff0b\uff0d]?\s*\d+)", re.I)
_MAX_DIGITS = 9  # a longer number is off any scale; int() of thousands of digits would raise


class PromptError(ValueError):
    """A prompt file that cannot be used (no user part, no ``{data}``, unreadable)."""


@dataclass(frozen=True)
class Prompt:
    system: str
    user: str
    sha256: str
    path: str

    def messages(self, query: str, passage: str, scale: Scale) -> list[dict[str, str]]:
        """The chat messages for one pair: the instructions, then the pair as one JSON object."""
        data = json.dumps({"query": query, "passage": passage}, ensure_ascii=False)
        fill = scale.fill
        out = []
        if self.system.strip():
            out.append({"role": "system", "content": fill(self.system)})
        out.append({"role": "user", "content": fill(self.user).replace("{data}", data)})
        return out


@dataclass(frozen=True)
class Scale:
    grade_min: int
    grade_max: int
    rubric: str

    def fill(self, text: str) -> str:
        return (
            text.replace("{grade_min}", str(self.grade_min))
            .replace("{grade_max}", str(self.grade_max))
            .replace("{rubric}", self.rubric)
        )


def load_prompt(path: str | Path | None = None) -> Prompt:
    """The prompt at ``path`` (the package's UMBRELA-style prompt when None)."""
    p = Path(path) if path is not None else DEFAULT_PROMPT
    try:
        raw = p.read_bytes()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptError(f"{p}: cannot read the prompt file ({exc})") from None
    system, mark, user = text.partition(USER_MARK + "\n")
    if not mark:
        raise PromptError(f"{p}: no line {USER_MARK!r} between the system message and the user message")
    if "{data}" not in user:
        raise PromptError(f"{p}: the user message needs {{data}}, where the query and passage go as JSON")
    if "{data}" in system:
        raise PromptError(f"{p}: {{data}} belongs in the user message, after {USER_MARK!r}")
    return Prompt(system.rstrip("\n"), user.rstrip("\n"), hashlib.sha256(raw).hexdigest(), str(p))


@dataclass(frozen=True)
class Parsed:
    grade: int | None
    problem: str | None  # why the answer gave no grade (None when it did)


def parse_answer(answer: str | None, scale: Scale) -> Parsed:
    """The grade in ``answer``, or why there is none; never a guess, never an exception."""
    if answer is None or not answer.strip():
        return Parsed(None, "empty answer")
    mentions = [m.strip()[:20] for m in _MENTION.findall(answer)]
    if len(mentions) > 1:
        return Parsed(None, f"several grades ({', '.join(sorted(mentions))})")
    lines = _GRADE_LINE.findall(answer)
    if mentions and not lines:
        token = mentions[0]
        if not (token.isascii() and token.isdigit()):
            return Parsed(None, f"grade {token!r} is not ASCII digits 0-9 without a sign")
        return Parsed(None, "no 'grade: N' line")
    if lines:
        digits = lines[0]
    else:
        bare = _BARE.match(answer)
        if bare is None:
            return Parsed(None, "no 'grade: N' line")
        digits = bare.group(1)
    grade = int(digits) if len(digits) <= _MAX_DIGITS else None
    if grade is None or not scale.grade_min <= grade <= scale.grade_max:
        return Parsed(None, f"grade {digits[:20]} is outside the scale {scale.grade_min}..{scale.grade_max}")
    return Parsed(grade, None)
