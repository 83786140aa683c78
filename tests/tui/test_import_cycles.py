"""No import circle inside ``ragtriage.tui`` or ``ragtriage.cli``: a module never imports, directly or through
others of its package, a module that imports it back. Every import statement counts, wherever it is written
(inside a function, or under ``TYPE_CHECKING``), as grimp and import-linter count them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ragtriage

ROOT = Path(ragtriage.__file__).parent


def modules(package: str) -> dict[str, Path]:
    """Every module of ``ragtriage.<package>``, by dotted name."""
    out = {}
    for path in (ROOT / package).rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imported(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules of ``known`` that the module at ``path`` imports (``from a import b`` is ``a.b`` when that is a
    module, else ``a``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {m for m in found if m in known and m != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return out


@pytest.mark.parametrize("package", ["tui", "cli"])
def test_no_import_circle(package: str) -> None:
    found = modules(package)
    graph = {name: imported(path, name, set(found)) for name, path in found.items()}
    assert cycles(graph) == []


def test_the_detector_finds_a_circle() -> None:
    """The test above can fail: a circle of three and a self-standing module."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_imports_are_read_from_functions_and_type_checking(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.app import App\n"
        "def f():\n    from pkg.screens import base\n",
        encoding="utf-8",
    )
    known = {"pkg.app", "pkg.screens", "pkg.screens.base", "pkg.m"}
    assert imported(source, "pkg.m", known) == {"pkg.app", "pkg.screens.base"}


@pytest.mark.slow
def test_screens_reach_the_app_through_the_typed_protocol(db_path: Path) -> None:
    """``host`` accepts the triage app and refuses another; no module of ``tui/`` silences the type checker on
    ``self.app``."""
    from textual.app import App

    from ragtriage.tui.app import TriageApp
    from ragtriage.tui.host import host

    app = TriageApp(db_path, "bm25", "hybrid", author="t")
    assert host(app) is app
    with pytest.raises(TypeError, match="triage app's protocol"):
        host(App())
    for path in (ROOT / "tui").rglob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            assert not ("app" in line and "type: ignore" in line), (path.name, line)
