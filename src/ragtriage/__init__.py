"""ragtriage: judge retrieval alone, and say why it failed."""

from __future__ import annotations

from typing import Any

__all__ = ["__version__", "evaluate"]


def __getattr__(name: str) -> Any:
    """``ragtriage.evaluate`` (see ``ragtriage.evaluation``), imported on first use so that ``import ragtriage``
    and the CLI's start-up stay free of DuckDB and pyarrow."""
    if name == "__version__":
        globals()["__version__"] = _installed_version()
        return globals()["__version__"]
    if name == "evaluate":
        from ragtriage.evaluation import evaluate

        globals()["evaluate"] = evaluate
        return evaluate
    raise AttributeError(f"module 'ragtriage' has no attribute {name!r}")


def _installed_version() -> str:
    """pyproject.toml's version as the installed package records it (CHANGELOG.md's top release agrees; a test
    holds the three equal); read on first use, because importlib.metadata is a cost ``import ragtriage`` need not
    pay."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ragtriage")
    except PackageNotFoundError:  # a source tree on sys.path without being installed
        return "0+unknown"
