"""Commands of this area (filled in by its owner)."""

from __future__ import annotations

from ragtriage.cli._app import app  # noqa: F401
