"""Draw the layer order into docs/ARCHITECTURE.md from the one place it is written: the first ``layers`` contract
of ``[tool.importlinter]`` in pyproject.toml, which ``lint-imports`` enforces.

    python scripts/layers_doc.py           # rewrite the drawing between the markers in docs/ARCHITECTURE.md
    python scripts/layers_doc.py --check   # exit 1 when the drawing differs from pyproject's order

tests/unit/test_layers_doc.py runs the check, so a layer moved in pyproject without a redrawn page fails the suite.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
DOC = ROOT / "docs" / "ARCHITECTURE.md"
BEGIN = "<!-- layers: drawn by scripts/layers_doc.py from pyproject.toml; do not edit by hand -->"
END = "<!-- /layers -->"


def layers(pyproject: Path = PYPROJECT) -> list[list[str]]:
    """pyproject's layer order, top (imports the most) first; each layer its sibling modules, ``ragtriage.`` cut."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    return [[m.strip().removeprefix("ragtriage.") for m in layer.split("|")] for layer in contract["layers"]]


def drawing(order: list[list[str]]) -> str:
    """The layers as a column, top first, an arrow from each to the one below it (what it may import); siblings
    share a row and import nothing of each other."""
    rows = ["  |  ".join(layer) for layer in order]
    width = max(len(r) for r in rows)
    lines = ["```text"]
    for i, row in enumerate(rows):
        lines.append(row.center(width).rstrip())
        if i < len(rows) - 1:
            lines.append("↓".center(width).rstrip())
    lines.append("```")
    return "\n".join(lines)


def rendered(doc: str, order: list[list[str]]) -> str:
    """``doc`` with the text between the markers replaced by the drawing of ``order``."""
    head, sep, rest = doc.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise SystemExit(f"{DOC}: the markers {BEGIN!r} … {END!r} are missing")
    return f"{head}{BEGIN}\n{drawing(order)}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the drawing is out of date")
    args = parser.parse_args()
    doc = DOC.read_text(encoding="utf-8")
    new = rendered(doc, layers())
    if args.check:
        if new != doc:
            print(f"{DOC} does not draw pyproject.toml's layers: run python scripts/layers_doc.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
