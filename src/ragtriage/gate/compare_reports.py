"""Writers for a Comparison: JSON, CSV and Markdown, plus the rows a terminal table shows.

Every figure is printed with its metric name (which carries the cutoff), the number of paired cases, the seed
and the resample count, so a reader can reproduce it.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.csv_out import csv_text
from ragtriage.gate.compare import Comparison
from ragtriage.gate.paired_table import method
from ragtriage.safe_text import markdown_cell

COLUMNS = (
    "slice",
    "metric",
    "n",
    "wins",
    "ties",
    "losses",
    "baseline",
    "candidate",
    "mean_diff",
    "ci_low",
    "ci_high",
    "p_value",
)


def _num(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v


def header(c: Comparison) -> str:
    split = c.split or "all splits"
    return (
        f"{c.run_id} vs {c.baseline} · dataset {c.dataset_version[:12]} · {split} · stage final · "
        f"{method(n_resamples=c.n_resamples, seed=c.seed)}"
    )


def to_dict(c: Comparison) -> dict[str, Any]:
    return {
        "run_id": c.run_id,
        "baseline": c.baseline,
        "dataset_version": c.dataset_version,
        "ks": list(c.ks),
        "by": c.by,
        "split": c.split,
        "seed": c.seed,
        "n_resamples": c.n_resamples,
        "unpaired": c.unpaired,
        "summary": [{k: _num(v) for k, v in r.items()} for r in c.summary.to_pylist()],
        "worst": c.worst.to_pylist(),
    }


def to_json(c: Comparison) -> str:
    return json.dumps(to_dict(c), indent=2, ensure_ascii=False) + "\n"


def to_csv(c: Comparison) -> str:
    """The summary through the one CSV writer (slice values are data); NaN figures are empty cells."""
    table = c.summary.select(list(COLUMNS))
    columns = [
        pc.if_else(pc.is_nan(col), pa.scalar(None, col.type), col) if pa.types.is_floating(col.type) else col
        for col in table.columns
    ]
    return csv_text(pa.table(columns, names=list(COLUMNS)))


def text_rows(c: Comparison, digits: int = 4) -> list[list[str]]:
    """Summary rows formatted for a terminal (``digits=3`` fits 80 columns) or Markdown table."""
    out = []
    for r in c.summary.to_pylist():
        ci = "n/a" if _num(r["ci_low"]) is None else f"[{r['ci_low']:+.{digits}f}, {r['ci_high']:+.{digits}f}]"
        p = "n/a" if _num(r["p_value"]) is None else f"{r['p_value']:.{digits}g}"
        out.append(
            [
                str(r["slice"]),
                str(r["metric"]),
                str(r["n"]),
                f"{r['wins']}/{r['ties']}/{r['losses']}",
                f"{r['baseline']:.{digits}f}",
                f"{r['candidate']:.{digits}f}",
                f"{r['mean_diff']:+.{digits}f}",
                ci,
                p,
            ]
        )
    return out


TEXT_HEADERS = ["slice", "metric", "n", "W/T/L", "base", "cand", "Δ mean", "95% CI", "p"]


def to_markdown(c: Comparison) -> str:
    lines = [
        f"**{markdown_cell(header(c))}**",
        "",
        "| " + " | ".join(TEXT_HEADERS) + " |",
        "|" + "---|" * len(TEXT_HEADERS),
    ]
    lines += ["| " + " | ".join(markdown_cell(cell) for cell in row) + " |" for row in text_rows(c)]
    worst = c.worst.to_pylist()
    if worst:
        lines += [
            "",
            "Worst regressions:",
            "",
            "| metric | case | slice | baseline | candidate | Δ |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {markdown_cell(w['metric'])} | {markdown_cell(w['case_id'])} | {markdown_cell(w['slice'])} "
            f"| {w['baseline']:.3f} | {w['candidate']:.3f} "
            f"| {w['diff']:+.3f} |"
            for w in worst
        ]
    return "\n".join(lines) + "\n"
