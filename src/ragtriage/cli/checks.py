"""`check` and `calibrate`: the safety verdict of a run, and the abstention threshold it is judged with."""

from __future__ import annotations

import json
import math
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import duckdb
import pyarrow.compute as pc
import typer
from rich.console import Console
from rich.table import Table

from ragtriage.checks import DEFAULT_TARGET_RECALL, CalibrationError, calibrate, check_run, store_threshold
from ragtriage.checks.calibration import Calibration
from ragtriage.checks.report import CheckReport
from ragtriage.cli._app import app, shown
from ragtriage.cli._app import fail as _fail
from ragtriage.cli._app import open_existing as _open
from ragtriage.csv_out import csv_text
from ragtriage.safe_text import visible
from ragtriage.store import DEFAULT_DB, StoreError

console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

DbOpt = Annotated[Path, typer.Option("--db", help="DuckDB store file.")]
RunOpt = Annotated[str, typer.Option("--run", help="run_id to check (see `ragtriage info`).")]


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def _print_report(report: CheckReport, limit: int) -> None:
    verdict = "PASSED"
    if report.leakage.num_rows:
        verdict = "FAILED: leakage"
    elif not report.passed:
        verdict = "FAILED: a missing optional filter broadened access"
    unchecked = report.unchecked["case_id"].to_pylist()
    if unchecked:
        verdict += f" ({len(unchecked)} case(s) unchecked: no principal)"
    console.print(visible(f"run {report.run_id}: {verdict}"), markup=False, highlight=False)
    summary = Table("check", "count", title="summary", title_justify="left")
    for name, value in report.counts().items():
        summary.add_row(name.replace("_", " "), str(value))
    console.print(summary)
    if unchecked:
        console.print(visible("unchecked (no principal): " + ", ".join(unchecked)), markup=False, highlight=False)
    findings = report.findings()
    findings = findings.filter(pc.not_equal(findings["check"], "unchecked"))
    if findings.num_rows == 0:
        console.print("no findings")
        return
    for check_name in dict.fromkeys(findings["check"].to_pylist()):
        part = findings.filter(pc.equal(findings["check"], check_name)).to_pylist()
        # every leak is printed; the other sections are capped so the leaks stay readable
        rows = part if check_name == "leakage" or limit <= 0 else part[:limit]
        table = Table(title=f"{check_name} ({len(part)})", title_justify="left")
        for name in ("case", "stage", "rank", "unit", "rule", "detail"):
            table.add_column(name, overflow="fold")
        for r in rows:
            unit = r["chunk_id"] or r["document_id"] or ""
            table.add_row(*(shown(v) for v in (r["case_id"], r["stage"], r["rank"], unit, r["rule"], r["detail"])))
        console.print(table)
        if len(rows) < len(part):
            console.print(f"… {len(part) - len(rows)} more {check_name} rows: --limit 0 or --format csv for all")


def _close(con: duckdb.DuckDBPyConnection | None) -> None:
    if con is not None:
        con.close()


@app.command()
def check(
    run: RunOpt,
    db: DbOpt = Path(DEFAULT_DB),
    fmt: Annotated[Format, typer.Option("--format", help="Output: table, json or csv (one row per finding).")] = (
        Format.table
    ),
    strict: Annotated[bool, typer.Option(help="Also exit 1 on scope violations and failed negative cases.")] = False,
    limit: Annotated[int, typer.Option(help="Rows per non-leak section in table output (0: all).")] = 20,
) -> None:
    """Leakage, filter scope, negative cases and stale documents of one run. Exit 1 if anything leaked."""
    con = None
    try:
        con = _open(db, read_only=True)
        report = check_run(con, run)
    except (StoreError, duckdb.Error, OSError) as exc:
        raise _fail(exc) from exc
    finally:
        _close(con)
    if fmt is Format.json:
        typer.echo(json.dumps(report.to_dict(), indent=2, default=str))
    elif fmt is Format.csv:
        typer.echo(csv_text(report.findings()), nl=False)
    else:
        _print_report(report, limit)
    ok = report.strict_passed if strict else report.passed
    if not ok:
        raise typer.Exit(1)


def _print_calibration(cal: Calibration) -> None:
    table = Table(
        "threshold",
        "answerable kept",
        "negatives abstained",
        "",
        title=shown(
            f"run {cal.run_id}: trade-off "
            "(kept: top score >= threshold; abstained: top score < threshold or no results)"
        ),
        title_justify="left",
    )
    for row in cal.table.to_pylist():
        mark = "<- chosen" if math.isclose(row["threshold"], cal.threshold) else ""
        abst = "n/a" if not row["negatives_total"] else f"{row['abstained_rate']:.1%}"
        table.add_row(
            f"{row['threshold']:.6g}",
            f"{row['answerable_kept']}/{row['answerable_total']} ({row['kept_rate']:.1%})",
            f"{row['negatives_abstained']}/{row['negatives_total']} ({abst})",
            mark,
        )
    console.print(table)
    how = f"highest threshold keeping >= {cal.target_recall:.0%} of answerable cases" if cal.target_recall else "given"
    scope = f" (split {cal.split})" if cal.split else ""
    console.print(
        f"threshold {cal.threshold:.6g} ({how}){scope}: keeps {cal.answerable_kept}/{cal.answerable_total} answerable, "
        f"abstains on {cal.negatives_abstained}/{cal.negatives_total} negatives; "
        f"{cal.excluded} answerable case(s) left out (top result not relevant or unscored)",
        markup=False,
        highlight=False,
    )


@app.command("calibrate")
def calibrate_cmd(
    run: RunOpt,
    db: DbOpt = Path(DEFAULT_DB),
    target_recall: Annotated[
        float | None, typer.Option(help=f"Share of answerable cases to keep (default {DEFAULT_TARGET_RECALL}).")
    ] = None,
    threshold: Annotated[float | None, typer.Option(help="Store this threshold instead of choosing one.")] = None,
    split: Annotated[str | None, typer.Option(help="Calibrate on one split only (e.g. dev).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the trade-off table; store nothing.")] = False,
) -> None:
    """Choose a score threshold for one run from the labels and store it with that run."""
    if target_recall is not None and threshold is not None:
        raise _fail(ValueError("give --target-recall or --threshold, not both"))
    con = None
    try:
        con = _open(db, read_only=dry_run)
        cal = calibrate(
            con, run, target_recall=target_recall or DEFAULT_TARGET_RECALL, threshold=threshold, split=split
        )
        _print_calibration(cal)
        if dry_run:
            console.print("dry run: nothing stored")
            return
        store_threshold(con, run, cal.threshold)
    except (StoreError, CalibrationError, duckdb.Error, OSError) as exc:
        raise _fail(exc) from exc
    finally:
        _close(con)
    console.print(visible(f"stored score_threshold {cal.threshold:.6g} for run {run}"), markup=False, highlight=False)
