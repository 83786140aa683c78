"""`compare --runs` (many runs x many measures against one baseline) and `report` (the same as HTML/Markdown).

Thin: parse options, call ``ragtriage.app.compare``, print its sections (``ragtriage.app.render``). Heavy
modules are imported inside the command functions so that ``ragtriage --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ragtriage.cli._app import app, classified_first, fail, output_path, split_runs, store_for
from ragtriage.cli.metrics_options import Cases, CasesOpt, Labels, MinOverlapOpt, StoreThresholdOpt, asked
from ragtriage.paths import DEFAULT_DB

if TYPE_CHECKING:
    import duckdb

    from ragtriage.app.compare import Changes
    from ragtriage.app.render.output import Format
    from ragtriage.experiments.runs_table import RunsComparison
    from ragtriage.gate.config import GateConfig


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


@contextlib.contextmanager
def open_for_comparison(
    db: Path, gate: Path | None, *, classify: bool
) -> Iterator[tuple[duckdb.DuckDBPyConnection, GateConfig | None]]:
    """The store read-only and the parsed gate file for a comparison: a bad gate file is refused before the store
    is touched, classifications are stored first when the comparison reads them (``classify``), and every input
    error in the block exits 2."""
    from ragtriage.gate.config import GateFileError, parse_gate

    try:
        config = parse_gate(gate) if gate is not None else None
    except GateFileError as exc:
        raise fail(exc) from exc
    if classify:
        classified_first(db)
    with store_for(db) as con:
        yield con, config


def compare_many_cmd(
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
    """``app.compare.compare_many`` on the store after the options are checked; exit 2 on unusable input."""
    from ragtriage.app.compare import compare_many
    from ragtriage.cli import arg_checks

    arg_checks.measures("--measure", measures)
    arg_checks.between("--alpha", alpha, 0.0, 1.0, open_low=True)
    arg_checks.at_least("--resamples", resamples, 1)
    with open_for_comparison(db, gate, classify=categories or gate is not None) as (con, config):
        return compare_many(
            con,
            runs,
            baseline,
            measures,
            by=by,
            split=split,
            test=test.value,
            correction=correction.value,
            alpha=alpha,
            seed=seed,
            resamples=resamples,
            categories=categories,
            gate=config,
            explain=explain,
        )


def print_comparison(rc: RunsComparison, changes: Changes, fmt: Format) -> None:
    from ragtriage.app.render.comparison import comparison_text, print_sections, sections

    text = comparison_text(rc, changes, fmt)
    if text is None:
        print_sections(sections(rc, changes, compact=True))
    else:
        typer.echo(text, nl=False)


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
    min_overlap: MinOverlapOpt = None,
) -> None:
    """Publish a comparison of several runs: table, configuration diff, per-slice and per-category changes, the
    cause of every regressed case (as compare --explain), plots.

    It opens with one sentence per run: what blocks it (leakage; with --gate, the rules it fails), then the
    measures it is better or worse on against the baseline, significant or not.
    """
    from ragtriage.app.render import charts
    from ragtriage.app.render.comparison import sections
    from ragtriage.app.render.html import to_html, to_markdown

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
    with asked(Labels.human, cases, threshold, min_overlap):
        rc, changes = compare_many_cmd(
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
    parts = sections(rc, changes)
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
