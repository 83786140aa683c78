"""Every command that can write to a store checks its arguments before its first write: a refused argument exits 2
with a message naming it, and the store's files (the database, its WAL, its notes) keep every byte. The store is
loaded with ``--no-precompute``, so a command that classifies before it reads (report, compare, gate, failures)
would write classification rows if it checked its arguments only afterwards."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from tests.bad_inputs import no_traceback
from tests.unit.test_fail_closed_inputs import QRELS, RUN, TOPICS, _write

runner = CliRunner()
OTHER_RUN = "q1 Q0 d2 1 3.0 t\nq1 Q0 d1 2 2.0 t\nq2 Q0 d3 1 1.0 t\n"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("refusals")
    db = root / "base.duckdb"
    res = runner.invoke(app, ["load", "--db", str(db), "--qrels", str(_write(root / "q.txt", QRELS)), "--topics",
                              str(_write(root / "t.tsv", TOPICS)), "--run", str(_write(root / "r.txt", RUN)),
                              "--run-id", "r", "--run", str(_write(root / "r2.txt", OTHER_RUN)), "--run-id", "r2",
                              "--no-precompute"])  # fmt: skip
    assert res.exit_code == 0, res.output
    return db


def _files(db: Path) -> dict[str, str]:
    """The SHA-256 of every file of the store (database, WAL, notes) that exists."""
    out = {}
    for path in sorted(db.parent.glob(db.name + "*")):
        out[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


GATE = '[gate]\nname = "release"\n'
#: (command and its refused argument, a word the refusal must hold)
REFUSED = [
    (["report", "--runs", "r2", "--baseline", "r", "--measure", "R@", "--html", "{tmp}/r.html"], "R@"),
    (["report", "--runs", "r2", "--baseline", "r", "--alpha", "2", "--html", "{tmp}/r.html"], "--alpha"),
    (["report", "--runs", "r2", "--baseline", "r", "--resamples", "0", "--html", "{tmp}/r.html"], "--resamples"),
    (["compare", "--runs", "r2", "--baseline", "r", "--measure", "nDCG@x", "--categories"], "nDCG@x"),
    (["compare", "--runs", "r2", "--baseline", "r", "--alpha", "0", "--categories"], "--alpha"),
    (["compare", "--run", "r2", "--baseline", "r", "--metric", "R@", "--gate", "{tmp}/gate.toml"], "R@"),
    (["gate", "--gate", "{tmp}/missing.toml", "--run", "r2", "--baseline", "r"], "missing.toml"),
    (["compare", "--run", "r2", "--baseline", "r", "--alpha", "nan"], "--alpha"),
    (["dataset", "check", "--jaccard", "nan"], "--jaccard"),
    (["dataset", "check", "--span", "0"], "--span"),
    (["failures", "--run", "r", "--category", "nope"], "nope"),
    (["failures", "--run", "r", "--k", "0"], "--k"),
    (
        ["judge", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--calibrate", "4", "--concurrency", "0"],
        "--concurrency",
    ),  # fmt: skip
    (
        ["judge", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--calibrate", "4", "--timeout", "0"],
        "--timeout",
    ),  # fmt: skip
    (["judge", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--calibrate", "0"], "--calibrate"),
    (["judge", "--endpoint", "ftp://x/v1", "--model", "m", "--calibrate", "4"], "--endpoint"),
    (
        [
            "judge",
            "--endpoint",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--calibrate",
            "4",
            "--api-key-env",
            "RAGTRIAGE_NOT_SET_X",
        ],
        "RAGTRIAGE_NOT_SET_X",
    ),  # fmt: skip
    (
        ["judge", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--calibrate", "4", "--min-kappa", "nan"],
        "--min-kappa",
    ),  # fmt: skip
    (["calibrate", "--run", "r", "--target-recall", "0"], "--target-recall"),
    (["calibrate", "--run", "r", "--target-recall", "1.5"], "--target-recall"),
    (["import-labels", "{tmp}/labels.csv", "--annotator", "a", "--depth", "0", "--runs", "r"], "--depth"),
    (["load", "--run", "{tmp}/r.txt", "--run-id", "x", "--grade-map", "2=>1"], "--grade-map"),
]


@pytest.mark.parametrize(("args", "needle"), REFUSED, ids=[" ".join(a[:1] + a[-2:]) for a, _ in REFUSED])
def test_a_refused_argument_leaves_every_byte_of_the_store(
    base: Path, tmp_path: Path, args: list[str], needle: str
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    db = Path(shutil.copy(base, store / "s.duckdb"))
    _write(tmp_path / "gate.toml", GATE)
    _write(tmp_path / "r.txt", RUN)
    _write(tmp_path / "labels.csv", "case_id,unit_id,grade\nq1,d1,1\n")
    before = _files(db)
    res = runner.invoke(app, [a.replace("{tmp}", str(tmp_path)) for a in args] + ["--db", str(db)])
    assert res.exit_code == 2, res.output
    assert no_traceback(res) and needle in res.output, res.output
    assert _files(db) == before
    assert not (tmp_path / "r.html").exists()
