"""`compare` and `gate`: a candidate run against a baseline, as figures or as a release decision.

Exit codes of `gate`: 0 every rule passed, 1 a rule failed, 2 the input could not be used (bad gate file, unknown
run, dataset-version mismatch). `compare` exits 0 or 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from ragtriage.cli._app import (
    DEFAULT_DB_PATH,
    FORCE_HELP,
    DbOpt,
    FormatOpt,
    app,
    classified_first,
    open_existing,
    output_path,
    show,
)
from ragtriage.cli._app import fail as _fail
from ragtriage.cli.experiments import Correction, CorrectionOpt, MeasureOpt, RunsOpt, Test, TestOpt
from ragtriage.cli.metrics_options import Cases, CasesOpt, Labels, LabelsOpt, StoreThresholdOpt, asked
from ragtriage.contract.limits import MAX_CUTOFF
from ragtriage.output import Format, Output
from ragtriage.safe_text import visible

if TYPE_CHECKING:
    from ragtriage.experiments.explain import Explanation
    from ragtriage.gate.compare import Comparison

console = Console(soft_wrap=True, highlight=False)
err = Console(stderr=True, soft_wrap=True, highlight=False)

BaseOpt = Annotated[str, typer.Option("--baseline", help="Baseline run id.")]
EXPLAIN_NOTE = (
    "one cause per dropped (case, measure), the first that holds: label-change, tie-order, candidate-miss, "
    "unjudged-displacement, rerank-inversion, other (docs/experiments.md)"
)


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
    with asked(labels, cases, threshold):
        _compare(
            baseline,
            run,
            runs,
            db,
            measure,
            k,
            by,
            split,
            metric,
            test,
            correction,
            alpha,
            categories,
            seed,
            resamples,
            fmt,
            gate_file,
            explain,
        )


def _compare(
    baseline: str,
    run: str | None,
    runs: list[str] | None,
    db: Path,
    measure: list[str] | None,
    k: list[int] | None,
    by: str | None,
    split: str | None,
    metric: list[str] | None,
    test: Test,
    correction: Correction,
    alpha: float,
    categories: bool,
    seed: int,
    resamples: int,
    fmt: Format,
    gate_file: Path | None,
    explain: bool = False,
) -> None:
    from ragtriage.cli.experiments import build, print_comparison, split_runs

    many = split_runs(runs)
    if run is not None and many:
        raise _fail(ValueError("give either --run (one candidate) or --runs (several), not both"))
    if many or measure:
        if run is not None:
            many = [run]
        if not many:
            raise _fail(ValueError("give the runs to compare with --runs a,b,..."))
        rc, changes = build(
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
        _say_labels(db)
        print_comparison(rc, changes, fmt.value)
        return
    if run is None:
        raise _fail(ValueError("give --run RUN (one candidate) or --runs a,b,... (several)"))
    _compare_one(run, baseline, db, k, by, split, metric, seed, resamples, fmt, gate_file, explain)


def _compare_one(
    run: str,
    baseline: str,
    db: Path,
    k: list[int] | None,
    by: str | None,
    split: str | None,
    metric: list[str] | None,
    seed: int,
    resamples: int,
    fmt: Format,
    gate_file: Path | None,
    explain: bool = False,
) -> None:
    import duckdb

    from ragtriage.cli import arg_checks
    from ragtriage.experiments.explain import explain as explain_drops
    from ragtriage.experiments.safety import run_safety
    from ragtriage.gate.compare import compare as run_compare
    from ragtriage.gate.config import GateFileError, parse_gate
    from ragtriage.metrics.context import labels_header
    from ragtriage.store import StoreError

    arg_checks.measures("--metric", metric)
    arg_checks.at_least("--resamples", resamples, 1)
    try:  # a bad gate file is refused before the store is touched
        config = parse_gate(gate_file) if gate_file is not None else None
    except GateFileError as exc:
        raise _fail(exc) from exc
    if gate_file is not None:  # the gate's rules read classifications; the comparison alone does not
        classified_first(db)
    try:
        con = open_existing(db, read_only=True)
    except (StoreError, duckdb.Error) as exc:
        raise _fail(exc) from exc
    try:
        in_use = labels_header(con)
        result = run_compare(
            con,
            run,
            baseline,
            tuple(k or (3, 5, 10)),
            by=by,
            split=split,
            seed=seed,
            n_resamples=resamples,
            metrics=metric or None,
        )
        safety, base_safety = run_safety(con, [run, baseline], gate=config, baseline=baseline)
        why: Explanation | None = explain_drops(con, result) if explain else None
    except (StoreError, ValueError, duckdb.Error) as exc:
        raise _fail(exc) from exc
    finally:
        con.close()
    base_leaks = f"baseline {baseline} {base_safety.phrase()}" if base_safety.leaked_rows else None
    show(_comparison_output(result, safety.phrase(), in_use, why, base_leaks, fmt=fmt), fmt)


def _say_labels(db: Path) -> None:
    """The labels line on standard error, where the runs table has no header to hold it: said when the store holds
    judged labels (a store without them prints exactly what it did before)."""
    from ragtriage.metrics.context import labels_header

    con = open_existing(db, read_only=True)
    try:
        line = labels_header(con)["labels"]
    finally:
        con.close()
    if line != "human only":
        err.print(visible(f"labels: {line}"), markup=False)


def _comparison_output(
    result: Comparison,
    leakage: str,
    labels: dict[str, str] | None = None,
    why: Explanation | None = None,
    baseline_leaks: str | None = None,
    *,
    fmt: Format = Format.json,
) -> Output:
    """The summary rows (numbers, for json/csv), the same rows formatted for a reader, and the worst cases;
    the candidate's leakage (``experiments.safety``) leads the context, before any figure, then the baseline's
    when it leaks (its figures include leaked rows), and the labels the figures use close it. With ``why``
    (``--explain``), the cases per cause and every drop's cause: a reader (table, markdown) gets the causes that
    occur and each drop's sentence, json every count and the evidence, csv (rows only) one row per drop with its
    evidence."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ragtriage.arrays import table_of_rows
    from ragtriage.gate import compare_reports as rep
    from ragtriage.gate.paired_table import method

    schema = pa.schema([(h, pa.string()) for h in rep.TEXT_HEADERS])
    shown = table_of_rows([dict(zip(rep.TEXT_HEADERS, row, strict=True)) for row in rep.text_rows(result)], schema)
    context = {
        "leakage": leakage,
        **({"baseline leakage": baseline_leaks} if baseline_leaks else {}),
        "run": result.run_id,
        "baseline": result.baseline,
        "dataset": result.dataset_version[:12],
        "k": list(result.ks),
        "by": result.by,
        "split": result.split or "all splits",
        "stage": "final",
        "method": method(n_resamples=result.n_resamples, seed=result.seed),
        "unpaired": result.unpaired,
        **(labels or {}),
    }
    sections = {"worst": result.worst}
    if why is not None:
        counts, explained = why.counts, why.explained
        context["explain"] = EXPLAIN_NOTE
        if fmt is Format.csv:
            return Output(explained, context)
        if fmt in (Format.table, Format.markdown):
            counts = counts.filter(pc.greater(counts.column("cases"), 0))
            explained = explained.drop_columns(["evidence"])
        sections |= {"causes": counts, "explained": explained}
    return Output(result.summary, context, sections=sections, shown=shown, json_columns=("evidence",))


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
) -> None:
    """Release gate: exit 0 when every rule passes for every candidate, 1 when any fails, 2 on unusable input."""
    import duckdb

    from ragtriage.cli.experiments import split_runs
    from ragtriage.gate import reports
    from ragtriage.gate.config import GateFileError, parse_gate
    from ragtriage.gate.verdict import NothingApplies, evaluate_gate, record_verdict, refuse_if_nothing_applies
    from ragtriage.metrics.context import labels_header
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
    try:
        con = open_existing(db, read_only=not record)
    except (StoreError, duckdb.Error) as exc:
        raise _fail(exc) from exc
    try:
        with asked(labels, cases, threshold):
            in_use = labels_header(con)["labels"]
            verdicts = [evaluate_gate(con, config, r, baseline) for r in split_runs(run)]
        if record:
            for verdict in verdicts:
                record_verdict(con, verdict)
    except (StoreError, ValueError, duckdb.Error) as exc:
        raise _fail(exc) from exc
    finally:
        con.close()
    for path, writer in outputs:  # streamed: a verdict naming most cases of a large run is never one string
        with written_whole(path) as partial, partial.open("w", encoding="utf-8") as out:
            writer(verdicts, out)
    if in_use != "human only":  # a store holding judged labels says which labels decided
        console.print(visible(f"labels: {in_use}"), markup=False)
    for piece in reports.text_pieces(verdicts):  # a verdict naming most cases of a large run, a piece at a time
        console.print(visible(piece, keep_newlines=True), markup=False, end="")
    raise typer.Exit(0 if all(v.passed for v in verdicts) else 1)
