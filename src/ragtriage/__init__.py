"""ragtriage: judge retrieval alone, and say why it failed."""

from __future__ import annotations

from typing import Any

__all__ = ["__version__", "evaluate", "load_inputs", "load_store"]


def __getattr__(name: str) -> Any:
    """``ragtriage.evaluate`` (see ``ragtriage.app.evaluate``), ``ragtriage.load_inputs`` and ``load_store`` (a load
    as ``ragtriage load`` does it, see ``ragtriage.loading``), imported on first use so that ``import ragtriage``
    and the CLI's start-up stay free of DuckDB and pyarrow."""
    if name == "__version__":
        from ragtriage.version import installed_version

        globals()["__version__"] = installed_version()
        return globals()["__version__"]
    if name == "evaluate":
        from ragtriage.app.evaluate import evaluate

        globals()["evaluate"] = evaluate
        return evaluate
    if name in ("load_inputs", "load_store"):
        from ragtriage import loading

        globals()[name] = getattr(loading, name)
        return globals()[name]
    raise AttributeError(f"module 'ragtriage' has no attribute {name!r}")
