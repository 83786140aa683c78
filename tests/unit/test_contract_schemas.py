"""The shipped JSON Schemas are the ones the field specs generate, and the core stays free of UI libraries."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import ragtriage.annotate
import ragtriage.app
import ragtriage.checks
import ragtriage.classify
import ragtriage.contract
import ragtriage.gate
import ragtriage.judge
import ragtriage.metrics
import ragtriage.notes
import ragtriage.record
import ragtriage.store
from ragtriage.contract.fields import TABLES
from ragtriage.contract.schemas import schema_text, shipped_schema


def test_shipped_schemas_match_field_specs() -> None:
    for name in TABLES:
        assert shipped_schema(name) == json.loads(schema_text(name)), f"regenerate {name}.schema.json"
    assert shipped_schema("labels")["required"] == ["case_id", "document_id", "grade"]
    stage = shipped_schema("results")["properties"]["stage"]  # type: ignore[index]
    assert stage["anyOf"][0]["enum"] == ["candidate", "final"]  # type: ignore[index]


CORE = (
    ragtriage.contract,
    ragtriage.store,
    ragtriage.metrics,
    ragtriage.checks,
    ragtriage.classify,
    ragtriage.gate,
    ragtriage.notes,
    ragtriage.annotate,
    ragtriage.record,
    ragtriage.judge,
    ragtriage.app,  # the use cases; app.render (every output format) is the one part that draws with rich
)


@pytest.mark.slow
def test_core_imports_without_typer_or_textual() -> None:
    """Every module of the core packages, imported by a plain ``import`` statement in a fresh interpreter where
    typer, textual and rich cannot be imported."""
    modules = [
        info.name
        for pkg in CORE
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")
        if not info.name.endswith("__main__") and not info.name.startswith("ragtriage.app.render.")
    ]
    assert len(modules) > len(CORE)
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('typer', 'textual', 'rich'):\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        + "".join(f"import {pkg.__name__}\n" for pkg in CORE)
        + "".join(f"import {name}\n" for name in modules)
        + "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
