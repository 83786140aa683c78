"""Hostile text from data files on every non-TUI surface: CSV cells never formulas and never control bytes,
terminal output never escape sequences nor rich markup, Markdown cells escaped, JUnit XML well-formed; every
output path checked; a neutralised pool still imports."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from ragtriage.csv_out import needs_quote
from ragtriage.notes import NotesStore, notes_path_for
from ragtriage.store import connect
from tests.factory import make_store

runner = CliRunner()

ESC_CLEAR = "\x1b[2J"
OSC8 = "\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07"
OSC52 = "\x1b]52;c;ZXZpbA==\x07"
RLO = "\u202e"
MARKUP = "[bold]x[/]"
HOSTILE = [ESC_CLEAR, OSC8, OSC52, RLO + "abc", MARKUP, '=HYPERLINK("http://evil")', "=cmd|' /C calc'!A0", "＝1+1"]
# case ids a spreadsheet would run, ids with escapes, markup and a bidi override, and a 10,000-character id
IDS = ["=q1", "q2" + ESC_CLEAR, "[bold]q3[/]", "q4" + RLO, "+q5", "@q6", "-q7", "q" * 10_000]
# every control character but LF and CR (the line structure of a text output)
RAW_CONTROL = re.compile("[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _store(tmp_path: Path) -> Path:
    cases = [
        {"id": cid, "query": HOSTILE[i % len(HOSTILE)], "principal": {"id": "u", "groups": ["staff"]}}
        for i, cid in enumerate(IDS)
    ]
    documents = [
        {"document_id": f"d{i}", "chunk_id": f"-c{i}" if i % 2 else f"@c{i}", "title": HOSTILE[i % len(HOSTILE)]}
        | {"acl": ["staff"] if i % 3 else ["secret"], "doc_type": "=type" if i % 2 else "table"}
        for i in range(8)
    ]
    labels = [
        {"case_id": cid, "document_id": f"d{i}", "chunk_id": documents[i]["chunk_id"], "grade": 3, "note": OSC52}
        for i, cid in enumerate(IDS)
    ]
    labels += [  # a second annotator disagreeing by 3 grades: adjudicate has work
        {**lab, "annotator": "=bob", "grade": 0} for lab in labels[:4]
    ]

    def results(shift: int) -> list[dict[str, object]]:
        return [
            {
                "case_id": cid,
                "document_id": f"d{(i + j + shift) % 8}",
                "chunk_id": documents[(i + j + shift) % 8]["chunk_id"],
                "score": 1.0 - j / 10,
                "snippet": HOSTILE[j % len(HOSTILE)],
            }
            for i, cid in enumerate(IDS)
            for j in range(3)
        ]

    runs = [
        {"run": {"run_id": "base", "k": 3}, "results": results(0)},
        {"run": {"run_id": "cand", "k": 3}, "results": results(1)},
    ]
    make_store(
        tmp_path, cases=cases, labels=labels, documents=documents, runs=runs, db="h.duckdb", allow_control_ids=True
    ).close()
    db = tmp_path / "h.duckdb"
    NotesStore(notes_path_for(db)).set(
        "cand", "=q1", category="ranking", status="open", note=OSC8 + MARKUP, author="=me"
    )
    return db


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _store(tmp_path_factory.mktemp("hostile"))


def _run(*args: object) -> str:
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code in (0, 1), res.output
    return res.output


def _assert_inert(text: str) -> None:
    assert RAW_CONTROL.search(text) is None, repr(RAW_CONTROL.search(text))


def _assert_safe_csv(text: str) -> list[dict[str, str]]:
    _assert_inert(text)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows, "expected rows"
    risky = [c for r in rows for c in r.values() if c and needs_quote(c)]
    assert risky == []
    return rows


GATE = '[gate]\nname = "g"\n[[regression]]\nmetric = "R@3"\ntolerance = 0.0\n'


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--run", "cand", "--format", "csv"],
        ["failures", "--run", "cand", "--format", "csv"],
        ["failures", "--run", "cand", "--format", "csv", "--summary"],
        ["metrics", "--run", "cand", "--per-case", "--format", "csv", "--k", "3"],
        ["metrics", "--run", "cand", "--by", "doc_type", "--format", "csv", "--k", "3"],
        ["compare", "--run", "cand", "--baseline", "base", "--by", "doc_type", "--format", "csv", "--k", "3"],
    ],
)
@pytest.mark.slow
def test_every_csv_on_stdout_has_no_formula_and_no_control(db: Path, args: list[str]) -> None:
    _assert_safe_csv(_run(*args, "--db", db))


def test_check_csv_keeps_hostile_ids_visible_but_inert(db: Path) -> None:
    rows = _assert_safe_csv(_run("check", "--run", "cand", "--format", "csv", "--db", db))
    ids = {r["case_id"] for r in rows}
    assert "'=q1" in ids and "q2␛[2J" in ids and "'+q5" in ids


@pytest.mark.parametrize(
    "args",
    [
        ["info"],
        ["info", "--warnings"],
        ["check", "--run", "cand", "--limit", "0"],
        ["failures", "--run", "cand"],
        ["metrics", "--run", "cand", "--per-case", "--k", "3"],
        ["metrics", "--run", "cand", "--by", "doc_type", "--k", "3"],
        ["compare", "--run", "cand", "--baseline", "base", "--by", "doc_type", "--k", "3"],
        ["agreement"],
        ["dataset", "check"],
    ],
)
@pytest.mark.slow
def test_terminal_output_shows_escapes_and_markup_literally(db: Path, args: list[str]) -> None:
    out = _run(*args, "--db", db)
    _assert_inert(out)
    if args[0] in ("check", "failures", "metrics") and "--by" not in args:
        assert "[bold]q3[/]" in out and "q2␛[2J" in out


@pytest.mark.parametrize(
    "args",
    [
        ["metrics", "--run", "cand", "--per-case", "--format", "markdown", "--k", "3"],
        ["compare", "--run", "cand", "--baseline", "base", "--by", "doc_type", "--format", "markdown", "--k", "3"],
    ],
)
@pytest.mark.slow
def test_markdown_escapes_cells(db: Path, args: list[str]) -> None:
    out = _run(*args, "--db", db)
    _assert_inert(out)
    width = None
    for line in out.splitlines():
        if not line.startswith("|"):
            width = None  # the next table starts
            continue
        cells = len(re.split(r"(?<!\\)\|", line)) - 2
        width = width or cells
        assert cells == width, line  # no data cell split its row
    assert "\\[bold\\]q3\\[/\\]" in out or "--by" in args


@pytest.mark.slow
def test_gate_reports_are_inert_and_well_formed(db: Path, tmp_path: Path) -> None:
    gate = tmp_path / "g.toml"
    gate.write_text(GATE)
    junit, md, js = tmp_path / "g.xml", tmp_path / "g.md", tmp_path / "g.json"
    base = ["gate", "--db", db, "--gate", gate, "--run", "cand", "--baseline", "base", "--no-record"]
    out = _run(*base, "--junit", junit, "--markdown", md, "--json", js)
    _assert_inert(out)
    root = ET.parse(junit).getroot()  # parses: no control character made it invalid XML
    text = ET.tostring(root, encoding="unicode")
    assert "q2␛[2J" in text and "\x1b" not in text
    markdown = md.read_text(encoding="utf-8")
    _assert_inert(markdown)
    assert "\\[bold\\]q3\\[/\\]" in markdown and "[bold]" not in markdown
    assert json.loads(js.read_text())["run_id"] == "cand"  # JSON keeps the stored value (escaped by JSON itself)


@pytest.mark.slow
def test_gate_refuses_to_overwrite_without_force(db: Path, tmp_path: Path) -> None:
    gate = tmp_path / "g.toml"
    gate.write_text(GATE)
    junit = tmp_path / "old.xml"
    junit.write_text("keep")
    base = ["gate", "--db", str(db), "--gate", str(gate), "--run", "cand", "--baseline", "base", "--no-record"]
    res = runner.invoke(app, [*base, "--junit", str(junit)])
    assert res.exit_code == 2 and "exists; pass --force" in res.output and junit.read_text() == "keep"
    for target in (db, Path(f"{db}.notes.sqlite")):
        before = target.read_bytes()
        res = runner.invoke(app, [*base, "--markdown", str(target), "--force"])
        assert res.exit_code == 2 and target.read_bytes() == before
    res = runner.invoke(app, [*base, "--junit", str(junit), "--force"])
    assert res.exit_code == 1 and junit.read_text().startswith("<?xml")


@pytest.mark.slow
@pytest.mark.parametrize("command", ["export-notes", "pool", "adjudicate"])
def test_file_outputs_refuse_the_store_its_notes_and_existing_files(db: Path, tmp_path: Path, command: str) -> None:
    flag = "--csv" if command == "export-notes" else "--out"
    extra = ["--runs", "cand"] if command == "pool" else []
    existing = tmp_path / "old.csv"
    existing.write_text("keep")
    for target in (db, Path(f"{db}.notes.sqlite"), existing):
        before = target.read_bytes()
        res = runner.invoke(app, [command, "--db", str(db), flag, str(target), *extra])
        assert res.exit_code == 2, res.output
        assert target.read_bytes() == before
    res = runner.invoke(app, [command, "--db", str(db), flag, str(existing), *extra, "--force"])
    assert res.exit_code == 0, res.output
    _assert_safe_csv(existing.read_text(encoding="utf-8"))


def test_export_notes_csv_is_inert(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "n.csv"
    assert runner.invoke(app, ["export-notes", "--db", str(db), "--csv", str(out), "--run", "cand"]).exit_code == 0
    rows = _assert_safe_csv(out.read_text(encoding="utf-8"))
    mine = next(r for r in rows if r["case_id"] == "'=q1")
    assert mine["note"] == "␛]8;;http://evil.example/␇click␛]8;;␇[bold]x[/]" and mine["author"] == "'=me"


@pytest.mark.slow
def test_pool_round_trips_through_import_labels(tmp_path: Path) -> None:
    db = _store(tmp_path)
    pool = tmp_path / "pool.csv"
    assert runner.invoke(app, ["pool", "--db", str(db), "--runs", "cand,base", "--out", str(pool)]).exit_code == 0
    text = pool.read_text(encoding="utf-8")
    rows = _assert_safe_csv(text)
    assert any(r["case_id"] == "'=q1" for r in rows) and any(r["unit_id"].startswith("'-c") for r in rows)
    for r in rows:
        r["grade"] = "2"
    filled = tmp_path / "filled.csv"
    with filled.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    res = runner.invoke(app, ["import-labels", str(filled), "--db", str(db), "--annotator", "ann"])
    assert res.exit_code == 0, res.output
    con = connect(db, read_only=True)
    got = con.execute(
        "SELECT case_id, unit_id FROM labels WHERE annotator = 'ann' AND case_id IN ('=q1', '+q5', '@q6', '-q7')"
    ).fetchall()
    con.close()
    assert {c for c, _ in got} >= {"=q1", "+q5", "-q7"}
    assert all(u.startswith(("-c", "@c")) for _, u in got)


def test_html_text_is_inert() -> None:
    from ragtriage.safe_text import html_text

    shown = html_text('<script>alert(1)</script>\x1b[2J"' + RLO + "\nnext")
    assert shown == "&lt;script&gt;alert(1)&lt;/script&gt;␛[2J&quot;\\u202e\nnext"
