"""A 100+-variant corpus of bad inputs, generated from the shipped sample: every one is refused with exit 2, a
message naming the file (and the line and field where there is one), no traceback, and the store unchanged.

Variants: each field of each table given a value of the wrong type (or beyond its range), each required field
removed, and each file truncated, mis-encoded, emptied, replaced by a folder or a broken link; plus the
manifests' own mistakes and the cases the contract names (bad dates, mistyped principals, empty ids)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ragtriage.contract.fields import CASES, DOCUMENTS, EVENTS, LABELS, RESULTS, Table
from tests.bad_inputs import copy_case, digest, load, make_base, no_traceback, write_rows

pytestmark = pytest.mark.slow  # every test here takes seconds of its own: `pytest -m slow` and CI run them

Mutate = Callable[[Path, Path], None]  # (dataset folder, run folder)

DATA_FILES = {"cases": "dataset", "labels": "dataset", "documents": "dataset", "results": "run", "events": "run"}
TABLES: dict[str, Table] = {"cases": CASES, "labels": LABELS, "documents": DOCUMENTS, "results": RESULTS}
TABLES["events"] = EVENTS
BAD_VALUES: dict[str, list[Any]] = {
    "string": [{"x": 1}],
    "int": ["3 apples", 2**40, True],
    "float": ["fast"],
    "bool": ["yes"],
    "date": ["2024-13-45"],
    "timestamp": ["yesterday"],
    "string_list": ["staff"],
    "object": [[1, 2]],
}


@dataclass(frozen=True)
class Variant:
    name: str
    target: str  # dataset | run
    mutate: Mutate
    file: str  # what the message must name
    line: int | None = None
    field: str | None = None
    strict: bool = False


def _file(ds: Path, run: Path, table: str) -> Path:
    return (ds if DATA_FILES[table] == "dataset" else run) / f"{table}.jsonl"


def _edit_row(table: str, edit: Callable[[dict[str, Any]], None]) -> Mutate:
    def mutate(ds: Path, run: Path) -> None:
        path = _file(ds, run, table)
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        edit(rows[0])
        write_rows(path, rows)

    return mutate


def _set(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda row: row.__setitem__(field, value)


def _bytes(table: str, change: Callable[[bytes], bytes]) -> Mutate:
    def mutate(ds: Path, run: Path) -> None:
        path = _file(ds, run, table)
        path.write_bytes(change(path.read_bytes()))

    return mutate


def _replace_file(table: str, how: str) -> Mutate:
    def mutate(ds: Path, run: Path) -> None:
        path = _file(ds, run, table) if table in DATA_FILES else (ds if table == "dataset" else run) / f"{table}.json"
        path.unlink()
        if how == "dir":
            path.mkdir()
        else:
            os.symlink(path.name, path)  # a link to itself

    return mutate


def _manifest(which: str, edit: Callable[[dict[str, Any]], None]) -> Mutate:
    def mutate(ds: Path, run: Path) -> None:
        path = ds / "dataset.json" if which == "dataset" else run / "run.json"
        obj = json.loads(path.read_text(encoding="utf-8"))
        edit(obj)
        path.write_text(json.dumps(obj), encoding="utf-8")

    return mutate


def _field_variants() -> list[Variant]:
    out = []
    for table, spec in TABLES.items():
        target = DATA_FILES[table]
        for f in spec.fields:
            for i, value in enumerate(BAD_VALUES[f.kind]):
                out.append(
                    Variant(
                        f"{table}.{f.name}={value!r}"[:60] + f"#{i}",
                        target,
                        _edit_row(table, _set(f.name, value)),
                        f"{table}.jsonl",
                        1,
                        f.name,
                    )
                )
            if f.required:
                out.append(
                    Variant(
                        f"{table}.{f.name} missing",
                        target,
                        _edit_row(table, lambda row, n=f.name: row.pop(n, None)),
                        f"{table}.jsonl",
                        1,
                        f.name,
                    )
                )
    return out


def _file_variants() -> list[Variant]:
    out = []
    for table, target in DATA_FILES.items():
        name = f"{table}.jsonl"
        out += [
            Variant(f"{table} truncated", target, _bytes(table, lambda b: b[: len(b) - 7]), name),
            Variant(
                f"{table} invalid utf-8", target, _bytes(table, lambda b: b.replace(b"\n", b"\n\xff\xfe", 1)), name, 2
            ),
            Variant(f"{table} empty", target, _bytes(table, lambda b: b""), name),
            Variant(f"{table} utf-16", target, _bytes(table, lambda b: b.decode().encode("utf-16")), name),
            Variant(f"{table} not objects", target, _bytes(table, lambda b: b"[1, 2]\n" + b), name, 1),
            Variant(f"{table} is a folder", target, _replace_file(table, "dir"), name),
            Variant(f"{table} is a broken link", target, _replace_file(table, "link"), name),
        ]
    return out


def _manifest_variants() -> list[Variant]:
    run = [
        ("k beyond INTEGER", "k", _set("k", 2**40)),
        ("k zero", "k", _set("k", 0)),
        ("k text", "k", _set("k", "ten")),
        ("candidate_k beyond INTEGER", "candidate_k", _set("candidate_k", 2**62)),
        ("run_id empty", "run_id", _set("run_id", "")),
        ("run_id number", "run_id", _set("run_id", 5)),
        ("k missing", "k", lambda m: m.pop("k")),
    ]
    dataset = [
        ("unit unknown", "unit", _set("unit", "paragraph")),
        ("threshold text", "relevance_threshold", _set("relevance_threshold", "two")),
        ("name missing", "name", lambda m: m.pop("name")),
    ]
    out = [Variant(f"run.json {n}", "run", _manifest("run", e), "run.json", None, f) for n, f, e in run]
    out += [
        # dataset.json is checked against the shipped JSON Schema, which names the key's line (the file is one line)
        Variant(f"dataset.json {n}", "dataset", _manifest("dataset", e), "dataset.json", 1, f)
        for n, f, e in dataset
    ]
    out += [
        Variant("run.json is a folder", "run", _replace_file("run", "dir"), "run.json"),
        Variant("dataset.json is a folder", "dataset", _replace_file("dataset", "dir"), "dataset.json"),
        Variant("run.json malformed", "run", lambda ds, run: (run / "run.json").write_text("{"), "run.json"),
    ]
    return out


def _contract_variants() -> list[Variant]:
    def case(edit: Callable[[dict[str, Any]], None]) -> Mutate:
        return _edit_row("cases", edit)

    return [
        Variant(
            "effective_on invalid",
            "dataset",
            case(_set("filters", {"effective_on": "2024-13-45"})),
            "cases.jsonl",
            1,
            "filters",
        ),
        Variant(
            "effective_on a number",
            "dataset",
            case(_set("filters", {"effective_on": 20240101})),
            "cases.jsonl",
            1,
            "filters",
        ),
        Variant(
            "filter tenant a list of numbers",
            "dataset",
            case(_set("filters", {"tenant": [1, 2]})),
            "cases.jsonl",
            1,
            "filters",
        ),
        Variant(
            "groups a string",
            "dataset",
            case(_set("principal", {"id": "u", "groups": "staff"})),
            "cases.jsonl",
            1,
            "principal",
        ),
        Variant(
            "groups of numbers", "dataset", case(_set("principal", {"groups": [1]})), "cases.jsonl", 1, "principal"
        ),
        Variant(
            "principal id a list", "dataset", case(_set("principal", {"id": ["u"]})), "cases.jsonl", 1, "principal"
        ),
        Variant("empty case id", "dataset", case(_set("id", "")), "cases.jsonl", 1, "id"),
        Variant("empty chunk_id", "run", _edit_row("results", _set("chunk_id", "")), "results.jsonl", 1, "chunk_id"),
        Variant(
            "empty document_id", "run", _edit_row("results", _set("document_id", "")), "results.jsonl", 1, "document_id"
        ),
        Variant(
            "grade beyond INTEGER", "dataset", _edit_row("labels", _set("grade", -(2**40))), "labels.jsonl", 1, "grade"
        ),
        Variant("control in id", "dataset", case(_set("id", "q\x1b[2J")), "cases.jsonl", 1, "id"),
        Variant("newline in id", "dataset", case(_set("id", "q\nq")), "cases.jsonl", 1, "id"),
    ]


VARIANTS = _field_variants() + _file_variants() + _manifest_variants() + _contract_variants()


def test_the_corpus_has_over_a_hundred_variants() -> None:
    assert len(VARIANTS) >= 100
    assert len({v.name for v in VARIANTS}) == len(VARIANTS)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, dict[str, tuple[int, str]]]:
    ds, run, db = make_base(tmp_path_factory.mktemp("base"))
    return ds, run, db, digest(db)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_bad_input_is_refused_once_with_where(
    base: tuple[Path, Path, Path, dict[str, tuple[int, str]]], tmp_path: Path, variant: Variant
) -> None:
    ds0, run0, db0, before = base
    ds, run, db = copy_case(db0, ds0, run0, tmp_path)
    variant.mutate(ds, run)
    res = (
        load(db, dataset=ds, strict=variant.strict)
        if variant.target == "dataset"
        else load(db, run=run, strict=variant.strict)
    )
    assert no_traceback(res), repr(res.exception)
    assert res.exit_code == 2, f"accepted silently:\n{res.output}"
    assert "Traceback" not in res.output and "Error:" not in res.output.split("\n", 1)[0]
    assert "transaction is aborted" not in res.output.lower()
    where = variant.file
    if variant.line is not None:
        where += f":{variant.line}"
    if variant.field is not None:
        where += f": {variant.field}"
    assert where in res.output, res.output
    assert digest(db) == before


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v.target == "run"][:12], ids=lambda v: v.name)
def test_a_good_dataset_with_a_bad_run_commits_nothing(
    base: tuple[Path, Path, Path, dict[str, tuple[int, str]]], tmp_path: Path, variant: Variant
) -> None:
    """One command, one transaction: the new dataset version is not committed when a run of the same load is
    refused, the loads history gains nothing, and the message says the store is unchanged."""
    ds0, run0, db0, before = base
    ds, run, db = copy_case(db0, ds0, run0, tmp_path)
    _edit_row("cases", _set("query", "a new wording makes a new dataset version"))(ds, run)
    variant.mutate(ds, run)
    res = load(db, dataset=ds, run=run)
    assert no_traceback(res), repr(res.exception)
    assert res.exit_code == 2 and "nothing was loaded, the store is unchanged" in res.output
    assert digest(db) == before
