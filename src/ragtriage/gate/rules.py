"""The gate's relevance and behaviour rules, each a function of the evaluation context returning a RuleResult.

Rules never combine: a leaked row fails the leakage rule whatever recall did, and the verdict is the conjunction
of every rule. A rule with nothing to measure (no paired cases on its split, no events for a latency budget)
fails, because a release cannot be shown to meet a bound that was never measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.gate import sources
from ragtriage.gate.compare import TIE, compare_tables, worst_first
from ragtriage.gate.config import (
    CriticalCases,
    GateConfig,
    Latency,
    NegativeCases,
    Regression,
    SliceMinimum,
    ZeroHit,
    cutoff_of,
    split_note,
)
from ragtriage.gate.outcome import FailingCase, RuleResult


@dataclass
class Context:
    """Everything the rules read, fetched once: per-case metrics of both runs, slices, defect categories."""

    con: duckdb.DuckDBPyConnection
    config: GateConfig
    run_id: str
    baseline: str
    dataset_version: str
    candidate: pa.Table
    base: pa.Table
    report_slices: pa.Table  # case_id, split, critical, answerable, slice (config.report_by)
    categories: dict[str, str]  # at the run's own k
    run_k: int = 0
    categories_at: dict[int, dict[str, str]] = field(default_factory=dict)  # at the k a rule's measure names
    classified: dict[str, str] = field(default_factory=dict)  # cases with a classified failure at the run's k
    #: a leaking baseline's per-case figures with its leaked final rows earning nothing (None: it does not leak)
    base_clean: pa.Table | None = None
    base_leaked_rows: int = 0

    def slice_of(self, case_id: str) -> str:
        return self._slices.get(case_id, "(unknown)")

    def category_of(self, case_id: str, default: str = "unclassified", k: int | None = None) -> str:
        """The case's categories judged at ``k`` (a rule's own cutoff), else at the run's k, else ``default``."""
        at = self.categories_at.get(k, {}) if k is not None else {}
        return at.get(case_id) or self.categories.get(case_id, default)

    def __post_init__(self) -> None:
        self._slices: dict[str, str] = {}
        for row in self.report_slices.select(["case_id", "slice"]).to_pylist():
            old, value = self._slices.get(row["case_id"]), row["slice"]
            self._slices[row["case_id"]] = f"{old}, {value}" if old else f"{self.config.report_by}={value}"

    def failing(
        self,
        case_id: str,
        detail: str,
        *,
        slice_label: str | None = None,
        category: str | None = None,
        k: int | None = None,
    ) -> FailingCase:
        return FailingCase(
            case_id, slice_label or self.slice_of(case_id), category or self.category_of(case_id, k=k), detail
        )


def _split_label(split: str | None) -> str:
    return split or "all splits"


def _cases_on(n: int, split: str | None, what: str = "cases") -> str:
    """'49 holdout cases' or '7 cases (all splits)'."""
    return f"{n} {split} {what}" if split else f"{n} {what} (all splits)"


def _first(details: list[str], keep: int = 3) -> str:
    """The first few leaked rows of a case and how many more, so one case does not fill a CI log."""
    more = len(details) - keep
    return "; ".join(details[:keep]) + (f"; +{more} more row(s)" if more > 0 else "")


def _scored(ctx: Context, metric: str, split: str | None, cases: pa.Table | None = None) -> list[tuple[str, float]]:
    """(case_id, candidate figure of ``metric``) for cases with relevant units on ``split``, lowest first."""
    cur = duckdb.connect()
    cur.register("cand", ctx.candidate)
    cur.register("sl", cases if cases is not None else ctx.report_slices)
    table = cur.sql(
        f"""SELECT DISTINCT c.case_id, CAST(c."{metric}" AS DOUBLE) AS value
            FROM cand c JOIN sl USING (case_id)
            WHERE c.n_relevant > 0 AND c."{metric}" IS NOT NULL AND ($split IS NULL OR sl.split = $split)
            ORDER BY value, case_id""",
        params={"split": split},
    ).to_arrow_table()
    return list(zip(table.column("case_id").to_pylist(), table.column("value").to_pylist(), strict=True))


def leakage_not_applicable(cases: int) -> RuleResult:
    """The leakage rule on data that declares no access rule at all: it does not apply, and passes saying so."""
    from ragtriage.checks.leakage import NOT_APPLICABLE

    return RuleResult(
        "leakage",
        "leakage",
        True,
        f"{NOT_APPLICABLE} (no principal on any of {cases} case(s), no acl or tenant in any manifest, no acl policy)",
        "no leaked rows where the data declares access rules",
        0.0,
        notes=("leakage applies once any case names a principal or any document an acl or tenant",),
        applies=False,
    )


def leakage_rule(ctx: Context) -> RuleResult:
    """No leaked row, in any stage; and leakage must have been checked on some case (on at least the gate's
    ``[leakage] min_checked_share`` of them): a run nobody could check has not shown that it does not leak. On data
    that declares no access rule at all the rule does not apply, and passes saying so."""
    from ragtriage.checks.leakage import coverage, leaked_result_rows, unchecked_cases

    unchecked = unchecked_cases(ctx.con, ctx.run_id)
    cov = coverage(ctx.con, unchecked)
    if not cov.applicable:
        return leakage_not_applicable(cov.cases)
    table = sources.leaks(ctx.con, ctx.run_id)
    rows = table.to_pylist()
    need = ctx.config.leakage.min_checked_share
    covered = cov.checked > 0 and cov.share >= need - TIE
    per_case: dict[str, list[str]] = {}
    for r in rows:
        unit = r.get("chunk_id") or r.get("document_id")
        per_case.setdefault(r["case_id"], []).append(f"{r['stage']} rank {r['rank']} {unit}: {r['rule']}")
    failures = tuple(ctx.failing(c, _first(d), category="security") for c, d in per_case.items())
    notes: tuple[str, ...] = ()
    if cov.checked < cov.cases:
        ids = unchecked.column("case_id").slice(0, 10).to_pylist()
        more = f" … ({unchecked.num_rows} in all)" if unchecked.num_rows > len(ids) else ""
        listed = f": {', '.join(ids)}{more}" if ids and cov.has_manifest else ""
        notes = (f"{cov.cases - cov.checked} case(s) unchecked ({cov.why_unchecked()}){listed}",)
    if cov.manifest_note:
        notes += (cov.manifest_note,)
    if not covered:
        notes += (
            f"leakage NOT CHECKED on enough cases: {cov.checked} of {cov.cases} checked, "
            f"the gate needs {'at least one' if not need else f'{need:.0%}'}",
        )
    return RuleResult(
        "leakage",
        "leakage",
        not rows and covered,
        f"{leaked_result_rows(table)} leaked result row(s) ({len(rows)} rule finding(s)) in {len(per_case)} "
        f"case(s), any stage; {cov.checked} of {cov.cases} case(s) checked ({cov.share:.1%})",
        "no leaked rows (always on), checked on " + (f"≥ {need:.0%} of cases" if need else "at least one case"),
        float(leaked_result_rows(table)),
        failures,
        notes=notes,
    )


def _paired(ctx: Context, rule: Regression, base: pa.Table) -> tuple[dict[str, Any] | None, pa.Table]:
    """The paired comparison of the candidate with ``base`` on the rule's metric: its overall row (None: no paired
    case) and the per-case pairs."""
    summary, pairs, _ = compare_tables(
        ctx.candidate,
        base,
        ctx.report_slices,
        [rule.metric],
        split=rule.split,
        seed=ctx.config.seed,
        n_resamples=ctx.config.n_resamples,
    )
    return next((r for r in summary.to_pylist() if r["slice"] == "all"), None), pairs


def _with_leaks(ctx: Context, rule: Regression) -> tuple[str, str]:
    """The baseline's figure with its leaked rows in, for the figure beside the honest one, and the note."""
    raw, _ = _paired(ctx, rule, ctx.base)
    with_them = f"{raw['baseline']:.4f}" if raw else "no figure"
    note = (
        f"baseline {ctx.baseline} leaks ({ctx.base_leaked_rows:,} leaked result row(s)): compared against its "
        f"figure with the leaked final rows earning nothing ({rule.metric} {with_them} with them)"
    )
    return with_them, note


def regression_rule(ctx: Context, rule: Regression) -> RuleResult:
    o, pairs = _paired(ctx, rule, ctx.base_clean if ctx.base_clean is not None else ctx.base)
    leaky = _with_leaks(ctx, rule) if ctx.base_clean is not None else None
    name = f"regression:{rule.metric}:{_split_label(rule.split)}"
    threshold = f"mean Δ{rule.metric} ≥ -{rule.tolerance:g}"
    if rule.require_significance:
        threshold += f", or a larger drop that is not significant (p ≥ {rule.alpha:g})"
    on = split_note(rule.split, rule.split_default) + ((leaky[1],) if leaky else ())
    if o is None:
        return RuleResult(
            name, "regression", False, f"no paired cases on {_split_label(rule.split)}", threshold, notes=on
        )
    drop = o["mean_diff"] < -rule.tolerance - TIE
    significant = o["p_value"] < rule.alpha
    passed = not (drop and (significant or not rule.require_significance))
    base_figure = (
        f"{o['baseline']:.4f} (leaked rows removed; {leaky[0]} with them)" if leaky else f"{o['baseline']:.4f}"
    )
    figure = (
        f"{rule.metric} {base_figure} → {o['candidate']:.4f}, Δ {o['mean_diff']:+.4f} "
        f"{_interval(o['ci_low'], o['ci_high'])}, p = {o['p_value']:.4g}, "
        f"{o['wins']}/{o['ties']}/{o['losses']} W/T/L on {_cases_on(o['n'], rule.split)}"
    )
    notes = (_regression_reason(rule, o["mean_diff"], o["p_value"], drop, significant), *on)
    losses = worst_first(pairs)
    seen: dict[str, FailingCase] = {}
    if not passed:
        for r in losses.to_pylist():
            if r["case_id"] not in seen:
                seen[r["case_id"]] = ctx.failing(
                    r["case_id"],
                    f"{rule.metric} {r['baseline']:.3f} → {r['candidate']:.3f}",
                    k=cutoff_of(rule.metric),
                )
    return RuleResult(
        name,
        "regression",
        passed,
        figure,
        threshold,
        o["mean_diff"],
        tuple(seen.values()),
        notes,
        ci_low=o["ci_low"],
        ci_high=o["ci_high"],
        p_value=o["p_value"],
    )


def _interval(low: float | None, high: float | None) -> str:
    """The paired interval as the figure prints it; none on too few cases to resample (one paired case)."""
    if low is None or high is None:
        return "[95% CI n/a: too few paired cases]"
    return f"[95% CI {low:+.4f}, {high:+.4f}]"


def _regression_reason(rule: Regression, delta: float, p: float, drop: bool, significant: bool) -> str:
    """Why a regression rule passed or failed, in the rule's own terms: the tolerance decides, and significance
    only when the gate asks for it and the drop exceeds the tolerance (a p-value beside a pass is not a
    requirement that was met)."""
    bound = f"Δ {delta:+.4f}"
    if not drop:
        return f"passed: {bound} is within the tolerance (≥ -{rule.tolerance:g}); p = {p:.4g} is reported, not required"
    if not rule.require_significance:
        return f"failed: {bound} is below -{rule.tolerance:g} (the rule does not ask for significance)"
    if significant:
        return f"failed: {bound} is below -{rule.tolerance:g} and significant (p = {p:.4g} < {rule.alpha:g})"
    return f"passed: {bound} is below -{rule.tolerance:g} but not significant (p = {p:.4g} ≥ {rule.alpha:g})"


def slice_minimum_rule(ctx: Context, rule: SliceMinimum) -> RuleResult:
    label = f"{rule.column}={rule.value}"
    members = sources.case_slices(ctx.con, ctx.dataset_version, rule.column)
    members = members.filter(pc.equal(members.column("slice"), rule.value))
    rows = _scored(ctx, rule.metric, rule.split, members)
    name = f"slice_minimum:{label}:{rule.metric}"
    threshold = f"mean {rule.metric} ≥ {rule.min:g}"
    notes = split_note(rule.split, rule.split_default)
    if not rows:
        figure = f"no cases with relevant units in slice {label} on {_split_label(rule.split)}"
        return RuleResult(name, "slice_minimum", False, figure, threshold, notes=notes)
    mean = sum(v for _, v in rows) / len(rows)
    passed = mean >= rule.min - TIE
    below = [(c, v) for c, v in rows if v < rule.min - TIE]
    failures = (
        ()
        if passed
        else tuple(
            ctx.failing(c, f"{rule.metric} {v:.3f} < {rule.min:g}", slice_label=label, k=cutoff_of(rule.metric))
            for c, v in below
        )
    )
    figure = f"mean {rule.metric} {mean:.4f} over {_cases_on(len(rows), rule.split)} in {label}"
    return RuleResult(name, "slice_minimum", passed, figure, threshold, mean, failures, notes)


def critical_rule(ctx: Context, rule: CriticalCases) -> RuleResult:
    critical = ctx.report_slices.filter(pc.equal(ctx.report_slices.column("critical"), True))
    rows = _scored(ctx, rule.metric, rule.split, critical)
    below = [(c, v) for c, v in rows if v < rule.min - TIE]
    failures = tuple(
        ctx.failing(c, f"critical case: {rule.metric} {v:.3f} < {rule.min:g}", k=cutoff_of(rule.metric))
        for c, v in below
    )
    name, threshold = f"critical_cases:{rule.metric}", f"every critical case {rule.metric} ≥ {rule.min:g}"
    if not rows:
        figure = f"not applicable: no critical case with relevant units on {_split_label(rule.split)}"
        return RuleResult(name, "critical_cases", True, figure, threshold, applies=False)
    figure = f"{len(below)} of {len(rows)} critical cases below {rule.min:g} on {rule.metric}"
    return RuleResult(name, "critical_cases", not below, figure, threshold, float(len(below)), failures)


def zero_hit_rule(ctx: Context, rule: ZeroHit) -> RuleResult:
    metric = f"Success@{rule.k}"
    rows = _scored(ctx, metric, rule.split)
    zero = [c for c, v in rows if v <= TIE]
    name = f"zero_hit@{rule.k}"
    threshold = f"zero-hit rate ≤ {rule.max_rate:g}"
    notes = split_note(rule.split, rule.split_default)
    if not rows:
        return RuleResult(
            name, "zero_hit", False, f"no answerable cases on {_split_label(rule.split)}", threshold, notes=notes
        )
    rate = len(zero) / len(rows)
    passed = rate <= rule.max_rate + TIE
    failures = () if passed else tuple(ctx.failing(c, f"no relevant unit in the top {rule.k}", k=rule.k) for c in zero)
    figure = (
        f"{len(zero)} of {_cases_on(len(rows), rule.split, 'answerable cases')} with no relevant unit in "
        f"the top {rule.k} ({rate:.1%})"
    )
    return RuleResult(name, "zero_hit", passed, figure, threshold, rate, failures, notes)


def negative_rule(ctx: Context, rule: NegativeCases) -> RuleResult:
    rows = sources.negative_outcomes(ctx.con, ctx.run_id).to_pylist()
    threshold = "all behave as expected" if rule.min_share >= 1.0 else f"share behaving ≥ {rule.min_share:g}"
    if not rows:
        return RuleResult(
            "negative_cases",
            "negative_cases",
            True,
            "not applicable: no negative (unanswerable) cases in the dataset",
            threshold,
            applies=False,
        )
    bad = [r for r in rows if not r["passed"]]
    share = 1.0 - len(bad) / len(rows)
    passed = share >= rule.min_share - TIE
    failures = (
        ()
        if passed
        else tuple(ctx.failing(r["case_id"], f"expected {r['expected_behavior']}: {r['reason']}") for r in bad)
    )
    figure = f"{len(rows) - len(bad)} of {len(rows)} negative cases behave as expected ({share:.1%})"
    return RuleResult("negative_cases", "negative_cases", passed, figure, threshold, share, failures)


def latency_rule(ctx: Context, rule: Latency) -> RuleResult:
    lat = sources.latency(ctx.con, ctx.run_id)
    parts, ok = [], True
    if rule.p95_ms is not None:
        parts.append(f"p95 ≤ {rule.p95_ms:g} ms")
    if rule.max_timeouts is not None:
        parts.append(f"timeouts ≤ {rule.max_timeouts}")
    threshold = ", ".join(parts)
    if not lat["cases"]:
        return RuleResult("latency", "latency", False, "no events recorded for the run", threshold)
    p95 = lat["p95_ms"]
    if rule.p95_ms is not None:
        ok = p95 is not None and p95 <= rule.p95_ms
    timeouts = int(lat["timeouts"] or 0)
    failures: tuple[FailingCase, ...] = ()
    if rule.max_timeouts is not None and timeouts > rule.max_timeouts:
        ok = False
        # a timed-out case whose lists are fine is the serving system's, not a retrieval defect
        failures = tuple(
            ctx.failing(c, "timed out", category=ctx.classified.get(c, "serving"))
            for c in sources.timed_out_cases(ctx.con, ctx.run_id)
        )
    p95_text = "no latency recorded" if p95 is None else f"p95 {p95:.1f} ms"
    conc = lat["concurrency"]
    at = "at an unstated concurrency" if conc is None else f"at concurrency {conc}"
    figure = f"{p95_text} over {lat['with_latency']} events {at}, {timeouts} timeout(s)"
    return RuleResult("latency", "latency", ok, figure, threshold, p95, failures)


def relevance_rules(ctx: Context) -> list[RuleResult]:
    """Every configured rule except reproducibility, in file order of kinds; leakage first, always."""
    cfg = ctx.config
    out = [leakage_rule(ctx)]
    out += [regression_rule(ctx, r) for r in cfg.regressions]
    out += [slice_minimum_rule(ctx, r) for r in cfg.slice_minima]
    if cfg.critical:
        out.append(critical_rule(ctx, cfg.critical))
    if cfg.zero_hit:
        out.append(zero_hit_rule(ctx, cfg.zero_hit))
    if cfg.negatives:
        out.append(negative_rule(ctx, cfg.negatives))
    if cfg.latency:
        out.append(latency_rule(ctx, cfg.latency))
    return out
