"""Security cases are never silently unchecked: a principal with only groups or only a tenant is checked, an
empty acl admits nobody, a case without any principal is counted as unchecked by `check` and by the gate, and a
principal whose parts have the wrong type is refused at load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragtriage.checks import check_run
from ragtriage.cli import app
from ragtriage.contract.errors import ValidationFailed
from tests.factory import make_store

runner = CliRunner()
DOCS = [
    {"document_id": "open", "chunk_id": "open#1", "acl": ["staff"], "tenant": "acme"},
    {"document_id": "nobody", "chunk_id": "nobody#1", "acl": [], "tenant": "acme"},
    {"document_id": "other", "chunk_id": "other#1", "acl": ["staff"], "tenant": "globex"},
]


def _store(tmp_path: Path, principals: dict[str, Any], **dataset: Any) -> Any:
    cases = [{"id": cid, "query": cid, "principal": p} for cid, p in principals.items()]
    results = [
        {"case_id": cid, "document_id": d["document_id"], "chunk_id": d["chunk_id"]} for cid in principals for d in DOCS
    ]
    return make_store(
        tmp_path,
        dataset={"name": "s", "version": "1", "unit": "chunk", **dataset},
        cases=cases,
        labels=[{"case_id": cid, "document_id": "open", "chunk_id": "open#1", "grade": 3} for cid in principals],
        documents=DOCS,
        runs=[{"run": {"run_id": "r", "k": 3}, "results": results}],
    )


def _leaks(con: Any) -> set[tuple[str, str, str]]:
    rows = check_run(con, "r").leakage.select(["case_id", "chunk_id", "rule"]).to_pylist()
    return {(r["case_id"], r["chunk_id"], r["rule"]) for r in rows}


def test_empty_acl_means_visible_to_nobody(tmp_path: Path) -> None:
    con = _store(tmp_path, {"admin": {"id": "root", "groups": ["staff", "admins"], "tenant": "acme"}})
    assert _leaks(con) == {
        ("admin", "nobody#1", "acl-no-overlap"),  # [] admits even a principal in every group
        ("admin", "other#1", "tenant-mismatch"),
    }
    warnings = con.execute("SELECT code, message FROM load_warnings WHERE field = 'acl'").fetchall()
    assert warnings == [("empty-acl", "unit nobody#1 has an empty acl: visible to nobody")]


def test_empty_acl_is_an_acl_where_the_dataset_requires_one(tmp_path: Path) -> None:
    con = _store(tmp_path, {"u": {"id": "u", "groups": ["staff"], "tenant": "acme"}}, acl_required=True)
    assert ("u", "nobody#1", "acl-no-overlap") in _leaks(con)


@pytest.mark.slow
def test_principal_without_id_is_checked_not_skipped(tmp_path: Path) -> None:
    con = _store(
        tmp_path,
        {
            "groups-only": {"groups": ["staff"]},
            "tenant-only": {"tenant": "acme"},
            "nothing": {},
        },
    )
    report = check_run(con, "r")
    assert _leaks(con) == {
        ("groups-only", "nobody#1", "acl-no-overlap"),
        # no tenant on the principal: tenants are compared only when both sides name one
        ("tenant-only", "open#1", "acl-no-overlap"),  # no groups: sees no acl'd unit
        ("tenant-only", "nobody#1", "acl-no-overlap"),
        ("tenant-only", "other#1", "acl-no-overlap"),
        ("tenant-only", "other#1", "tenant-mismatch"),
    }
    assert report.unchecked.column("case_id").to_pylist() == ["nothing"]
    counts = report.counts()
    assert (counts["unchecked_cases"], counts["leaked_cases"], counts["leaked_result_rows"]) == (1, 2, 4)
    assert counts["leak_findings"] == 5


@pytest.mark.slow
def test_unchecked_cases_are_counted_by_check_and_by_the_gate(tmp_path: Path) -> None:
    _store(tmp_path, {"ok": {"id": "u", "groups": ["staff"], "tenant": "acme"}, "anon": None}).close()
    db = str(tmp_path / "store.duckdb")
    res = runner.invoke(app, ["check", "--db", db, "--run", "r"])
    assert "FAILED: leakage; 1 case(s) NOT CHECKED (no principal)" in res.output
    assert "unchecked (no principal): anon" in res.output
    gate = tmp_path / "g.toml"
    gate.write_text('[gate]\nname = "g"\n')
    res = runner.invoke(app, ["gate", "--db", db, "--gate", str(gate), "--run", "r", "--baseline", "r", "--no-record"])
    assert res.exit_code == 1
    assert "note: 1 case(s) unchecked (no principal): anon" in res.output


@pytest.mark.parametrize(
    ("principal", "message"),
    [
        ({"id": "u", "groups": "staff"}, "principal.groups: wrong type: expected a list of strings"),
        ({"id": "u", "groups": ["staff", 7]}, "principal.groups: wrong type: expected a list of strings"),
        ({"id": ["u"], "groups": ["staff"]}, "principal.id: wrong type: expected a string"),
        ({"tenant": {"name": "acme"}}, "principal.tenant: wrong type: expected a string"),
    ],
)
def test_mistyped_principal_is_refused(tmp_path: Path, principal: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationFailed) as info:
        _store(tmp_path, {"q": principal})
    (error,) = info.value.errors
    assert (error.line, error.field, error.message) == (1, "principal", message)
