"""The hostile trace exports of issue 48, each a fixed regression case through ``ragtriage load --traces`` on a
file store: every one exits 2 with the file, the line and the field (never a raw DuckDB message or a traceback),
and the store's tables are left exactly as they were. The JSON dict readers (pytrec_eval-style qrels and runs)
refuse a key given twice with both positions, and every JSON reader refuses nesting it cannot decode."""

from __future__ import annotations

import bz2
import gzip
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from ragtriage.contract.errors import ValidationFailed
from ragtriage.store import connect
from ragtriage.store.byo import LoadRequest, RunSource, load_inputs
from tests.bad_inputs import digest, make_base, no_traceback

pytest.importorskip("openinference.semconv")
pytest.importorskip("opentelemetry.proto")
from tests.trace_fixtures import Retrieval, write_otlp  # noqa: E402

runner = CliRunner()
Request = dict[str, Any]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, tuple[int, str]]]:
    root = tmp_path_factory.mktemp("hostile-base")
    ds, _, db = make_base(root)
    return ds, db, digest(db)


def _request(tmp: Path) -> Request:
    """One OTLP request (the Collector's camelCase JSON) with one retriever span of two documents."""
    path = write_otlp(tmp / "one.jsonl", [Retrieval("what is the travel policy", [("d1", 0.9, "a"), ("d2", 0.5, "b")],
                                                    1)], per_line=1)  # fmt: skip
    req: Request = json.loads(path.read_text())
    path.unlink()
    return req


def _span(req: Request) -> dict[str, Any]:
    return req["resourceSpans"][0]["scopeSpans"][0]["spans"][1]  # type: ignore[no-any-return]


def _set_attr(req: Request, suffix: str, value: dict[str, Any]) -> Request:
    for a in _span(req)["attributes"]:
        if a["key"].endswith(suffix):
            a["value"] = value
    return req


def _rename(req: Request, old: str, new: str) -> Request:
    for a in _span(req)["attributes"]:
        a["key"] = a["key"].replace(old, new)
    return req


def _time(req: Request, value: str) -> Request:
    _span(req)["startTimeUnixNano"] = value
    return req


def _dup_query(req: Request) -> Request:
    _span(req)["attributes"].append({"key": "input.value", "value": {"stringValue": "another query"}})
    return req


def _dup_doc_field(req: Request) -> Request:
    _span(req)["attributes"].append({"key": "retrieval.documents.1.document.id", "value": {"stringValue": "d9"}})
    return req


def _groups(req: Request) -> Request:
    _span(req)["attributes"].append({"key": "user.groups", "value": {"stringValue": '{"hr": true}'}})
    return req


def _observation(**fields: Any) -> dict[str, Any]:
    obs = {"id": "o1", "traceId": "t3", "startTime": "2025-01-01T00:00:00.000Z", "endTime": "2025-01-01T00:00:00.250Z",
           "input": {"query": "what is the travel policy"},
           "output": {"documents": [{"id": "d1", "score": 1.0}]}}  # fmt: skip
    return obs | fields


def _lines(*objs: Any) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


Build = Callable[[Request], str]
OTLP: dict[str, tuple[Build, str, str]] = {
    # name: (the file's text from a good request, "field: message" the refusal names, after "file:1: ")
    "NaN score (the JSON literal)": (
        lambda r: _lines(_set_attr(r, "0.document.score", {"doubleValue": float("nan")})),
        "document.score", "a document score that is not a finite number: 'nan'"),
    "infinite score": (
        lambda r: _lines(_set_attr(r, "0.document.score", {"doubleValue": float("inf")})),
        "document.score", "a document score that is not a finite number: 'inf'"),
    "array document id": (
        lambda r: _lines(_set_attr(r, "0.document.id", {"arrayValue": {"values": [{"stringValue": "x"}]}})),
        "document.id", "a document id that is not one string or number: "
        "'retrieval.documents.0.document.id holds an array'"),
    "negative document index": (
        lambda r: _lines(_rename(r, "documents.1.", "documents.-1.")),
        "document index", "a document whose index is not a list position (0 to 2,147,483,647): "
        "'retrieval.documents.-1'"),
    "document index 99999999999": (
        lambda r: _lines(_rename(r, "documents.1.", "documents.99999999999.")),
        "document index", "'retrieval.documents.99999999999'"),
    "an attribute given twice": (
        lambda r: _lines(_dup_query(r)), "attributes",
        "the attribute 'input.value' given twice in one span (which value is meant?)"),
    "a document field given twice": (
        lambda r: _lines(_dup_doc_field(r)), "document field",
        "a document field given twice in one span (which value is meant?): 'retrieval.documents.1.document.id'"),
    "start time not a number": (
        lambda r: _lines(_time(r, "soon")), "startTimeUnixNano",
        "a start time that is not nanoseconds since 1970 (digits, within 64 bits): 'soon'"),
    "negative start time": (lambda r: _lines(_time(r, "-5")), "startTimeUnixNano", "(digits, within 64 bits): '-5'"),
    "30-digit start time": (
        lambda r: _lines(_time(r, "1" * 30)), "startTimeUnixNano", f"(digits, within 64 bits): '{'1' * 30}'"),
    "40-digit integer score": (
        lambda r: _lines(_set_attr(r, "0.document.score", {"intValue": "1" + "0" * 39})), "document.score",
        "an integer score past 2**53, which a double holds only rounded (ties would be made up): '1" + "0" * 39),
    "groups attribute an object": (
        lambda r: _lines(_groups(r)), "groups",
        "a groups value that is not a group name or a list of group names: '{\"hr\": true}'"),
    "OTLP lines then a Langfuse observation": (
        lambda r: _lines(_observation(), r), "",
        "not an OTLP export request (no resourceSpans): one file holds one format"),
}  # fmt: skip


def _refused(base: tuple[Path, Path, dict[str, tuple[int, str]]], tmp: Path, path: Path, *extra: str) -> str:
    ds, db0, before = base
    db = tmp / "store.duckdb"
    db.write_bytes(db0.read_bytes())
    args = ["load", "--db", str(db), "--dataset", str(ds), "--no-precompute", "--traces", str(path)]
    res = runner.invoke(app, [*args, "--run-id", "prod", *extra])
    assert no_traceback(res), repr(res.exception)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and "transaction is aborted" not in res.output.lower(), res.output
    assert "Error:" not in res.output.replace("validation error(s)", ""), res.output  # no raw DuckDB message
    assert digest(db) == before, res.output
    return res.output


@pytest.mark.parametrize("name", sorted(OTLP))
@pytest.mark.parametrize("packing", ["plain", "gz", "bz2"])
def test_each_hostile_otlp_export_is_refused_naming_file_line_and_field(
    base: tuple[Path, Path, dict[str, tuple[int, str]]], tmp_path: Path, name: str, packing: str
) -> None:
    build, field, message = OTLP[name]
    text = build(_request(tmp_path))
    if name.startswith("OTLP lines then"):  # the OTLP request first, the observation on line 2
        text = "".join(reversed(text.splitlines(keepends=True)))
    data = text.encode()
    path = tmp_path / f"spans.jsonl{'' if packing == 'plain' else '.' + packing}"
    path.write_bytes({"plain": data, "gz": gzip.compress(data), "bz2": bz2.compress(data)}[packing])
    out = _refused(base, tmp_path, path, "--groups-attribute", "user.groups")
    line = 2 if name.startswith("OTLP lines then") else 1
    where = f"{path}:{line}: {field}: " if field else f"{path}:{line}: "
    assert where in out and message in out, out


def test_a_langfuse_file_with_an_otlp_request_is_refused(
    base: tuple[Path, Path, dict[str, tuple[int, str]]], tmp_path: Path
) -> None:
    """Beyond the 64 KiB the format is told from, an OTLP request in a Langfuse export is named, not skipped."""
    filler = [_observation(id=f"o{i}", metadata={"pad": "x" * 200}) for i in range(400)]
    path = tmp_path / "observations.jsonl"
    path.write_text(_lines(*filler, _request(tmp_path)))
    out = _refused(base, tmp_path, path)
    assert f"{path}:401: an OTLP export request (resourceSpans) in a file of Langfuse observations" in out, out


@pytest.mark.parametrize(
    ("obs", "field", "message"),
    [
        (_observation(startTime="not a date"), "startTime",
         "a start time that is not an ISO 8601 timestamp: '\"not a date\"'"),
        (_observation(endTime=1700000000), "endTime", "an end time that is not an ISO 8601 timestamp: '1700000000'"),
        (_observation(output={"documents": [{"id": ["d1", "d2"], "score": 1}]}), "document.id",
         "a document id that is not one string or number: 'document.id holds an array'"),
        (_observation(output={"documents": [{"id": "d1", "score": float("nan")}]}), "document.score",
         "a document score that is not a finite number: 'NaN'"),
        (_observation(userGroups={"hr": 1}), "groups",
         "a groups value that is not a group name or a list of group names: '{\"hr\":1}'"),
        (_observation(userId={"id": "u1"}), "principal", "a principal that is not one id (a string or an integer): "
         "'{\"id\":\"u1\"}'"),
    ],
)  # fmt: skip
def test_hostile_langfuse_observations_are_refused(
    base: tuple[Path, Path, dict[str, tuple[int, str]]], tmp_path: Path, obs: dict[str, Any], field: str,
    message: str,
) -> None:  # fmt: skip
    path = tmp_path / "observations.jsonl"
    path.write_text(_lines(obs))
    out = _refused(base, tmp_path, path, "--groups-attribute", "userGroups")
    assert f"{path}:1: {field}: {message}" in out, out


@pytest.mark.parametrize("text", ['{"resourceSpans": ' + "[" * 200_000 + "]" * 200_000 + "}",
                                  '{"resourceSpans": [' + '{"a":' * 5_000 + "1" + "}" * 5_000 + "]}",
                                  "[" * 200_000 + "]" * 200_000], ids=["arrays", "objects", "langfuse"])  # fmt: skip
def test_deep_json_is_refused_without_a_recursion_error(
    base: tuple[Path, Path, dict[str, tuple[int, str]]], tmp_path: Path, text: str
) -> None:
    path = tmp_path / "deep.json"
    path.write_text(text)
    out = _refused(base, tmp_path, path)
    assert f"{path}:1:" in out and "RecursionError" not in out, out


def test_a_fifo_as_the_trace_file_is_refused_without_waiting(
    base: tuple[Path, Path, dict[str, tuple[int, str]]], tmp_path: Path
) -> None:
    fifo = tmp_path / "spans.jsonl"
    os.mkfifo(fifo)
    done: list[str] = []
    worker = threading.Thread(target=lambda: done.append(_refused(base, tmp_path, fifo)), daemon=True)
    worker.start()
    worker.join(120)
    if worker.is_alive():  # the load waits for a writer: give it one (an empty one) so the test ends
        with fifo.open("wb"):
            pass
        worker.join(30)
        pytest.fail("the load opened the FIFO and waited for a writer")
    assert f"{fifo}: is not a regular file (a FIFO, socket or device)" in done[0], done


def test_invalid_utf8_in_a_line_is_named(base: tuple[Path, Path, dict[str, tuple[int, str]]], tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    good = _lines(_request(tmp_path)).encode()
    path.write_bytes(good + good.replace(b"travel", b"tr\xffvel"))
    out = _refused(base, tmp_path, path)
    assert f"{path}:2: the file is not UTF-8; save it as UTF-8" in out, out


def test_the_same_good_export_still_loads(base: tuple[Path, Path, dict[str, tuple[int, str]]], tmp_path: Path) -> None:
    """The refusals above come from the one change each made: the request they start from loads."""
    ds, db0, _ = base
    db = tmp_path / "store.duckdb"
    db.write_bytes(db0.read_bytes())
    path = tmp_path / "spans.jsonl"
    path.write_text(_lines(_request(tmp_path)))
    res = runner.invoke(app, ["load", "--db", str(db), "--dataset", str(ds), "--no-precompute", "--traces", str(path),
                              "--run-id", "prod"])  # fmt: skip
    assert res.exit_code == 0, res.output
    con = connect(db, read_only=True)
    got = con.execute("SELECT chunk_id, score FROM results WHERE run_id = 'prod' ORDER BY rank").fetchall()
    con.close()
    assert got == [("d1", 0.9), ("d2", 0.5)]


PRINCIPALS = {
    "array": ({"arrayValue": {"values": [{"stringValue": "u1"}, {"stringValue": "u2"}]}}, '\'["u1","u2"]\''),
    "kvlist": ({"kvlistValue": {"values": [{"key": "id", "value": {"stringValue": "u1"}}]}}, "'a key-value list'"),
}


def _info(db: Path) -> str:
    res = runner.invoke(app, ["info", "--db", str(db)])
    assert res.exit_code == 0, res.output
    return res.output


@pytest.mark.parametrize("kind", sorted(PRINCIPALS))
@pytest.mark.parametrize("shape", ["json", "jsonl"])
def test_an_otlp_principal_that_is_an_array_or_a_kvlist_is_refused(
    base: tuple[Path, Path, dict[str, tuple[int, str]]], tmp_path: Path, kind: str, shape: str
) -> None:
    """Issue 48: a principal attribute given as an array or a key-value list is no id: refused naming file, line
    and field, as Langfuse refuses one, whether the export is one pretty-printed request or one per line."""
    value, shown = PRINCIPALS[kind]
    req = _request(tmp_path)
    _span(req)["attributes"].append({"key": "user.id", "value": value})
    path = tmp_path / f"spans.{shape}"
    if shape == "jsonl":
        path.write_text(_lines(req))
        line = 1
    else:
        text = json.dumps(req, indent=2)
        path.write_text(text)
        rows = text.splitlines()
        at = next(i for i, r in enumerate(rows) if f'"spanId": "{_span(req)["spanId"]}"' in r)
        line = next(i for i in range(at, -1, -1) if rows[i].strip() == "{") + 1
    before = tmp_path / "before.duckdb"
    before.write_bytes(base[1].read_bytes())
    info = _info(before).replace(str(before), "")
    out = _refused(base, tmp_path, path, "--principal-attribute", "user.id")
    assert f"{path}:{line}: principal: a principal that is not one id (a string or an integer): {shown}" in out, out
    store = tmp_path / "store.duckdb"
    assert _info(store).replace(str(store), "") == info


def test_a_phoenix_principal_column_of_lists_is_refused(
    base: tuple[Path, Path, dict[str, tuple[int, str]]], tmp_path: Path
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    doc = pa.struct([("document.id", pa.string()), ("document.score", pa.float64())])
    table = pa.table({
        "context.trace_id": ["t1"], "context.span_id": ["s1"], "span_kind": ["RETRIEVER"],
        "start_time": ["2025-01-01 00:00:00"], "end_time": ["2025-01-01 00:00:01"],
        "attributes.input.value": ["what is the travel policy"], "attributes.user.id": [["u1", "u2"]],
        "attributes.retrieval.documents": pa.array([[{"document.id": "d1", "document.score": 0.5}]], pa.list_(doc)),
    })  # fmt: skip
    path = tmp_path / "spans.parquet"
    pq.write_table(table, path)
    out = _refused(base, tmp_path, path, "--principal-attribute", "user.id")
    assert f'{path}:1: principal: a principal that is not one id (a string or an integer): \'["u1","u2"]\'' in out


# --- the JSON dict readers (pytrec_eval / ranx shape) ----------------------------------------------------


def _qrels(tmp: Path) -> Path:
    path = tmp / "qrels.txt"
    path.write_text("q001 0 d1 1\nq002 0 d2 1\n")
    return path


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ('{"q001": {"d1": 1.0},\n "q001": {"d2": 0.5}}', ":2: ", "the key 'q001' appears twice (first at line 1, "
         "column 2) (column 2)"),
        ('{"q001": {"d1": 1.0, "d1": 0.5}}', ":1: ", "the key 'd1' appears twice in one object (column 10)"),
        ('{"q001": ' + "[" * 100_000 + "]" * 100_000 + "}", ":1: ", "JSON nested deeper than the reader takes"),
    ],
    ids=["query twice", "document twice", "deep"],
)  # fmt: skip
def test_a_json_run_with_a_key_twice_or_too_deep_is_refused(
    tmp_path: Path, text: str, where: str, message: str
) -> None:
    run = tmp_path / "run.json"
    run.write_text(text)
    con = connect(tmp_path / "j.duckdb")
    with pytest.raises(ValidationFailed) as exc:
        load_inputs(con, LoadRequest(qrels=_qrels(tmp_path), runs=[RunSource(run, run_id="r")]))
    con.close()
    assert f"{run}{where}" in str(exc.value) and message in str(exc.value), str(exc.value)


def test_json_qrels_with_a_query_twice_are_refused(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.json"
    qrels.write_text(json.dumps({"q001": {"d1": 1}})[:-1] + ', "q001": {"d2": 1}}')
    run = tmp_path / "run.txt"
    run.write_text("q001 Q0 d1 1 1.0 t\n")
    con = connect(tmp_path / "j.duckdb")
    with pytest.raises(ValidationFailed) as exc:
        load_inputs(con, LoadRequest(qrels=qrels, runs=[RunSource(run, run_id="r")]))
    con.close()
    text = str(exc.value)
    assert f"{qrels}:1: the key 'q001' appears twice (first at line 1, column 2) (column 21)" in text, text


def test_a_deep_dataset_manifest_is_a_finding(tmp_path: Path) -> None:
    ds, _, _ = make_base(tmp_path)
    (ds / "dataset.json").write_text('{"name": ' + "[" * 100_000 + "]" * 100_000 + "}")
    res = runner.invoke(app, ["load", "--db", str(tmp_path / "x.duckdb"), "--dataset", str(ds), "--no-precompute"])
    assert res.exit_code == 2 and no_traceback(res), res.output
    assert "JSON nested deeper than the reader takes" in res.output, res.output


def test_a_phoenix_document_id_that_is_a_list_or_a_text_time_that_is_no_time_is_refused(
    base: tuple[Path, Path, dict[str, tuple[int, str]]], tmp_path: Path
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    doc = pa.struct([("document.id", pa.list_(pa.string())), ("document.score", pa.float64())])
    table = pa.table({
        "context.trace_id": ["t1", "t2"], "context.span_id": ["s1", "s2"], "span_kind": ["RETRIEVER", "RETRIEVER"],
        "start_time": ["2025-01-01 00:00:00", "not a time"], "end_time": ["2025-01-01 00:00:01"] * 2,
        "attributes.input.value": ["what is the travel policy"] * 2,
        "attributes.retrieval.documents": pa.array([[{"document.id": ["d1", "d2"], "document.score": 0.5}],
                                                    [{"document.id": ["d1"], "document.score": 0.5}]], pa.list_(doc)),
    })  # fmt: skip
    path = tmp_path / "spans.parquet"
    pq.write_table(table, path)
    out = _refused(base, tmp_path, path)
    assert f"{path}:1: document.id: a document id that is not one string or number: 'document.id holds an array'" in out
    assert f"{path}:2: start_time: a start time that is not a timestamp: 'not a time'" in out, out
