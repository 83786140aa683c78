"""The shipped JSON Schemas are the ones the field specs generate, and the core stays free of UI libraries."""

from __future__ import annotations

import json
import subprocess
import sys

from ragtriage.contract.fields import TABLES
from ragtriage.contract.schemas import schema_text, shipped_schema


def test_shipped_schemas_match_field_specs() -> None:
    for name in TABLES:
        assert shipped_schema(name) == json.loads(schema_text(name)), f"regenerate {name}.schema.json"
    assert shipped_schema("labels")["required"] == ["case_id", "document_id", "grade"]
    stage = shipped_schema("results")["properties"]["stage"]  # type: ignore[index]
    assert stage["anyOf"][0]["enum"] == ["candidate", "final"]  # type: ignore[index]


def test_core_imports_without_typer_or_textual() -> None:
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('typer', 'textual', 'rich'):\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import importlib, pkgutil, ragtriage\n"
        "for pkg in ('contract', 'store', 'metrics', 'checks', 'classify', 'gate', 'notes', 'annotate', 'record'):\n"
        "    mod = importlib.import_module('ragtriage.' + pkg)\n"
        "    for info in pkgutil.walk_packages(mod.__path__, mod.__name__ + '.'):\n"
        "        if not info.name.endswith('__main__'):\n"
        "            importlib.import_module(info.name)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
