"""The layer order is written once (pyproject's import-linter contract) and drawn from it; every top-level module
stands in a layer; no modules import each other in a circle, imports inside functions included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import layers_doc  # noqa: E402

from tests.tui.test_import_cycles import cycles  # noqa: E402


def test_the_drawing_is_pyprojects_order() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "layers_doc.py"), "--check"], capture_output=True)
    assert done.returncode == 0, done.stderr.decode()


def test_the_drawing_follows_a_change_of_order() -> None:
    order = layers_doc.layers()
    doc = layers_doc.DOC.read_text(encoding="utf-8")
    swapped = [order[1], order[0], *order[2:]]
    assert layers_doc.rendered(doc, swapped) != doc
    drawn = layers_doc.drawing([["cli"], ["a", "b"]]).splitlines()
    assert [line.strip() for line in drawn] == ["```text", "cli", "↓", "a  |  b", "```"]


def test_every_top_level_module_stands_in_a_layer() -> None:
    named = {m for layer in layers_doc.layers() for m in layer}
    package = ROOT / "src" / "ragtriage"
    top = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    top |= {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert top - named == set(), "add these to the layers contract in pyproject.toml"
    assert named - top == set(), "the layers contract names modules that do not exist"


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("ragtriage", cache_dir=None)


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The circles of the whole package's graph, found by the TUI/CLI circle test's own Tarjan walk."""
    return cycles({m: graph.find_modules_directly_imported_by(m) for m in sorted(graph.modules)})


def test_no_import_circle_counting_imports_inside_functions(graph: grimp.ImportGraph) -> None:
    assert _circles(graph) == []


def test_a_function_level_import_is_counted(graph: grimp.ImportGraph) -> None:
    # cli/tui.py imports the store inside `tui`'s body as well as at the top: grimp reports the nested line too,
    # so a circle made only by such an import would be found
    lines = {
        d["line_contents"] for d in graph.get_import_details(importer="ragtriage.cli.tui", imported="ragtriage.store")
    }
    assert any("load_dataset" in line for line in lines)
    graph.add_import(importer="ragtriage.store.connection", imported="ragtriage.store.load")
    assert ["ragtriage.store.connection", "ragtriage.store.load"] in _circles(graph)
    graph.remove_import(importer="ragtriage.store.connection", imported="ragtriage.store.load")
