"""JSON Schemas of every contract table, generated from ``contract/fields.py``.

Regenerate with ``python -m ragtriage.contract.schemas``.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from ragtriage.contract.fields import TABLES, json_schema


def schema_text(table: str) -> str:
    return json.dumps(json_schema(TABLES[table]), indent=2) + "\n"


def shipped_schema(table: str) -> dict[str, object]:
    text = resources.files(__package__).joinpath(f"{table}.schema.json").read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


def write_all(folder: Path) -> list[Path]:
    out = []
    for name in TABLES:
        p = folder / f"{name}.schema.json"
        p.write_text(schema_text(name), encoding="utf-8")
        out.append(p)
    return out
