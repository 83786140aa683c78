"""Validation findings: each names the file, the line (or row) and the field, so a user can fix it at once."""

from __future__ import annotations

from dataclasses import dataclass

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
