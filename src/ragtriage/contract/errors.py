"""Validation findings: each names the file, the line (or row) and the field, so a user can fix it at once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MAX_REPORTED = 50


@dataclass(frozen=True)
class Finding:
    file: str
    line: int | None
    field: str | None
    code: str
    message: str
    severity: str = "error"  # error | warning

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
        if self.field:
            where += f": {self.field}"
        return f"{where}: {self.message}"


class ValidationFailed(Exception):
    """Raised with every error found (up to MAX_REPORTED); nothing was written."""

    def __init__(self, errors: list[Finding], total: int | None = None) -> None:
        ordered = sorted(errors, key=lambda e: (e.file, e.line if e.line is not None else -1, e.field or ""))
        self.errors = ordered[:MAX_REPORTED]
        self.total = total if total is not None else len(errors)
        more = f" (showing the first {len(self.errors)})" if self.total > len(self.errors) else ""
        lines = "\n".join(f"  {e}" for e in self.errors)
        super().__init__(f"{self.total} validation error(s){more}; nothing was loaded:\n{lines}")


def path_findings(path: Path) -> list[Finding]:
    """What keeps ``path`` from being read as a file, named for what it is (empty when it can be opened)."""
    f = str(path)
    if path.is_dir():
        return [Finding(f, None, None, "unreadable", "is a directory, not a file")]
    if not path.exists():
        if path.is_symlink():
            return [Finding(f, None, None, "unreadable", "is a broken or self-referencing symbolic link")]
        return [Finding(f, None, None, "missing-file", "no such file")]
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        return [Finding(f, None, None, "unreadable", f"cannot be read ({exc.strerror or exc})")]
    return []
