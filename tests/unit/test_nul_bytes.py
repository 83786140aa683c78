"""A NUL byte is refused the same way in every text input (``contract/compression.py``): each reader format, plain
and compressed, on a data line, a header or a comment, gets exit 2 and one message naming the file, the line and
the field, and the store is left as it was. (Before, only compressed files were refused: a NUL in the header of a
plain BEIR qrels file loaded, and one in an id loaded under ``--allow-control-ids``.)"""

from __future__ import annotations

import bz2
import gzip
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from ragtriage.cli import app
from tests.bad_inputs import digest, make_base, no_traceback

RUN = b"q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\n"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return make_base(tmp_path_factory.mktemp("nul"))


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def _nul_at(data: bytes, line: int, marker: bytes) -> bytes:
    """``data`` with a NUL put right after the first ``marker`` of 1-based ``line``."""
    lines = data.split(b"\n")
    assert marker in lines[line - 1], (marker, lines[line - 1])
    lines[line - 1] = lines[line - 1].replace(marker, marker + b"\0", 1)
    return b"\n".join(lines)


Command = Callable[[Path, Path], Result]  # (store, file) -> result


def load(*option: str) -> Command:
    def run(db: Path, f: Path) -> Result:
        return invoke("load", "--db", db, *[f if o == "FILE" else o for o in option], "--no-precompute")

    return run


def topics(db: Path, f: Path) -> Result:
    qrels = f.parent / "q.txt"
    qrels.write_bytes(b"q1 0 d1 2\nq2 0 d1 1\n")
    return invoke("load", "--db", db, "--qrels", qrels, "--topics", f, "--no-precompute")


# reader: (file name, content, line, field the finding names, command)
FLAT: dict[str, tuple[str, bytes, int, str, Command]] = {
    "trec-run": ("run.txt", _nul_at(RUN, 2, b"d"), 2, "column 3",
                 load("--run", "FILE", "--run-id", "x", "--allow-control-ids")),
    "trec-run comment": ("run.txt", b"# made by\0 bm25\n" + RUN, 1, "column 3", load("--run", "FILE", "--run-id", "x")),
    "msmarco-run": ("run.tsv", b"q1\td1\t1\nq2\td\x001\t1\n", 2, "column 2",
                    load("--run", "FILE", "--run-id", "x", "--format", "msmarco")),
    "json-run": ("run.json", b'{"q1": {"d1": 1.0, "d\x002": 0.5}}', 1, "d␀2", load("--run", "FILE", "--run-id", "x")),
    "trec-qrels": ("qrels.txt", b"q1 0 d1 2\nq2 0 d1\x00 1\n", 2, "column 3", load("--qrels", "FILE")),
    "beir-qrels header": ("qrels.tsv", b"query-id\tcorpus\x00-id\tscore\nq1\td1\t2\n", 1, "column 2",
                          load("--qrels", "FILE")),
    "beir-qrels": ("qrels.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\t2\x00\n", 2, "column 3", load("--qrels", "FILE")),
    "json-qrels": ("qrels.json", b'{"q1": {"d1": 2},\n "q2": {"d1": 1\x00}}', 2, "d1", load("--qrels", "FILE")),
    "tsv-topics": ("topics.tsv", b"q1\tfirst query\nq2\tsecond\x00 query\n", 2, "column 2", topics),
    "trec-topics": ("topics.txt", b"<top>\n<num> Number: q1\n<title> a\x00 query\n</top>\n", 3, "column 2", topics),
    "import-labels csv": ("labels.csv", b"case_id,unit_id,grade\nq1,d\x001,2\n", 2, "column 2",
                          lambda db, f: invoke("import-labels", f, "--annotator", "a", "--db", db)),
    "gate toml": ("gate.toml", b"[latency]\np95_ms = 5\x00\n", 2, "key 'p95_ms'",
                  lambda db, f: invoke("gate", "--db", db, "--gate", f, "--run", "no-acl-filter", "--baseline",
                                       "no-acl-filter", "--no-record")),
}  # fmt: skip
COMPRESSIONS = {"plain": (lambda b: b, ""), "gzip": (gzip.compress, ".gz"), "bz2": (bz2.compress, ".bz2")}
COMPRESSIBLE = {"trec-run", "msmarco-run", "trec-qrels", "beir-qrels header", "beir-qrels", "tsv-topics", "trec-topics"}


def _refused(res: Result, db: Path, before: object, where: str) -> None:
    assert no_traceback(res), res.exception
    assert res.exit_code == 2, res.output
    assert f"{where}: a NUL byte in" in res.output, res.output
    assert res.output.count("a NUL byte") == 1, res.output  # once per cause
    assert digest(db) == before


@pytest.mark.parametrize("comp", sorted(COMPRESSIONS))
@pytest.mark.parametrize("reader", sorted(FLAT))
def test_every_flat_reader_refuses_a_nul_naming_file_line_and_field(
    base: tuple[Path, Path, Path], tmp_path: Path, reader: str, comp: str
) -> None:
    if comp != "plain" and reader not in COMPRESSIBLE:
        pytest.skip("this reader takes no compressed file")
    name, content, line, field, command = FLAT[reader]
    pack, suffix = COMPRESSIONS[comp]
    db = Path(shutil.copy(base[2], tmp_path / "store.duckdb"))
    f = tmp_path / (name + suffix)
    f.write_bytes(pack(content))
    before = digest(db)
    where = f"{f.name}:{line}: {field}" if reader != "gate toml" else f"{f.name}:{line}"
    res = command(db, f)
    _refused(res, db, before, where)
    if reader == "gate toml":
        assert field in res.output


# folder tables (JSONL): (folder, file, line, marker after which the NUL goes, field)
FOLDERS = {
    "cases.jsonl": ("dataset", "cases.jsonl", 2, b'"query": "', "query"),
    "labels.jsonl": ("dataset", "labels.jsonl", 1, b'"chunk_id": "', "chunk_id"),
    "documents.jsonl": ("dataset", "documents.jsonl", 3, b'"text": "', "text"),
    "dataset.json": ("dataset", "dataset.json", 1, b"{", None),
    "results.jsonl": ("run", "results.jsonl", 3, b'"chunk_id": "', "chunk_id"),
    "events.jsonl": ("run", "events.jsonl", 1, b'"case_id": "', "case_id"),
    "run.json": ("run", "run.json", 1, b"{", None),
}


@pytest.mark.parametrize("table", sorted(FOLDERS))
def test_every_folder_table_refuses_a_nul_on_load_and_validate(
    base: tuple[Path, Path, Path], tmp_path: Path, table: str
) -> None:
    ds, run, store = base
    kind, name, line, marker, field = FOLDERS[table]
    folder = Path(shutil.copytree(ds if kind == "dataset" else run, tmp_path / kind))
    f = folder / name
    f.write_bytes(_nul_at(f.read_bytes(), line, marker))
    db = Path(shutil.copy(store, tmp_path / "store.duckdb"))
    before = digest(db)
    where = f"{name}:{line}: {field}" if field else f"{name}:{line}"
    res = invoke("load", "--db", db, "--dataset" if kind == "dataset" else "--run", folder, "--no-precompute")
    _refused(res, db, before, where)
    res = invoke("validate", f)
    assert res.exit_code == 2 and f"{where}: a NUL byte in" in res.output, res.output
