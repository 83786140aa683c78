"""Gain and discount of DCG, written once: every nDCG (the fixed table, ``--measure`` strings, trec-compat) and
the classifier's cost build their SQL from these functions.

Gain of a grade: ``linear`` is the grade itself, ``exponential`` is 2^grade - 1; a grade at or below zero adds
nothing (trec_eval skips it too). trec_eval's gain parameters (``ndcg.1=3,2=9``) override the linear gain of the
grades they name (``levels``: (grade, gain) pairs); an unnamed grade keeps its linear gain. Discount of position
p (1-based): log2(p + 1).
"""

from __future__ import annotations

#: gain name -> SQL template of the gain of ``{grade}`` (read at every call)
GAIN = {
    "exponential": "(CASE WHEN {grade} > 0 THEN pow(2.0, {grade}) - 1.0 ELSE 0.0 END)",
    "linear": "CAST(greatest({grade}, 0) AS DOUBLE)",
}
GAINS = tuple(GAIN)
#: the gain of ``nDCG@k`` when none is asked: trec_eval's, pytrec_eval's and ir_measures' (``dcg='log2'``), so the
#: name gives their figure; the exponential gain is named ``nDCG(dcg='exp-log2')@k`` wherever it is printed
DEFAULT_GAIN = "linear"
#: SQL template of the discount at 1-based position ``{pos}`` (read at every call)
DISCOUNT = "log2({pos} + 1)"


Levels = tuple[tuple[int, float], ...]


def gain_sql(gain: str, grade: str, levels: Levels = ()) -> str:
    """SQL: the gain of ``grade`` (a column expression) under ``gain``, the grades of ``levels`` at their gain."""
    base = GAIN[gain].format(grade=grade)
    if not levels:
        return base
    whens = " ".join(f"WHEN {int(lvl)} THEN CAST({float(g)!r} AS DOUBLE)" for lvl, g in levels)
    return f"(CASE {grade} {whens} ELSE {base} END)"


def discount_sql(pos: str) -> str:
    """SQL: the discount dividing a gain at 1-based position ``pos``."""
    return DISCOUNT.format(pos=pos)


def ideal_gains_sql(gain: str, grade: str, levels: Levels = ()) -> str:
    """SQL aggregate: a case's positive gains sorted descending (what :func:`ideal_dcg_sql` reads), over rows
    holding ``grade``."""
    g = gain_sql(gain, grade, levels)
    return f"list({g} ORDER BY {g} DESC) FILTER (WHERE {g} > 0)"


def dcg_sql(k: int | None, g: str = "g", pos: str = "pos") -> str:
    """SQL aggregate: DCG@k of rows holding gain ``g`` at position ``pos`` (k None: the whole list)."""
    return f"sum({g} / {discount_sql(pos)})" + (f" FILTER (WHERE {pos} <= {k})" if k is not None else "")


def ideal_dcg_sql(k: int | str | None, gains: str) -> str:
    """SQL: the ideal DCG@k from ``gains``, a list of a case's positive gains sorted descending (k None: all)."""
    cut = f"{gains}[1:{k}]" if k is not None else gains
    return f"list_sum(list_transform({cut}, lambda x, j: x / {discount_sql('j')}))"
