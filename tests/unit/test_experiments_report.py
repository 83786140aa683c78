"""`ragtriage report` on a small hand-built store with hostile strings: every table parsed back from the HTML
(html.parser) and checked against figures worked out by hand; nothing a data file holds becomes markup, a
terminal escape or a network reference; existing files are not overwritten without --force."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from tests.factory import make_store

runner = CliRunner()
EVIL_TYPE = "\x1b[2J<script>alert(1)</script>"
EVIL_RETRIEVER = "<img src=x onerror=alert(1)>\u202e|x|"


class Tables(HTMLParser):
    """Every <table> as a list of rows of cell texts; also collects tag names seen."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.tags: set[str] = set()
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _parsed(path: Path) -> tuple[str, Tables]:
    text = path.read_text(encoding="utf-8")
    parser = Tables()
    parser.feed(text)
    return text, parser


def _case(cid: str, qtype: str) -> dict[str, object]:
    return {"id": cid, "query": f"query {cid}", "split": "holdout", "query_type": qtype}


def _res(case: str, doc: str) -> dict[str, object]:
    return {"case_id": case, "document_id": doc, "chunk_id": f"{doc}#1", "stage": "final", "score": 1.0}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    # Four cases, one relevant unit each (R1..R4). base finds R1, R2 at rank 1; cand finds all four at rank 1.
    cases = [_case("c1", "direct"), _case("c2", "direct"), _case("c3", EVIL_TYPE), _case("c4", EVIL_TYPE)]
    labels = [{"case_id": f"c{i}", "document_id": f"R{i}", "chunk_id": f"R{i}#1", "grade": 3} for i in range(1, 5)]
    docs = [{"document_id": d, "chunk_id": f"{d}#1", "text": d} for d in ("R1", "R2", "R3", "R4", "X")]
    docs[-1]["acl"] = ["staff"]  # an access rule exists, so leakage applies, and no case has a principal
    base = [_res("c1", "R1"), _res("c2", "R2"), _res("c3", "X"), _res("c4", "X")]
    cand = [_res(f"c{i}", f"R{i}") for i in range(1, 5)]
    con = make_store(
        tmp_path,
        cases=cases,
        labels=labels,
        documents=docs,
        runs=[
            {"run": {"run_id": "base", "k": 10, "system": {"retriever": "bm25"}}, "results": base},
            {"run": {"run_id": "cand", "k": 10, "system": {"retriever": EVIL_RETRIEVER}}, "results": cand},
        ],
    )
    con.close()
    return tmp_path / "store.duckdb"


def _report(store: Path, out: Path, *extra: str) -> object:
    args = ["report", "--db", str(store), "--runs", "cand", "--baseline", "base", "--measure", "R@10"]
    return runner.invoke(app, [*args, "--measure", "P@1", "--html", str(out), *extra])


@pytest.mark.slow
def test_html_tables_parse_back_to_the_hand_figures(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    res = _report(store, out)
    assert res.exit_code == 0, res.output
    text, parser = _parsed(out)
    main, config, by_slice, categories = parser.tables[:4]
    header = main[0]
    # no case has a principal: neither run's leakage could be checked, and each run cell says so before any figure
    assert {r[0] for r in main[1:]} == {"base ✗ NOT CHECKED", "cand ✗ NOT CHECKED"}
    assert (
        "✗ cand: leakage NOT CHECKED (no principal on all 4 case(s)): it cannot pass. Against base: better on" in text
    )
    rows = {(r[0].split(" ✗")[0], r[2]): dict(zip(header, r, strict=True)) for r in main[1:]}
    # R@10 and P@1: base 1, 1, 0, 0 (mean 0.5); cand 1 on every case (Δ +0.5, W/T/L 2/2/0). Two non-zero
    # differences: exact test over 4 sign vectors, only the identity reaches +0.5: p = 2 * 1/4 = 0.5;
    # Holm over 2 comparisons: 0.5 * 2 = 1.
    assert rows[("base", "R@10")]["mean"] == "0.5000"
    assert rows[("cand", "R@10")]["mean"] == "1.0000"
    assert rows[("cand", "R@10")]["Δ"] == "+0.5000"
    assert rows[("cand", "P@1")]["W/T/L"] == "2/2/0"
    assert rows[("cand", "R@10")]["p"] == "0.5000"
    assert rows[("cand", "R@10")]["p (Holm)"] == "1.0000"
    assert rows[("cand", "R@10")]["changed"] == "system.retriever"  # one variable: no warning
    assert config[1] == ["cand", "system.retriever", "bm25", "<img src=x onerror=alert(1)>\\u202e|x|"]
    # per slice, worst first: the hostile slice gains +1 (0 -> 1), direct gains nothing, so direct comes first
    assert [r[:2] for r in by_slice[1:3]] == [["R@10", "direct"], ["R@10", "␛[2J<script>alert(1)</script>"]]
    assert by_slice[2][3:] == ["0.0000", "1.0000", "+1.0000"]
    assert categories[0] == ["run", "category", "base", "run", "added", "fixed"]
    # the hostile strings are text, never markup or escapes
    assert "script" not in parser.tags and "img" not in parser.tags
    assert "\x1b" not in text and "\u202e" not in text
    # self-contained: nothing to fetch (the only URLs are the SVG and XLink namespace names)
    assert {u for u in re.findall(r"https?://[^\"' ]+", text)} <= {
        "http://www.w3.org/2000/svg",
        "http://www.w3.org/1999/xlink",
    }
    assert "<script" not in text and text.count("<svg") == 3


@pytest.mark.slow
def test_existing_output_needs_force(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    out.write_text("keep me", encoding="utf-8")
    res = _report(store, out)
    assert res.exit_code == 2 and "--force" in res.output
    assert out.read_text(encoding="utf-8") == "keep me"
    assert _report(store, out, "--force").exit_code == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert _report(store, store).exit_code == 2  # never the store itself, even with --force
    assert _report(store, store, "--force").exit_code == 2


@pytest.mark.slow
def test_markdown_report_writes_its_plots_beside_it(store: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    md = tmp_path / "r.md"
    args = ["report", "--db", str(store), "--runs", "cand", "--baseline", "base", "--markdown", str(md)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    text = md.read_text(encoding="utf-8")
    plots = sorted(p.name for p in (tmp_path / "r-plots").iterdir())
    assert len(plots) == 3 and all(f"](r-plots/{p})" in text for p in plots)
    assert "\x1b" not in text and "<script>" not in text and "&lt;script&gt;" in text
    for p in plots:
        svg = (tmp_path / "r-plots" / p).read_text(encoding="utf-8")
        assert svg.startswith("<svg") and "<script" not in svg and "\x1b" not in svg


@pytest.mark.slow
def test_without_matplotlib_the_report_keeps_every_table_and_says_how_to_get_plots(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtriage.app.render import charts

    monkeypatch.setattr(charts, "available", lambda: False)
    out = tmp_path / "r.html"
    res = _report(store, out)
    assert res.exit_code == 0, res.output
    text, parser = _parsed(out)
    # the four tables of the comparison and the cases per cause of its drops (none here: every count 0)
    assert len(parser.tables) == 5 and "<svg" not in text
    assert parser.tables[-1][0] == ["run", "measure", "labels", "ties", "miss", "unjudged", "rerank", "other"]
    assert "pip install &#x27;ragtriage[report]&#x27;" in text
