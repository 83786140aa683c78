"""`compare` and `gate`: a candidate run against a baseline, as figures or as a release decision.

Exit codes of `gate`: 0 every rule passed, 1 a rule failed, 2 the input could not be used (bad gate file, unknown
run, dataset-version mismatch). `compare` exits 0 or 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ragtriage.app.render.output import Format
from ragtriage.cli import arg_checks
from ragtriage.cli._app import (
    DEFAULT_DB_PATH,
    FORCE_HELP,
    DbOpt,
    FormatOpt,
    app,
    classified_first,
    open_existing,
    output_path,
    say,
    show,
    split_runs,
    store_for,
)
from ragtriage.cli._app import fail as _fail
from ragtriage.cli.experiments import (
    Correction,
    CorrectionOpt,
    MeasureOpt,
    RunsOpt,
    Test,
    TestOpt,
    compare_many_cmd,
)
from ragtriage.cli.metrics_options import (
    Cases,
    CasesOpt,
    Labels,
    LabelsOpt,
    MinOverlapOpt,
    StoreThresholdOpt,
    asked,
)
from ragtriage.contract.limits import MAX_CUTOFF
from ragtriage.safe_text import visible

console = Console(soft_wrap=True, highlight=False)

BaseOpt = Annotated[str, typer.Option("--baseline", help="Baseline run id.")]


@app.command()
def compare(
    baseline: BaseOpt,
    run: Annotated[str | None, typer.Option("--run", help="Candidate run id (one candidate, every metric).")] = None,
    runs: RunsOpt = None,
    db: DbOpt = DEFAULT_DB_PATH,
    measure: MeasureOpt = None,
    k: Annotated[
        list[int] | None,
        typer.Option("--k", min=1, max=MAX_CUTOFF, help="Cutoff(s); repeat for several. Default 3, 5, 10."),
    ] = None,
    by: Annotated[str | None, typer.Option("--by", help="Slice column, e.g. query_type or doc_type.")] = None,
    split: Annotated[str | None, typer.Option("--split", help="Only cases of this split (dev|holdout).")] = None,
    metric: Annotated[list[str] | None, typer.Option("--metric", help="Only these metrics, e.g. nDCG@5.")] = None,
    test: TestOpt = Test.randomization,
    correction: CorrectionOpt = Correction.holm,
    alpha: Annotated[float, typer.Option(help="Significance level after correction (--runs/--measure).")] = 0.05,
    categories: Annotated[
        bool, typer.Option("--categories", help="Also count failures added/fixed per defect category (classifier).")
    ] = False,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and randomization test.")] = 0,
    resamples: Annotated[
        int, typer.Option(help="Randomization (sign-flip) test resamples; intervals draw 1,000 bootstrap resamples.")
    ] = 10_000,
    gate_file: Annotated[
        Path | None,
        typer.Option("--gate", help="Gate file (TOML): name the rules each candidate fails before its figures."),
    ] = None,
    labels: LabelsOpt = Labels.human,
    cases: CasesOpt = Cases.all,
    threshold: StoreThresholdOpt = None,
    min_overlap: MinOverlapOpt = None,
    explain: Annotated[
        bool,
        typer.Option("--explain", help="Give each case whose measure dropped one cause, with its evidence."),
    ] = False,
    fmt: FormatOpt = Format.table,
) -> None:
    """Paired comparison against a baseline. Each candidate's leakage (and, with --gate, the rules it fails) is
    stated before any figure.

    With --runs (or --measure): many runs x many measures in one table, corrected for multiple comparisons, with
    the configuration diff of each run. With --run alone: one candidate on every metric at --k, per slice, with
    the worst regressions. --explain sorts every drop into candidate-miss, rerank-inversion, unjudged-displacement,
    tie-order, label-change or other (docs/experiments.md).
    """
    from ragtriage.cli.experiments import open_for_comparison, print_comparison

    arg_checks.between("--alpha", alpha, 0.0, 1.0, open_low=True)
    many = split_runs(runs)
    if run is not None and many:
        raise _fail(ValueError("give either --run (one candidate) or --runs (several), not both"))
    with asked(labels, cases, threshold, min_overlap):
        if many or measure:
            many = [run] if run is not None else many
            if not many:
                raise _fail(ValueError("give the runs to compare with --runs a,b,..."))
            rc, changes = compare_many_cmd(
                db,
                many,
                baseline,
                measure or [],
                by=by,
                split=split,
                test=test,
                correction=correction,
                alpha=alpha,
                seed=seed,
                resamples=resamples,
                categories=categories,
                gate=gate_file,
                explain=explain,
            )
            if fmt is Format.trec:
                raise _fail(ValueError("--format trec writes trec_eval's lines; use it with `metrics`"))
            if changes.labels != "human only":  # the runs table has no header to hold the labels line
                say(f"labels: {changes.labels}", err=True)
            print_comparison(rc, changes, fmt)
            return
        if run is None:
            raise _fail(ValueError("give --run RUN (one candidate) or --runs a,b,... (several)"))
        from ragtriage.app.compare import compare_one
        from ragtriage.app.render.comparison import one_output

        arg_checks.measures("--metric", metric)
        arg_checks.at_least("--resamples", resamples, 1)
        with open_for_comparison(db, gate_file, classify=gate_file is not None) as (con, config):
            one = compare_one(
                con,
                run,
                baseline,
                k or (3, 5, 10),
                by=by,
                split=split,
                metrics=metric,
                seed=seed,
                resamples=resamples,
                gate=config,
                explain=explain,
            )
        show(one_output(one, fmt), fmt)


@app.command()
def gate(
    gate_file: Annotated[Path, typer.Option("--gate", help="Gate file (TOML), see docs/gate.md.")],
    run: Annotated[list[str], typer.Option("--run", help="Candidate run id; repeat (or comma-separate) for several.")],
    baseline: BaseOpt,
    db: DbOpt = DEFAULT_DB_PATH,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here.")] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="Write a Markdown summary here.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the verdict as JSON here.")] = None,
    record: Annotated[bool, typer.Option(help="Store the verdict in the gate_verdicts table.")] = True,
    force: Annotated[bool, typer.Option("--force", help=FORCE_HELP)] = False,
    labels: LabelsOpt = Labels.human,
    cases: CasesOpt = Cases.all,
    threshold: StoreThresholdOpt = None,
    min_overlap: MinOverlapOpt = None,
) -> None:
    """Release gate: exit 0 when every rule passes for every candidate, 1 when any fails, 2 on unusable input."""
    import duckdb

    from ragtriage.app.gate import gate_verdicts
    from ragtriage.gate import reports
    from ragtriage.gate.config import GateFileError, parse_gate
    from ragtriage.gate.verdict import NothingApplies, refuse_if_nothing_applies
    from ragtriage.paths import written_whole
    from ragtriage.store import StoreError

    outputs = [
        (path, writer)
        for path, writer in (
            (junit, reports.write_junit),
            (markdown, reports.write_markdown),
            (json_out, reports.write_json),
        )
        if path is not None
    ]
    for path, _ in outputs:
        output_path(path, db, force)
    try:  # a bad gate file is refused before the store is touched
        config = parse_gate(gate_file)
    except GateFileError as exc:
        raise _fail(exc) from exc
    try:  # a gate nothing of the data can carry is refused before classification writes
        with open_existing(db, read_only=True) as peek:
            refuse_if_nothing_applies(peek, config, split_runs(run))
    except NothingApplies as exc:
        raise _fail(exc) from exc
    except (StoreError, ValueError, duckdb.Error):
        pass  # an unknown run or an unreadable store: the evaluation below says so, in its own words
    classified_first(db)
    with store_for(db, read_only=not record) as con, asked(labels, cases, threshold, min_overlap):
        verdicts, in_use = gate_verdicts(con, config, split_runs(run), baseline, record=record)
    for path, writer in outputs:  # streamed: a verdict naming most cases of a large run is never one string
        with written_whole(path) as partial, partial.open("w", encoding="utf-8") as out:
            writer(verdicts, out)
    if in_use != "human only":  # a store holding judged labels says which labels decided
        say(f"labels: {in_use}")
    for piece in reports.text_pieces(verdicts):  # a verdict naming most cases of a large run, a piece at a time
        console.print(visible(piece, keep_newlines=True), markup=False, end="")
    raise typer.Exit(0 if all(v.passed for v in verdicts) else 1)
