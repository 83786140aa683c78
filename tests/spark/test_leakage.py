"""The leakage check on Spark gives the DuckDB check's rows: on the bundled sample and on hostile edge cases."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from ragtriage.checks import leakage, unchecked_cases
from ragtriage.contract.errors import ValidationFailed
from ragtriage.store import connect
from tests.factory import SAMPLE, load_sample, make_store, write_jsonl
from tests.spark.conftest import SPARK_MARKS
from tests.unit.test_checks_leakage import CASES, DOCS, LABELS, RESULTS, doc, res

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = SPARK_MARKS

KEY = ["stage", "case_id", "rank", "rule"]


def rows(table: pa.Table) -> list[dict[str, Any]]:
    """Rows in one order both engines agree on (the engines' own string orders may differ outside ASCII)."""
    return sorted(table.to_pylist(), key=lambda r: tuple(str(r[k]) for k in KEY))


def spark_rows(
    spark: SparkSession, dataset: Path, run: Path, *, acl_required: bool = False
) -> tuple[pa.Table, pa.Table]:
    from ragtriage.spark.folders import read_inputs
    from ragtriage.spark.leakage import leakage as spark_leakage
    from ragtriage.spark.leakage import unchecked_cases as spark_unchecked

    inputs = read_inputs(spark, dataset, run)
    if acl_required:
        inputs = replace(inputs, acl_required=True)
    return spark_leakage(spark, inputs).toArrow(), spark_unchecked(spark, inputs).toArrow()


def test_sample_runs_leak_the_same_rows_on_both_engines(spark: SparkSession, tmp_path: Path) -> None:
    runs = ("no-acl-filter", "hybrid-rerank")
    con = connect(load_sample(tmp_path / "sample.duckdb", runs), read_only=True)
    for run in runs:
        leaks, unchecked = spark_rows(spark, SAMPLE / "dataset", SAMPLE / "runs" / run)
        duck = leakage(con, run)
        assert leaks.column_names == duck.column_names
        assert rows(leaks) == rows(duck)
        # ASCII ids: the engines' LEAK_ORDER is the same order, row for row
        assert leaks.select(KEY).to_pylist() == duck.select(KEY).to_pylist()
        assert unchecked.to_pylist() == unchecked_cases(con, run).to_pylist()
    assert leakage(con, "no-acl-filter").num_rows == 3873  # the misconfigured run leaks: the test compares rows
    assert set(leakage(con, "no-acl-filter")["rule"].to_pylist()) == {"acl-no-overlap", "tenant-mismatch"}


# Ids with regular-expression syntax and Java's quote terminator \E, a non-ASCII id, terminal escapes and markup in
# the texts searched, a principal without groups, an empty acl (admits nobody), and a unit absent from the manifest.
ODD_ID = r"HR.X+(1)\E*[z]"
WIDE_ID = "ÜBER-GEHÄLTER-7"
HOSTILE = '\x1b[2J [bold]x[/] =HYPERLINK("http://x") \u202e'
EDGE_DOCS = [
    *DOCS,
    doc(ODD_ID, ["hr"]),
    doc(WIDE_ID, ["hr"], text="Gehälter der Abteilung stehen nur der Personalabteilung offen " + HOSTILE),
    doc("HAL-NOBODY", []),
]
EDGE_CASES = [
    *CASES,
    {"id": "odd", "query": "q", "principal": {"id": "emma", "groups": ["all-staff"], "tenant": "halvorsen"}},
    {"id": "groupless", "query": "q", "principal": {"id": "nog", "tenant": "halvorsen"}},
]
EDGE_RESULTS = [
    *RESULTS,
    res("odd", "HAL-FAQ-2", 1, snippet=f"see {ODD_ID} for the bands {HOSTILE}"),  # the odd id, whole
    res("odd", "HAL-FAQ-2", 2, snippet=f"see {ODD_ID}z too"),  # inside a longer token: not a mention
    res("odd", "HAL-POL-1", 3, metadata={"see": [WIDE_ID], "note": HOSTILE}),
    res("odd", "HAL-NOBODY", 4),
    res("odd", ODD_ID, 5, "candidate"),
    res("groupless", "HAL-FAQ-2", 1),
    res("groupless", "HAL-OPEN", 2),
]


@pytest.mark.parametrize(("unit", "acl_required"), [("chunk", False), ("document", True)])
def test_edge_cases_leak_the_same_rows_on_both_engines(
    spark: SparkSession, tmp_path: Path, unit: str, acl_required: bool
) -> None:
    dataset = {"name": "t", "version": "1", "unit": unit, "relevance_threshold": 2}
    con = make_store(
        tmp_path,
        dataset=dataset,
        cases=EDGE_CASES,
        labels=LABELS,
        documents=EDGE_DOCS,
        runs=[{"run": {"run_id": "r", "k": 10}, "results": EDGE_RESULTS}],
    )
    if acl_required:  # the loader refuses acl-less units once acl_required is set: the flag is raised after
        con.execute("UPDATE datasets SET acl_required = true")
    duck = leakage(con, "r")
    leaks, unchecked = spark_rows(spark, tmp_path / "dataset", tmp_path / "run0", acl_required=acl_required)
    assert rows(leaks) == rows(duck)
    assert unchecked.to_pylist() == unchecked_cases(con, "r").to_pylist()
    found = {(r["case_id"], r["rank"], r["rule"]) for r in duck.to_pylist()}
    # every kind of rule is exercised, so equal rows are not equal emptiness
    assert ("odd", 1, "snippet-of-forbidden-unit") in found
    assert ("odd", 2, "snippet-of-forbidden-unit") not in found
    assert ("odd", 3, "metadata-of-forbidden-unit") in found
    assert ("odd", 4, "acl-no-overlap") in found
    assert ("groupless", 1, "acl-no-overlap") in found
    assert ("groupless", 2, "acl-missing") in found if acl_required else ("groupless", 2, "acl-missing") not in found
    assert {"tenant-mismatch"} <= {r for _, _, r in found}


def test_a_row_without_a_case_id_is_refused_naming_file_and_field(spark: SparkSession, tmp_path: Path) -> None:
    from ragtriage.spark.folders import read_inputs

    make_store(tmp_path, cases=CASES, labels=LABELS, documents=DOCS, runs=[])
    run = tmp_path / "bad-run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "bad", "k": 10}), encoding="utf-8")
    write_jsonl(run / "results.jsonl", [res("multi", "HAL-POL-1", 1), {"rank": 2, "document_id": "HAL-POL-1"}])
    with pytest.raises(ValidationFailed) as caught:
        read_inputs(spark, tmp_path / "dataset", run)
    (finding,) = caught.value.errors
    assert (finding.file, finding.field) == (str(run / "results.jsonl"), "case_id")
    assert "1 row(s): no case_id" in finding.message
