"""`compare --runs` (many runs x many measures against one baseline) and `report` (the same as HTML/Markdown).

Thin: parse options, call ``ragtriage.experiments``, print its sections. Heavy modules are imported inside the
command functions so that ``ragtriage --help`` stays fast.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from ragtriage.cli._app import app, classified_first, fail, open_existing, output_path
from ragtriage.cli.metrics_options import Cases, CasesOpt, Labels, StoreThresholdOpt, asked
from ragtriage.paths import DEFAULT_DB

if TYPE_CHECKING:
    from ragtriage.experiments.render import Changes, Section
    from ragtriage.experiments.runs_table import RunsComparison


class Test(StrEnum):
    randomization = "randomization"
    t = "t"
    wilcoxon = "wilcoxon"


class Correction(StrEnum):
    holm = "holm"
    bh = "bh"


RunsOpt = Annotated[
    list[str] | None, typer.Option("--runs", help="Runs to compare, comma-separated (or repeat the option).")
]
MeasureOpt = Annotated[
    list[str] | None, typer.Option("--measure", help="ir_measures name, e.g. nDCG@10, R@100, RR@10; repeat.")
]
TestOpt = Annotated[Test, typer.Option("--test", help="Paired test: randomization | t | wilcoxon.")]
CorrectionOpt = Annotated[
    Correction, typer.Option("--correction", help="Over all comparisons of the table: holm | bh (Benjamini-Hochberg).")
]


def split_runs(values: list[str] | None) -> list[str]:
    """``["a,b", "c"]`` → ``["a", "b", "c"]`` (a run id cannot hold a comma here)."""
    return [p.strip() for v in values or [] for p in v.split(",") if p.strip()]


def print_sections(parts: list[Section]) -> None:
    """Each section as a rich table of literal text (run ids and slice values may hold markup or escapes)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ragtriage.safe_text import visible

    console = Console(highlight=False)
    for s in parts:
        console.print(Text(visible(s.title), style="bold"))
        if s.prose:
            for n in s.notes:
                console.print(Text("  " + visible(n)))
            console.print()
            continue
        if not s.rows:
            console.print(Text("  (none)"))
        elif s.transitions:  # long values: one line each rather than a table squeezed into 80 columns
            for run, key, before, after in s.rows:
                console.print(Text(f"  {visible(run)}  {visible(key)}: {visible(before)} → {visible(after)}"))
        else:
            table = Table(box=None, pad_edge=False, padding=(0, 1), header_style="bold")
            for i, h in enumerate(s.headers):
                justify: Literal["left", "right"] = "left" if i < s.text_columns else "right"
                table.add_column(Text(visible(h)), no_wrap=True, justify=justify)
            for row in s.rows:
                table.add_row(*(Text(visible(c)) for c in row))
            console.print(table)
        for n in s.notes:
            console.print(Text("  " + visible(n)))
        console.print()


def build(
    db: Path,
    runs: list[str],
    baseline: str,
    measures: list[str],
    *,
    by: str | None,
    split: str | None,
    test: Test,
    correction: Correction,
    alpha: float,
    seed: int,
    resamples: int,
    categories: bool,
    gate: Path | None = None,
    explain: bool = False,
) -> tuple[RunsComparison, Changes]:
    """Open the store read-only, compute the comparison, what the caller asked of ``where_changed`` and each run's
    leakage (and, with ``gate``, the gate's failed rules for each candidate); exit 2 on unusable input."""
    import duckdb

    from ragtriage.cli import arg_checks
    from ragtriage.gate.config import GateFileError, parse_gate

    arg_checks.measures("--measure", measures)
    arg_checks.between("--alpha", alpha, 0.0, 1.0, open_low=True)
    arg_checks.at_least("--resamples", resamples, 1)
    try:
        config = parse_gate(gate) if gate is not None else None
    except GateFileError as exc:
        raise fail(exc) from exc

    from ragtriage.experiments.explain import explain_runs
    from ragtriage.experiments.render import Changes
    from ragtriage.experiments.runs_table import DEFAULT_MEASURES, compare_runs
    from ragtriage.experiments.safety import run_safety
    from ragtriage.experiments.where_changed import category_changes, slice_deltas
    from ragtriage.store import StoreError

    if categories or config is not None:
        classified_first(db)
    try:
        con = open_existing(db, read_only=True)
    except (StoreError, duckdb.Error) as exc:
        raise fail(exc) from exc
    try:
        rc = compare_runs(
            con,
            runs,
            baseline,
            measures or DEFAULT_MEASURES,
            split=split,
            test=test.value,
            correction=correction.value,
            alpha=alpha,
            seed=seed,
            n_resamples=resamples,
        )
        slices = slice_deltas(con, rc, by) if by else None
        counts, moved = category_changes(con, rc) if categories else (None, None)
        safety = run_safety(con, rc.runs, gate=config, baseline=rc.baseline)
        explained, causes = explain_runs(con, rc) if explain else (None, None)
    except (StoreError, ValueError, duckdb.Error) as exc:
        raise fail(exc) from exc
    finally:
        con.close()
    changes = Changes(by, slices, counts, moved, safety, explained=explained, causes=causes)
    return rc, changes


def print_comparison(rc: RunsComparison, changes: Changes, fmt: str) -> None:
    from ragtriage.experiments import render

    if fmt == "json":
        typer.echo(render.to_json(rc, changes), nl=False)
    elif fmt == "csv" and changes.explained is not None:  # --explain: one row per drop, its evidence as JSON
        from ragtriage.csv_out import csv_text

        typer.echo(csv_text(changes.explained), nl=False)
    elif fmt == "csv":
        typer.echo(render.to_csv(rc, changes), nl=False)
    elif fmt == "markdown":
        typer.echo(render.to_markdown(render.sections(rc, changes)), nl=False)
    else:
        print_sections(render.sections(rc, changes, compact=True))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "plot"


@app.command()
def report(
    runs: RunsOpt = None,
    baseline: Annotated[str, typer.Option("--baseline", help="Baseline run id.")] = "",
    db: Annotated[Path, typer.Option("--db", help="DuckDB store file.")] = Path(DEFAULT_DB),
    measure: MeasureOpt = None,
    by: Annotated[str, typer.Option("--by", help="Slice column of the per-slice table and heatmap.")] = "query_type",
    split: Annotated[str | None, typer.Option("--split", help="Only cases of this split (dev|holdout).")] = None,
    html_out: Annotated[Path | None, typer.Option("--html", help="Write a self-contained HTML report here.")] = None,
    md_out: Annotated[
        Path | None, typer.Option("--markdown", help="Write a Markdown report here (plots beside it).")
    ] = None,
    test: TestOpt = Test.randomization,
    correction: CorrectionOpt = Correction.holm,
    alpha: Annotated[float, typer.Option(help="Significance level after correction.")] = 0.05,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and randomization test.")] = 0,
    resamples: Annotated[int, typer.Option(help="Randomization resamples.")] = 10_000,
    gate: Annotated[
        Path | None,
        typer.Option("--gate", help="Gate file (TOML): the opening names the rules each candidate fails."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing output files.")] = False,
    cases: CasesOpt = Cases.all,
    threshold: StoreThresholdOpt = None,
) -> None:
    """Publish a comparison of several runs: table, configuration diff, per-slice and per-category changes, the
    cause of every regressed case (as compare --explain), plots.

    It opens with one sentence per run: what blocks it (leakage; with --gate, the rules it fails), then the
    measures it is better or worse on against the baseline, significant or not.
    """
    from ragtriage.experiments import charts, render
    from ragtriage.experiments.report_html import to_html, to_markdown

    run_ids = split_runs(runs)
    if not baseline or not run_ids:
        raise fail(ValueError("give --runs a,b,... and --baseline RUN"))
    if html_out is None and md_out is None:
        raise fail(ValueError("give --html FILE and/or --markdown FILE"))
    plot_dir = md_out.with_name(md_out.stem + "-plots") if md_out else None
    targets = [p for p in (html_out, md_out) if p is not None]
    for target in targets:
        output_path(target, db, force)
    if plot_dir is not None and plot_dir.exists() and not force:
        raise fail(ValueError(f"{plot_dir}: exists (the Markdown report's plots go there); pass --force"))
    with asked(Labels.human, cases, threshold):
        rc, changes = build(
            db,
            run_ids,
            baseline,
            measure or [],
            by=by,
            split=split,
            test=test,
            correction=correction,
            alpha=alpha,
            seed=seed,
            resamples=resamples,
            categories=True,
            gate=gate,
            explain=True,
        )
    parts = render.sections(rc, changes)
    plots = charts.charts(rc, by, changes.slices)
    title = f"ragtriage: {', '.join(rc.candidates)} against {rc.baseline}"
    if html_out is not None:
        html_out.write_text(to_html(title, parts, plots), encoding="utf-8")
        typer.echo(f"wrote {html_out}")
    if md_out is not None:
        files: dict[str, str] = {}
        if plots and plot_dir is not None:
            plot_dir.mkdir(exist_ok=True)
            for i, (caption, svg) in enumerate(plots.items(), start=1):
                name = f"{i}-{_slug(caption)}.svg"
                (plot_dir / name).write_text(svg, encoding="utf-8")
                files[caption] = f"{plot_dir.name}/{name}"
        md_out.write_text(to_markdown(title, parts, files), encoding="utf-8")
        typer.echo(f"wrote {md_out}" + (f" and {len(files)} plot(s) in {plot_dir}" if files else ""))
    if not plots:
        typer.echo(f"no plots: matplotlib is not installed ({charts.INSTALL_HINT})", err=True)
