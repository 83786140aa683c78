"""`pool`, `import-labels`, `agreement`, `adjudicate` and `dataset check`: growing and auditing the labels."""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from ragtriage.cli._app import (
    DEFAULT_DB_PATH,
    FORCE_HELP,
    DbOpt,
    app,
    dataset_app,
    output_path,
    say,
    shown,
    split_runs,
    store_for,
)
from ragtriage.contract.dimensions import SLICE_DIMENSIONS

if TYPE_CHECKING:
    from ragtriage.annotate import Agreement

console = Console(soft_wrap=True)


@app.command()
def pool(
    runs: Annotated[str, typer.Option("--runs", help="Comma-separated run ids to pool, e.g. bm25,dense.")],
    out: Annotated[Path, typer.Option("--out", help="pool.csv or pool.jsonl.")],
    db: DbOpt = DEFAULT_DB_PATH,
    depth: Annotated[int, typer.Option(help="Pool each run's top DEPTH units (after de-duplication).")] = 10,
    stage: Annotated[str, typer.Option(help="Result stage to pool: final|candidate.")] = "final",
    force: Annotated[bool, typer.Option("--force", help=FORCE_HELP)] = False,
) -> None:
    """Write the units the runs retrieve in their top DEPTH that nobody has judged yet, for annotators to grade."""
    output_path(out, db, force)
    from ragtriage.annotate.pool import PoolTally, pool_batches, write_pool

    tally = PoolTally()
    with store_for(db, read_only=True) as con, contextlib.closing(con.cursor()) as cur:
        # streamed to the file: a large pool is never held whole beside its query
        fmt = write_pool(con, tally.through(pool_batches(cur, split_runs(runs), depth, stage=stage)), out)
    say(
        f"{tally.rows} unjudged unit(s) over {tally.cases} case(s) from {runs} at depth {depth} written to {out} "
        f"({fmt}); fill grade (and annotator, note) and run `ragtriage import-labels {out} --annotator NAME`"
    )


@app.command("import-labels")
def import_labels_cmd(
    path: Annotated[Path, typer.Argument(help="Labelled pool or adjudication file (csv, tsv, jsonl, parquet).")],
    annotator: Annotated[
        str,
        typer.Option(help="Annotator for rows whose annotator column is empty; 'adjudicated' makes these grades win."),
    ],
    db: DbOpt = DEFAULT_DB_PATH,
    fmt: Annotated[str | None, typer.Option("--format", help="jsonl|csv|tsv|parquet if not by extension.")] = None,
    runs: Annotated[str | None, typer.Option("--runs", help="Also count the unjudged in these runs' pool.")] = None,
    depth: Annotated[int, typer.Option(help="Pool depth for --runs.")] = 10,
    chunk_map: Annotated[
        Path | None,
        typer.Option(
            "--chunk-map",
            help="Span dataset: the file labels chunks; this file (chunk_id, document_id, start, end) places "
            "each chunk, so its labels become spans that survive re-chunking.",
        ),
    ] = None,
) -> None:
    """Import labelled rows as a new dataset version (the old version is kept) and make it current."""
    from ragtriage.annotate import import_labels
    from ragtriage.cli import arg_checks

    arg_checks.at_least("--depth", depth, 1)
    with store_for(db, read_only=False) as con:
        rep = import_labels(
            con,
            path,
            annotator=annotator,
            fmt=fmt,
            pool_runs=split_runs(runs) if runs else None,
            depth=depth,
            chunk_map=chunk_map,
        )
    state = "unchanged (already present), now current" if rep.unchanged else f"created from {rep.parent}"
    say(
        f"dataset version {rep.version} {state}: {rep.imported} label(s) imported, {rep.replaced} earlier "
        f"label(s) of the same annotator replaced, {rep.blank} row(s) without a grade skipped"
    )
    say(f"still unjudged: {rep.unjudged} of the file's {rep.file_units} unit(s)")
    if rep.pool_units is not None:
        say(f"still unjudged in the pool of {runs} at depth {depth}: {rep.pool_unjudged} of {rep.pool_units}")
    for w in rep.warnings:
        say(f"warning: {w}", err=True)


def _fmt(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def _agreement_json(rows: list[Agreement]) -> str:
    return json.dumps(
        [
            {
                "slice": a.slice,
                "pairs": a.pairs,
                "units": a.units,
                "raw_agreement": None if math.isnan(a.raw) else a.raw,
                "kappa": None if math.isnan(a.kappa) else a.kappa,
                "kappa_quadratic": None if math.isnan(a.kappa_quadratic) else a.kappa_quadratic,
                "grades": list(a.grades),
                "confusion": a.confusion.tolist(),
            }
            for a in rows
        ],
        indent=2,
    )


@app.command("agreement")
def agreement_cmd(
    db: DbOpt = DEFAULT_DB_PATH,
    by: Annotated[str | None, typer.Option(help=f"Slice by a dimension: {'|'.join(SLICE_DIMENSIONS)}.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    min_diff: Annotated[int, typer.Option(help="List units whose grades differ by at least this much.")] = 2,
) -> None:
    """Raw agreement, Cohen's kappa (unweighted, quadratic) and the confusion matrix of double-labelled units."""
    from rich.table import Table

    from ragtriage.annotate import agreement, disagreements

    with store_for(db, read_only=True) as con:
        rows = agreement(con, by)
        diff = disagreements(con, min_diff)
    if as_json:
        console.print_json(_agreement_json(rows))
        return
    t = Table(
        by or "slice",
        "pairs",
        "units",
        "raw agreement",
        "kappa",
        "kappa (quadratic)",
        title="agreement of double-labelled units (pairs of annotators)",
        title_justify="left",
    )
    for a in rows:
        t.add_row(
            shown(a.slice or "all"), str(a.pairs), str(a.units), _fmt(a.raw), _fmt(a.kappa), _fmt(a.kappa_quadratic)
        )
    console.print(t)
    overall = rows[0]
    m = Table(
        "A \\ B",
        *[str(g) for g in overall.grades],
        title="confusion matrix (rows: first annotator alphabetically, columns: second)",
        title_justify="left",
    )
    for g, row in zip(overall.grades, overall.confusion.tolist(), strict=True):
        m.add_row(str(g), *[str(v) for v in row])
    console.print(m)
    say(
        f"{diff.num_rows} unit(s) with grades {min_diff} or more apart"
        + (" (`ragtriage adjudicate --out FILE` writes them)" if diff.num_rows else "")
    )
    for r in diff.select(["case_id", "unit_id", "grades", "adjudicated"]).to_pylist():
        say(f"  {r['case_id']} {r['unit_id']}: {r['grades']}" + (" (adjudicated)" if r["adjudicated"] else ""))


@app.command()
def adjudicate(
    out: Annotated[Path, typer.Option("--out", help="disagreements.csv or .jsonl.")],
    db: DbOpt = DEFAULT_DB_PATH,
    min_diff: Annotated[int, typer.Option(help="Units whose grades differ by at least this much.")] = 2,
    include_done: Annotated[bool, typer.Option("--all", help="Include units already adjudicated.")] = False,
    force: Annotated[bool, typer.Option("--force", help=FORCE_HELP)] = False,
) -> None:
    """Write the disagreements for adjudication; import the filled file with `--annotator adjudicated`."""
    output_path(out, db, force)
    from ragtriage.annotate import disagreements, write_pool

    with store_for(db, read_only=True) as con:
        table = disagreements(con, min_diff, include_adjudicated=include_done)
        write_pool(con, table, out)
    say(
        f"{table.num_rows} disagreement(s) written to {out}; fill grade and run "
        f"`ragtriage import-labels {out} --annotator adjudicated`"
    )


@dataset_app.command("check")
def dataset_check_cmd(
    db: DbOpt = DEFAULT_DB_PATH,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when there is any warning.")] = False,
    jaccard: Annotated[float, typer.Option(help="Token-set Jaccard at which two queries are near-duplicates.")] = 0.9,
    span: Annotated[int, typer.Option(help="Consecutive tokens a question may share with its evidence.")] = 8,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Warn about split leaks, near-duplicate queries, labels older than their documents and copied evidence."""
    from ragtriage.annotate import dataset_check
    from ragtriage.cli import arg_checks

    arg_checks.between("--jaccard", jaccard, 0.0, 1.0, open_low=True)
    arg_checks.at_least("--span", span, 1)
    with store_for(db, read_only=True) as con:
        warnings = dataset_check(con, jaccard=jaccard, span=span)
    rows = warnings.to_pylist()
    if as_json:
        console.print_json(json.dumps(rows, default=str))
    else:
        for r in rows:
            say(f"warning: {r['check']}: " + (f"{r['case_id']}: " if r["case_id"] else "") + r["detail"])
        counts: dict[str, int] = {}
        for r in rows:
            counts[r["check"]] = counts.get(r["check"], 0) + 1
        say(
            f"{len(rows)} warning(s)"
            + (": " + ", ".join(f"{n} {c}" for c, n in sorted(counts.items())) if counts else "")
        )
    if strict and rows:
        raise typer.Exit(1)
