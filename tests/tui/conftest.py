"""A small store for the TUI tests, loaded through the real loader and read through the real core: five cases
(markup in one query, a hostile one with terminal escapes, bidi and a 10,000-character unit id), a leak, a
zero-hit, a dataset defect (a label on a unit missing from the corpus), two runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtriage.notes import NotesStore, notes_path_for
from tests.factory import make_store

DOCS = [
    {
        "document_id": "d1",
        "chunk_id": "d1#1",
        "title": "Passwords",
        "text": "Reset via [b]SSO[/b] portal",
        "doc_type": "policy",
        "tenant": "acme",
        "acl": ["eng"],
        "status": "current",
        "chunk_kind": "body",
    },
    {
        "document_id": "d1",
        "chunk_id": "d1#2",
        "title": "Passwords",
        "text": "Heading only",
        "doc_type": "policy",
        "tenant": "acme",
        "acl": ["eng"],
        "status": "current",
        "chunk_kind": "heading",
    },
    {
        "document_id": "d2",
        "chunk_id": "d2#1",
        "title": "Salary bands",
        "text": "HR only",
        "doc_type": "policy",
        "tenant": "acme",
        "acl": ["hr"],
        "status": "current",
        "chunk_kind": "table",
    },
    {
        "document_id": "d3",
        "chunk_id": "d3#1",
        "title": "VPN FAQ",
        "text": "Install the client",
        "doc_type": "faq",
        "tenant": "acme",
        "acl": ["eng"],
        "status": "current",
        "chunk_kind": "body",
    },
]
PRINCIPAL = {"id": "u1", "groups": ["eng"], "tenant": "acme"}
CASES = [
    {"id": "q1", "query": "reset password [red]now[/red]", "principal": PRINCIPAL, "query_type": "lookup"},
    {"id": "q2", "query": "vpn setup", "principal": PRINCIPAL, "query_type": "howto"},
    {"id": "q3", "query": "salary bands", "principal": PRINCIPAL, "query_type": "lookup"},
    {
        "id": "q4",
        "query": "=cmd|' /C calc'!A0",
        "principal": PRINCIPAL,
        "answerable": False,
        "expected_behavior": "empty",
        "query_type": "negative",
    },
]
HOSTILE_QUERY = "\x1b[2J\x1b]8;;http://evil.example\x07link\x1b]8;;\x07 \x1b]52;c;ZXZpbA==\x07 \u202eevil [bold]x[/]"
LONG_UNIT = "d9#" + "x" * 9997  # a 10,000-character unit id
CASES.append({"id": "q10", "query": HOSTILE_QUERY, "principal": PRINCIPAL, "query_type": "lookup"})
DOCS.append(
    {
        "document_id": "d9",
        "chunk_id": LONG_UNIT,
        "title": "\x1b[31mred title",
        "text": "long id",
        "doc_type": "faq",
        "tenant": "acme",
        "acl": ["eng"],
        "status": "current",
        "chunk_kind": "body",
    }
)
LABELS = [
    {"case_id": "q1", "document_id": "d1", "chunk_id": "d1#1", "grade": 3},
    {"case_id": "q2", "document_id": "d3", "chunk_id": "d3#1", "grade": 2},
    {"case_id": "q3", "document_id": "d1", "chunk_id": "d1#2", "grade": 2},
    {"case_id": "q10", "document_id": "d9", "chunk_id": LONG_UNIT, "grade": 3},
    {"case_id": "q10", "document_id": "d1", "chunk_id": "d1#9", "grade": 2},  # a chunk the snapshot lacks
]


def _results(q1_first: str) -> list[dict[str, object]]:
    return [
        {"case_id": "q1", "document_id": "d1", "chunk_id": q1_first, "score": 0.9},
        {"case_id": "q1", "document_id": "d1", "chunk_id": "d1#1" if q1_first == "d1#2" else "d1#2", "score": 0.5},
        {"case_id": "q2", "document_id": "d1", "chunk_id": "d1#2", "score": 0.4},
        {"case_id": "q3", "document_id": "d2", "chunk_id": "d2#1", "score": 0.8},
        {"case_id": "q3", "document_id": "d1", "chunk_id": "d1#2", "score": 0.3},
        {"case_id": "q4", "document_id": "d3", "chunk_id": "d3#1", "score": 0.2},
        {"case_id": "q2", "stage": "candidate", "document_id": "d3", "chunk_id": "d3#1", "score": 0.1},
        {"case_id": "q10", "document_id": "d9", "chunk_id": LONG_UNIT, "score": 0.7},
    ]


RUNS = [
    {"run": {"run_id": "bm25", "k": 2, "candidate_k": 5}, "results": _results("d1#2")},
    {"run": {"run_id": "hybrid", "k": 2, "candidate_k": 5}, "results": _results("d1#1")},
]


def _store(tmp_path: Path, runs: list[dict[str, object]], db: str) -> Path:
    con = make_store(tmp_path, cases=CASES, labels=LABELS, documents=DOCS, runs=runs, db=db)
    con.close()
    return tmp_path / db


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return _store(tmp_path, RUNS, "t.duckdb")


#: A third run for the N-run Compare: q1, q2 and q3 find their relevant unit first, q10 finds nothing.
DENSE_RESULTS = [
    {"case_id": "q1", "document_id": "d1", "chunk_id": "d1#1", "score": 0.9},
    {"case_id": "q2", "document_id": "d3", "chunk_id": "d3#1", "score": 0.8},
    {"case_id": "q3", "document_id": "d1", "chunk_id": "d1#2", "score": 0.7},
    {"case_id": "q4", "document_id": "d3", "chunk_id": "d3#1", "score": 0.2},
]


@pytest.fixture
def three_runs_db(tmp_path: Path) -> Path:
    """conftest's store with a third run, ``dense``, of the same dataset."""
    dense = {"run": {"run_id": "dense", "k": 2, "candidate_k": 5}, "results": DENSE_RESULTS}
    return _store(tmp_path, [*RUNS, dense], "t3.duckdb")


# The hostile additions of the untrusted-input audit: a run id, case ids, slice values, an event error, a snippet
# and a note holding terminal escapes, OSC 8 links, bidi controls, Rich markup and spreadsheet formulas.
ESC, OSC8, BIDI = "\x1b[2J", "\x1b]8;;http://x\x07click\x1b]8;;\x07", "\u202eevil"
MARKUP, LINK, FORMULA = "[bold red]x[/]", "[link=http://evil.example]l[/link]", "=cmd|'/C calc'!A0"
EVIL_RUN = "evil" + ESC + "[b]run[/b]"
EVIL_CASE = "q7" + ESC + BIDI
MARKUP_CASE = "[bold]q8[/]"
HOSTILE_NOTE = f"note {ESC}{OSC8} {BIDI} {MARKUP} {LINK}\n{FORMULA}"


@pytest.fixture
def hostile_db(tmp_path: Path) -> Path:
    """conftest's store plus the hostile strings above: two leaking cases (q3, and q8 whose id is markup), slice
    values that are escapes, markup and an OSC 8 link, a hostile baseline run id and a hostile note on q3."""
    cases = [dict(c) for c in CASES]
    cases[1]["query_type"] = ESC + MARKUP
    cases[2]["query_type"] = LINK + BIDI
    cases.append({"id": EVIL_CASE, "query": "w" * 400 + " " + OSC8, "principal": PRINCIPAL, "query_type": OSC8})
    cases.append({"id": MARKUP_CASE, "query": f"{FORMULA} {MARKUP}", "principal": PRINCIPAL, "query_type": "lookup"})
    labels = [
        *LABELS,
        {"case_id": EVIL_CASE, "document_id": "d3", "chunk_id": "d3#1", "grade": 3},
        {"case_id": MARKUP_CASE, "document_id": "d2", "chunk_id": "d2#1", "grade": 2},
    ]

    def results(first: str) -> list[dict[str, object]]:
        return [
            *_results(first),
            {"case_id": EVIL_CASE, "document_id": "d1", "chunk_id": "d1#2", "score": 0.5, "snippet": ESC + OSC8},
            {"case_id": MARKUP_CASE, "document_id": "d2", "chunk_id": "d2#1", "score": 0.5, "snippet": FORMULA},
        ]

    events = [
        {
            "case_id": "q2",
            "latency_ms": 12.0,
            "status": "error",
            "error": f"{ESC}boom {MARKUP}{OSC8}",
            "timed_out": True,
        }
    ]
    con = make_store(
        tmp_path,
        cases=cases,
        labels=labels,
        documents=DOCS,
        runs=[
            {"run": {"run_id": "bm25", "k": 2, "candidate_k": 5}, "results": results("d1#2"), "events": events},
            {"run": {"run_id": EVIL_RUN, "k": 2, "candidate_k": 5}, "results": results("d1#1")},
        ],
        db="h.duckdb",
        allow_control_ids=True,
    )
    con.close()
    path = tmp_path / "h.duckdb"
    NotesStore(notes_path_for(path)).set("bm25", "q3", author="mallory", note=HOSTILE_NOTE)
    return path
