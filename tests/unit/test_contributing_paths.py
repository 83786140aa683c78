"""CONTRIBUTING.md's recipes name files and names that exist: a recipe pointing at a moved module or a renamed
table fails here, not in a newcomer's first hour."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
#: where a recipe's short path is read from: as written, under the package, under tests/ or docs/
BASES = (ROOT, ROOT / "src" / "ragtriage", ROOT / "tests", ROOT / "docs")


def _file(name: str) -> Path | None:
    """The file a recipe names: a path from one of :data:`BASES`, else a bare file name found under one of them
    (``trec.py`` beside ``contract/staging.py``)."""
    direct = next((b / name for b in BASES if (b / name).exists()), None)
    if direct is not None or "/" in name:
        return direct
    return next((p for b in BASES[1:] for p in b.rglob(name)), None)


def test_every_named_file_exists() -> None:
    named = set(re.findall(r"`([\w./-]+\.(?:py|md|toml))`", TEXT)) | set(re.findall(r"\]\(([\w./-]+\.md)\)", TEXT))
    assert named, "the recipes name no file"
    assert sorted(n for n in named if _file(n) is None) == []


def test_every_name_said_to_be_in_a_file_is_there() -> None:
    # "`SPECS` in `metrics/measures.py`", "`contract/errors.counted_causes`"
    pairs = re.findall(r"`(\w+)` in `([\w./-]+\.py)`", TEXT)
    pairs += [
        (attr, f"{mod}.py")
        for mod, attr in re.findall(r"`([\w/]+)\.(\w+)`", TEXT)
        if "/" in mod and attr not in ("py", "md")
    ]
    # "`metrics/measure_eval.py` (`_Sql.expr`)": the first name in the brackets after a file is defined there
    pairs += [(name.split(".")[0], path) for path, name in re.findall(r"`([\w./-]+\.py)` \(`([\w.]+)`", TEXT)]
    assert pairs, "the recipes name no definition"
    missing = []
    for name, path in pairs:
        found = _file(path)
        if found is None or not re.search(rf"\b{re.escape(name)}\b", found.read_text(encoding="utf-8")):
            missing.append(f"{name} in {path}")
    assert missing == []
