"""Validation findings: each names the file, the line (or row) and the field, so a user can fix it at once.

The one bad-line reporter of the readers is here too (:class:`Cause`, :func:`counted_causes`): one scan of a
staged relation gives every cause once, with its count, its first lines and the first value, however many lines
share it.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

MAX_REPORTED = 50
UNREADABLE = ("missing-file", "empty-file", "encoding", "unreadable", "bad-header", "compression")
"""Codes of a file that could not be read: it left nothing (or a half-read table) to check, so that is the one
cause a load reports."""


@dataclass(frozen=True)
class Finding:
    file: str
    line: int | None
    field: str | None
    code: str
    message: str
    severity: str = "error"  # error | warning
    count: int = 1  # how many lines share this cause; ``line`` is the first of them
    lines: tuple[int, ...] = ()  # the first few of those lines (up to FIRST_LINES)

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
        if self.field:
            where += f": {self.field}"
        text = f"{where}: {self.message}"
        if self.count > 1:
            shown = ", ".join(str(n) for n in self.lines[:FIRST_LINES])
            text += f" ({self.count:,} lines of this kind; first: {shown})" if shown else f" ({self.count:,} times)"
        return text


FIRST_LINES = 5


def summarize(findings: list[Finding]) -> list[Finding]:
    """One finding per cause (file, field, code, severity): the first occurrence's message, the number of
    occurrences and the first few line numbers, so 10,000 bad lines read as one error, not 10,000."""
    groups: dict[tuple[str, str | None, str, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.file, f.field, f.code, f.severity), []).append(f)
    out = []
    for group in groups.values():
        group.sort(key=lambda f: f.line if f.line is not None else -1)
        first = group[0]
        count = sum(f.count for f in group)
        lines = sorted({n for f in group for n in (f.lines or ((f.line,) if f.line is not None else ()))})
        out.append(
            Finding(
                first.file,
                first.line,
                first.field,
                first.code,
                first.message,
                first.severity,
                count,
                tuple(lines[:FIRST_LINES]),
            )
        )
    return out


def errors_of(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


def has_errors(findings: list[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)


def unreadable(findings: list[Finding]) -> bool:
    """Whether some error says a file could not be read (:data:`UNREADABLE`)."""
    return any(f.code in UNREADABLE and f.severity == "error" for f in findings)


class ValidationFailed(Exception):
    """Raised with every error found, one line per cause; nothing was written (the load rolled back)."""

    def __init__(self, errors: list[Finding], total: int | None = None) -> None:
        merged = summarize(errors)
        ordered = sorted(merged, key=lambda e: (e.file, e.line if e.line is not None else -1, e.field or ""))
        self.errors = ordered[:MAX_REPORTED]
        self.total = total if total is not None else sum(e.count for e in merged)
        causes = len(merged)
        kinds = f" of {causes} kind(s)" if causes < self.total else ""
        more = f" (showing the first {len(self.errors)} kinds)" if causes > len(self.errors) else ""
        lines = "\n".join(f"  {e}" for e in self.errors)
        super().__init__(
            f"{self.total:,} validation error(s){kinds}{more}; nothing was loaded, the store is unchanged:\n{lines}"
        )


def path_findings(path: Path) -> list[Finding]:
    """What keeps ``path`` from being read as a file, named for what it is (empty when it can be opened)."""
    f = str(path)
    if path.is_dir():
        return [Finding(f, None, None, "unreadable", "is a directory, not a file")]
    if not path.exists():
        if path.is_symlink():
            return [Finding(f, None, None, "unreadable", "is a broken or self-referencing symbolic link")]
        return [Finding(f, None, None, "missing-file", "no such file")]
    if not stat.S_ISREG(path.stat().st_mode):  # opening a FIFO would wait for a writer forever
        return [Finding(f, None, None, "unreadable", "is not a regular file (a FIFO, socket or device)")]
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        return [Finding(f, None, None, "unreadable", f"cannot be read ({exc.strerror or exc})")]
    return []


@dataclass(frozen=True)
class Cause:
    """One kind of bad row: a predicate over a staged relation and the finding it becomes."""

    where: str
    # SQL for the value quoted in the message (``{v}``), taken from the first such row; a struct quotes each of
    # its fields by name (``{qid}``)
    value: str
    field: str | None
    code: str
    message: str
    severity: str = "error"


def counted_causes(con: duckdb.DuckDBPyConnection, relation: str, path: Path, causes: list[Cause]) -> list[Finding]:
    """All causes in one scan: each becomes one finding with its count, its first lines and the first value. Only
    the rows some cause holds for are aggregated, and a Parquet scan skips the row groups none can hold for."""
    if not causes:
        return []
    some = " OR ".join(f"({c.where})" for c in causes)
    row = con.execute(f"SELECT {_cause_aggregates(causes)} FROM {relation} WHERE {some}").fetchall()[0]
    return _cause_findings(row, path, causes)


def counted_causes_by(
    con: duckdb.DuckDBPyConnection, relation: str, by: str, causes: list[Cause]
) -> dict[str, list[Finding]]:
    """``counted_causes`` for every distinct value of the column ``by`` (a file, a run id), in one grouped scan;
    each value's findings name it as their file."""
    if not causes:
        return {}
    rows = con.execute(
        f"SELECT {by}, {_cause_aggregates(causes)} FROM {relation} GROUP BY {by} ORDER BY {by}"
    ).fetchall()
    return {str(row[0]): _cause_findings(row[1:], Path(str(row[0])), causes) for row in rows}


def _cause_aggregates(causes: list[Cause]) -> str:
    return ", ".join(
        f"count(*) FILTER (WHERE {c.where}), min(line, {FIRST_LINES}) FILTER (WHERE {c.where}), "
        f"arg_min({c.value}, line) FILTER (WHERE {c.where})"
        for c in causes
    )


def _cause_findings(row: tuple[Any, ...], path: Path, causes: list[Cause]) -> list[Finding]:
    out = []
    for i, c in enumerate(causes):
        n, lines, first = row[3 * i : 3 * i + 3]
        if n:
            text = c.message
            for name, x in first.items() if isinstance(first, dict) else [("v", first)]:
                text = text.replace("{" + name + "}", repr(x))
            lines_t = tuple(int(x) for x in lines)
            out.append(Finding(str(path), lines_t[0], c.field, c.code, text, c.severity, int(n), lines_t))
    return out


def counted(
    con: duckdb.DuckDBPyConnection,
    relation: str,
    where: str,
    value: str,
    path: Path,
    fld: str | None,
    code: str,
    message: str,
    severity: str = "error",
) -> list[Finding]:
    """One finding for every row of ``relation`` matching ``where`` (see ``counted_causes``)."""
    return counted_causes(con, relation, path, [Cause(where, value, fld, code, message, severity)])
