"""The package's version, at the bottom of the layers so that every layer may name it (stores, verdicts and
reports record which ragtriage wrote them) without importing the root package, whose ``ragtriage.evaluate``
reaches the store and the metrics.

pyproject.toml's version as the installed package records it (CHANGELOG.md's top release agrees; a test holds the
three equal), read on first use, because importlib.metadata is a cost ``import ragtriage`` need not pay.
"""

from __future__ import annotations


def installed_version() -> str:
    """The installed package's version, or ``0+unknown`` for a source tree on sys.path without being installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ragtriage")
    except PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str) -> str:
    if name == "__version__":
        globals()["__version__"] = installed_version()
        return str(globals()["__version__"])
    raise AttributeError(f"module 'ragtriage.version' has no attribute {name!r}")
