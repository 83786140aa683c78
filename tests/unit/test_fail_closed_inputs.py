"""Inputs that used to change a stored value with no word (issue: fail closed): each is refused with exit 2 and a
message naming file, line and field, on a file store with the default memory cap, and the store is unchanged."""

from __future__ import annotations

import bz2
import gzip
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from ragtriage.cli import app
from tests.bad_inputs import digest, no_traceback

runner = CliRunner()
TOPICS = "q1\tfirst query\nq2\tsecond query\n"
QRELS = "q1 0 d1 1\nq1 0 d2 2\nq2 0 d1 2\n"
RUN = "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\nq2 Q0 d1 1 1.0 t\n"


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def invoke(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("base")
    db = root / "base.duckdb"
    res = invoke("load", "--db", db, "--qrels", _write(root / "qrels.txt", QRELS), "--topics",
                 _write(root / "topics.tsv", TOPICS), "--run", _write(root / "run.txt", RUN), "--run-id", "r",
                 "--no-precompute")  # fmt: skip
    assert res.exit_code == 0, res.output
    return db


@pytest.fixture
def db(base: Path, tmp_path: Path) -> Path:
    return Path(shutil.copy(base, tmp_path / "store.duckdb"))


def refused(res: Result, db: Path, before: dict[str, tuple[int, str]], *needles: str) -> None:
    assert res.exit_code == 2, res.output
    assert no_traceback(res) and "Traceback" not in res.output, res.output
    for needle in needles:
        assert needle in res.output, (needle, res.output)
    assert digest(db) == before


def _load_dataset(db: Path, qrels: Path, topics: Path) -> Result:
    return invoke("load", "--db", db, "--qrels", qrels, "--topics", topics, "--no-precompute")


@pytest.mark.parametrize("grade", ["1.5", "2.0", "1e0", "0x2"])
def test_trec_qrels_grade_must_be_an_integer(db: Path, tmp_path: Path, grade: str) -> None:
    before = digest(db)
    qrels = _write(tmp_path / "q.txt", f"q1 0 d1 {grade}\nq2 0 d1 2\n")
    res = _load_dataset(db, qrels, _write(tmp_path / "t.tsv", TOPICS))
    refused(res, db, before, f"q.txt:1: grade: relevance '{grade}' is not an integer")


def test_beir_qrels_fractional_grade_is_refused_not_taken_for_a_header(db: Path, tmp_path: Path) -> None:
    before = digest(db)
    qrels = _write(tmp_path / "qrels.tsv", "q1\td1\t1.5\nq2\td1\t2\n")
    res = _load_dataset(db, qrels, _write(tmp_path / "t.tsv", TOPICS))
    refused(res, db, before, "qrels.tsv:1: grade: relevance '1.5' is not an integer")


def test_duplicate_judgement_is_refused_naming_both_lines(db: Path, tmp_path: Path) -> None:
    before = digest(db)
    qrels = _write(tmp_path / "q.txt", "q1 0 d1 3\nq2 0 d1 2\nq1 0 d1 0\n")
    res = _load_dataset(db, qrels, _write(tmp_path / "t.tsv", TOPICS))
    refused(res, db, before, "q.txt:3: document_id: duplicate judgement (case / unit / annotator) q1 / d1 / default "
            "(first at line 1)")  # fmt: skip


def test_duplicate_judgement_in_contract_labels_is_refused(tmp_path: Path) -> None:
    from ragtriage.sample import sample_runs_path

    ds = Path(shutil.copytree(sample_runs_path() / "dataset", tmp_path / "ds"))
    lines = (ds / "labels.jsonl").read_text(encoding="utf-8").splitlines()
    again = lines[0].replace('"grade":3', '"grade":0')
    assert again != lines[0]
    (ds / "labels.jsonl").write_text("\n".join([*lines, again]) + "\n", encoding="utf-8")
    db = tmp_path / "c.duckdb"
    res = invoke("load", "--db", db, "--dataset", ds, "--no-precompute")
    assert res.exit_code == 2
    assert f"labels.jsonl:{len(lines) + 1}: document_id: duplicate judgement" in res.output
    assert "(first at line 1)" in res.output


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("q1\td1\t1\nq1\td2\t1099511627776\n", "m.tsv:2: rank: rank '1099511627776' is out of range (1..2147483647)"),
        ("q1\td1\t1\nq1\td2\t1\n", "m.tsv:2: rank: duplicate (qid, rank) in one ranked list: 'q1 / 1, first at line"),
        ("q1\td1\t1.5\n", "m.tsv:1: rank: rank '1.5' is not a whole number >= 1"),
    ],
)
def test_msmarco_rank_out_of_range_repeated_or_fractional(db: Path, tmp_path: Path, text: str, needle: str) -> None:
    before = digest(db)
    res = invoke("load", "--db", db, "--run", _write(tmp_path / "m.tsv", text), "--run-id", "m", "--no-precompute")
    refused(res, db, before, needle)


def _members(*parts: bytes) -> bytes:
    """A gzip file of several members (gzip's own concatenation): a large decompressed tail costs little to make."""
    return b"".join(parts)


def _twenty_good_lines() -> bytes:
    return "".join(f"q1 Q0 d{i} {i} {100 - i}.0 t\n" for i in range(1, 21)).encode()


def test_gzip_of_good_lines_and_a_gibibyte_of_nul_is_refused(db: Path, tmp_path: Path) -> None:
    nul = gzip.compress(b"\0" * (16 << 20), compresslevel=1)
    bomb = _write(tmp_path / "run.txt.gz", _members(gzip.compress(_twenty_good_lines()), *[nul] * 64))
    before = digest(db)
    res = invoke("load", "--db", db, "--run", bomb, "--run-id", "b", "--no-precompute")
    refused(res, db, before, "run.txt.gz:21: column 1: a NUL byte in the decompressed gzip text")
    res = invoke("validate", bomb)
    assert res.exit_code == 2 and "run.txt.gz:21: column 1: a NUL byte" in res.output


def test_decompression_is_bounded_by_ratio(db: Path, tmp_path: Path) -> None:
    member = gzip.compress(b"q1 Q0 d1 1 1.0 t\n" * (1 << 20), compresslevel=9)
    bomb = _write(tmp_path / "run.txt.gz", _members(*[member] * 8))  # 136 MiB from ~0.1 MiB
    before = digest(db)
    res = invoke("load", "--db", db, "--run", bomb, "--run-id", "b", "--no-precompute")
    refused(res, db, before, "run.txt.gz: decompresses to more than", "refused as a decompression bomb")


@pytest.mark.parametrize("comp", ["gzip", "bz2"])
@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_truncated_or_corrupt_stream_is_named(db: Path, tmp_path: Path, comp: str, damage: str) -> None:
    raw = (gzip if comp == "gzip" else bz2).compress(_twenty_good_lines() * 50)
    if damage == "truncated":
        data = raw[: len(raw) // 2]
    else:
        body = bytearray(raw)
        body[len(body) // 2 : len(body) // 2 + 16] = b"\xa5" * 16
        data = bytes(body)
    path = _write(tmp_path / f"run.txt.{'gz' if comp == 'gzip' else 'bz2'}", data)
    needle = f"the {comp} stream is {damage}"
    before = digest(db)
    res = invoke("load", "--db", db, "--run", path, "--run-id", "b", "--no-precompute")
    refused(res, db, before, f"{path.name}: {needle}")
    res = invoke("validate", path)
    assert res.exit_code == 2 and needle in res.output and "holds no lines" not in res.output, res.output
    assert no_traceback(res)
    qrels = _write(tmp_path / f"qrels.txt.{'gz' if comp == 'gzip' else 'bz2'}", data)
    res = _load_dataset(db, qrels, _write(tmp_path / "t.tsv", TOPICS))
    refused(res, db, before, needle)


def test_control_characters_in_ids_are_refused_unless_allowed(db: Path, tmp_path: Path) -> None:
    run = _write(tmp_path / "run.txt", RUN)
    before = digest(db)
    res = invoke("load", "--db", db, "--run", run, "--run-id", "r\x1b[2J\nx", "--no-precompute")
    refused(res, db, before, "run_id: run_id holds control characters", "--allow-control-ids")
    qrels = _write(tmp_path / "q.txt", "q1 0 d\x1b[31m1 1\nq2 0 d1 2\n")
    res = _load_dataset(db, qrels, _write(tmp_path / "t.tsv", TOPICS))
    refused(res, db, before, "q.txt:1: document_id: document_id holds control characters")
    res = invoke("validate", qrels)
    assert res.exit_code == 2 and "document_id holds control characters" in res.output
    res = invoke("load", "--db", db, "--run", run, "--run-id", "r\x1b[2J", "--no-precompute", "--allow-control-ids")
    assert res.exit_code == 0, res.output
    assert "run r␛[2J loaded" in res.output and "warnings: 1 control-in-id" in res.output


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["metrics", "--run", "r", "--k", "1099511627776"], "cutoff 1099511627776 is out of range"),
        (["metrics", "--run", "r", "--measure", "nDCG@1099511627776"], "out of range"),
        (["failures", "--run", "r", "--k", "1099511627776"], "'--k'"),
        (["compare", "--run", "r", "--baseline", "r", "--k", "1099511627776"], "'--k'"),
    ],
)
def test_cutoffs_beyond_32_bits_are_refused_by_name(db: Path, args: list[str], needle: str) -> None:
    res = invoke(*args, "--db", db)
    assert res.exit_code == 2 and needle in res.output and "INT32" not in res.output, res.output
    assert no_traceback(res)


def test_threshold_beyond_32_bits_is_refused_by_name(db: Path, tmp_path: Path) -> None:
    qrels, run = _write(tmp_path / "q.txt", QRELS), _write(tmp_path / "r.txt", RUN)
    res = invoke("metrics", "--qrels", qrels, "--run", run, "--threshold", "1099511627776")
    assert res.exit_code == 2 and "'--threshold'" in res.output and "INT32" not in res.output
    before = digest(db)
    res = invoke("load", "--db", db, "--qrels", qrels, "--topics", _write(tmp_path / "t.tsv", TOPICS),
                 "--threshold", "1099511627776")  # fmt: skip
    refused(res, db, before, "'--threshold'")


def test_beir_corpus_duplicate_id_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    _write(root / "corpus.jsonl", '{"_id":"d1","text":"a"}\n{"_id":"d2","text":"b"}\n{"_id":"d1","text":"c"}\n')
    _write(root / "queries.jsonl", '{"_id":"q1","text":"first"}\n{"_id":"q2","text":"second"}\n')
    _write(root / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    db = tmp_path / "b.duckdb"
    res = invoke("load", "--db", db, "--dataset", root, "--no-precompute")
    assert res.exit_code == 2 and no_traceback(res)
    assert "corpus.jsonl:3: document_id: duplicate document id d1 (first at line 1)" in res.output


@pytest.mark.parametrize("text", ["q1\t\nq2\tsecond\n", "q1\t   \nq2\tsecond\n"])
def test_topic_with_empty_text_is_refused(db: Path, tmp_path: Path, text: str) -> None:
    before = digest(db)
    res = _load_dataset(db, _write(tmp_path / "q.txt", QRELS), _write(tmp_path / "topics.tsv", text))
    refused(res, db, before, "topics.tsv:1: query: query is empty")


def test_ignored_topic_names_the_case_it_looks_like(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    ds.mkdir()
    _write(ds / "dataset.json", '{"dataset_id": "ts", "name": "ts", "version": "1", "unit": "document"}')
    _write(ds / "cases.jsonl", '{"id": "q1 ", "query": "first"}\n{"id": "q2", "query": "second"}\n')
    _write(ds / "labels.jsonl", '{"case_id": "q1 ", "document_id": "d1", "grade": 2}\n'
           '{"case_id": "q2", "document_id": "d1", "grade": 2}\n')  # fmt: skip
    res = invoke("load", "--db", tmp_path / "t.duckdb", "--dataset", ds, "--run", _write(tmp_path / "run.txt", RUN),
                 "--run-id", "r", "--no-precompute")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "1 run topic(s) not in the dataset were ignored (2 rows)" in res.output
    assert "topic 'q1' looks like case 'q1 '" in res.output


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("topics.tsv", b"q1\tfirst \xff query\nq2\tsecond\n", "topics.tsv:1: not valid UTF-8"),
        ("topics.txt", b"<top>\n<num> q1\n<title> a \xff b\n</top>\n", "topics.txt:3: not valid UTF-8"),
    ],
)
def test_bad_utf8_in_topics_names_the_line_not_the_csv_reader(
    db: Path, tmp_path: Path, name: str, text: bytes, needle: str
) -> None:
    before = digest(db)
    res = _load_dataset(db, _write(tmp_path / "q.txt", QRELS), _write(tmp_path / name, text))
    refused(res, db, before, needle)
    assert "Original Line" not in res.output and "Possible Solution" not in res.output


def test_bad_utf8_in_qrels_stops_before_the_aborted_transaction_speaks(db: Path, tmp_path: Path) -> None:
    before = digest(db)
    res = _load_dataset(
        db, _write(tmp_path / "q.txt", b"q1 0 d1 1\nq2 0 d\xff1 2\n"), _write(tmp_path / "t.tsv", TOPICS)
    )
    refused(res, db, before, "q.txt:2: not valid UTF-8")
    assert "transaction is aborted" not in res.output


@pytest.mark.parametrize(
    ("cases", "labels", "needle"),
    [
        ('id,query\nq1,"first\nq2,second\n', "case_id,document_id,grade\nq1,d1,1\n",
         "cases.csv:2: a quoted field is never closed"),
        ("id,query\nq1,first\nq2,second\n", "case_id,document_id,grade\nq1,d1,1\nq2,d1,2,extra\n",
         "labels.csv:3: a row has a different number of columns than the header"),
        ("id,query\nq1,first\nq2,second\n", "case_id,document_id,grade\nq1,d1,1\nq2,d1\n",
         "labels.csv:3: a row has a different number of columns than the header"),
    ],
)  # fmt: skip
def test_ragged_or_unclosed_csv_is_named_with_its_line(tmp_path: Path, cases: str, labels: str, needle: str) -> None:
    ds = tmp_path / "ds"
    ds.mkdir()
    _write(ds / "dataset.json", '{"name": "c", "version": "1", "unit": "document"}')
    _write(ds / "cases.csv", cases)
    _write(ds / "labels.csv", labels)
    res = invoke("load", "--db", tmp_path / "c.duckdb", "--dataset", ds, "--no-precompute")
    assert res.exit_code == 2 and needle in res.output, res.output
    assert "UTF-8" not in res.output and "required column" not in res.output


def test_a_json_array_is_not_read_as_trec(db: Path, tmp_path: Path) -> None:
    before = digest(db)
    run = _write(tmp_path / "run.json", '[{"q1": {"d1": 3.556576}}]\n')
    res = invoke("load", "--db", db, "--run", run, "--run-id", "a", "--no-precompute")
    refused(res, db, before, "a JSON array at the top level is not a run format")
    assert "is not a finite number" not in res.output


@pytest.mark.slow
def test_a_line_longer_than_the_readers_take_is_refused_not_dropped(db: Path, tmp_path: Path) -> None:
    run = tmp_path / "long.txt"
    with run.open("w", encoding="utf-8") as fh:
        fh.write("q1 Q0 d1 1 1.0 t\nq1 Q0 ")
        fh.write("x" * (200 << 20))
        fh.write(" 2 0.5 t\n")
    before = digest(db)
    res = invoke("load", "--db", db, "--run", run, "--run-id", "long", "--no-precompute")
    refused(res, db, before, "long.txt:2: line longer than 64 MiB")
    assert "Parallel CSV Reader" not in res.output


def test_two_runs_with_one_trec_tag_are_named_after_their_files(db: Path, tmp_path: Path) -> None:
    one = _write(tmp_path / "bm25.txt", "q1 Q0 d1 1 3.0 bm25\nq2 Q0 d1 1 1.0 bm25\n")
    two = _write(tmp_path / "contriever.txt", "q1 Q0 d2 1 3.0 bm25\nq2 Q0 d1 1 1.0 bm25\n")
    res = invoke("load", "--db", db, "--run", one, "--run", two, "--no-precompute")
    assert res.exit_code == 0, res.output
    assert "run bm25 loaded" in res.output and "run contriever loaded" in res.output
    assert "its run tag 'bm25' is also the id of" in res.output and "named after its file: 'contriever'" in res.output
    res = invoke("load", "--db", db, "--run", one, "--run", one, "--run-id", "a", "--run-id", "a", "--no-precompute")
    assert res.exit_code == 2 and "give each run its own --run-id" in res.output
