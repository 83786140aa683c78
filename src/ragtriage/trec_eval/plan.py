"""Which measures a trec_eval command line asks for, in the order trec_eval prints them, with trec_eval's names.

trec_eval marks measures (``-m name[.params]``, or a nickname: ``official``, ``set``, ``all_trec``) and prints
every marked one in its own fixed order, whatever the order of the flags; the first ``-m`` giving parameters to a
measure is the one used. Each printed measure here is a measure of the one engine (``metrics.measures``,
``metrics.trec_families``), except ``runid`` (the run's tag, printed in the summary).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ragtriage.metrics.measures import Measure, parse_measure
from ragtriage.metrics.trec_families import CUTOFFS, FAMILIES, cut_name


@dataclass
class Options:
    """trec_eval's flags: ``-m`` (``measures``), ``-q``, ``-c``, ``-l``, ``-n`` (``summary`` off), ``-M``,
    ``-J``, ``-N``, ``-R``, ``-Z`` (``zscores``: the file of each query's and measure's mean and deviation)."""

    measures: list[str] = field(default_factory=list)
    per_query: bool = False
    complete: bool = False
    level: int = 1
    summary: bool = True
    max_docs: int | None = None
    judged_only: bool = False
    num_docs: int = 0
    rel_format: str = "qrels"  # -R: qrels, or prefs / qrels_prefs / qrels_jg (trec_eval.prefs)
    zscores: Path | None = None
    #: write ids and the run tag as their bytes (stdout is not a terminal), else with control characters visible
    raw: bool = False


#: trec_eval's preference measures, in its measure table's order; the first three are counts summed over queries
PREFS = (
    "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair",
    "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret", "prefs_avgjg_ret",
    "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp",
)  # fmt: skip
JG = ("map_avgjg", "P_avgjg", "Rprec_mult_avgjg")
PREF_NICKNAMES = {
    "all_prefs": ("runid", "num_q", *PREFS),
    "prefs": ("runid", "num_q", *PREFS[:6]),
    "qrels_jg": ("runid", "num_q", *JG),
}


def is_prefs_measure(name: str) -> bool:
    """Whether ``name`` is a measure or nickname only the preference or judgment-group formats feed."""
    return name in PREF_NICKNAMES or name in PREFS or name in JG


class TrecEvalError(ValueError):
    """A refusal with trec_eval's exit code (1: command line, 2: input, 4: a query it cannot evaluate)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Printed:
    """One line per query (``per_query``) and/or one ``all`` line: ``kind`` long (``%ld``), double (``%6.4f``)
    or text (relstring, quoted)."""

    name: str
    measure: Measure | None  # None: runid
    kind: str = "double"
    per_query: bool = True
    summary: bool = True


# trec_eval's measure order (measures.c) restricted to what this command computes
ORDER = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg",
    "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success",
    "set_P", "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "rbp", "rbp_resid", "unj",
)  # fmt: skip
OFFICIAL = ORDER[:12]
SET = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall", "set_relative_P",
       "set_map", "set_F")  # fmt: skip
ALL_TREC = tuple(n for n in ORDER if n not in ("dcg", "ideal_dcg"))
NICKNAMES = {"official": OFFICIAL, "set": SET, "all_trec": ALL_TREC}
#: trec_eval measures this command does not compute
UNSUPPORTED = ("yaap",)

#: the core measures trec_eval prints uncut, and those it prints at cutoffs (with its default cutoffs): each one
#: the measure its trec_eval name parses to (``metrics.measures``)
_SCALAR = ("num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "ndcg")
_CUTS = {"P": CUTOFFS, "recall": CUTOFFS, "ndcg_cut": CUTOFFS, "map_cut": CUTOFFS, "success": (1, 5, 10)}
_PAIRS = ("rbp", "rbp_resid", "ndcg", "ndcg_rel", "Rndcg", "G", "dcg", "ideal_dcg")
_GAINS = ("ndcg", "ndcg_rel", "Rndcg", "G", "dcg", "ideal_dcg")


def c_atol(text: str) -> int:
    """C's atol: the leading integer of ``text`` (0 when there is none), as trec_eval reads its parameters."""
    m = re.match(r"\s*([+-]?\d+)", text)
    return int(m.group(1)) if m else 0


def c_atof(text: str) -> float:
    """C's atof on ``text``: its leading decimal number, 0.0 when there is none."""
    m = re.match(r"\s*([+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)", text)
    return float(m.group(1)) if m else 0.0


def marked(args: list[str]) -> tuple[list[str], dict[str, str]]:
    """(measure names in trec_eval's order, the parameter text of each measure given some): ``-m`` values."""
    names: set[str] = set()
    params: dict[str, str] = {}
    for arg in args or ["official"]:
        name, dot, rest = arg.partition(".")
        if dot:
            if not rest:
                raise TrecEvalError(f"illegal measure '{arg}': parameters after '.' are empty", 1)
            params.setdefault(name, rest)
        if is_prefs_measure(name):
            continue  # refused once both files are read, as trec_eval refuses it (prefs.wrong_format)
        if name in UNSUPPORTED:
            raise TrecEvalError(
                f"measure '{name}' is a trec_eval measure ragtriage trec-eval does not compute "
                "(docs/trec_eval.md lists the supported ones)",
                1,
            )
        if name in NICKNAMES:
            names.update(NICKNAMES[name])
        elif name in ORDER:
            names.add(name)
        else:
            raise TrecEvalError(f"illegal measure '{arg}': no trec_eval measure or nickname of that name", 1)
    return [n for n in ORDER if n in names], params


def _long_cuts(name: str, text: str | None, default: tuple[int, ...]) -> list[int]:
    if text is None:
        return list(default)
    cuts = sorted(c_atol(x) for x in text.split(","))
    if cuts[0] <= 0:
        raise TrecEvalError(f"cannot initialize measure '{name}': cutoffs must be positive ('{text}')", 2)
    if len(set(cuts)) < len(cuts):
        raise TrecEvalError(f"cannot initialize measure '{name}': duplicate cutoffs in '{text}'", 2)
    return cuts


def _double_cuts(name: str, text: str | None, default: tuple[float, ...]) -> list[float]:
    if text is None:
        return list(default)
    cuts = sorted(c_atof(x) for x in text.split(","))
    if len(set(cuts)) < len(cuts):
        raise TrecEvalError(f"cannot initialize measure '{name}': duplicate cutoffs in '{text}'", 2)
    return cuts


def _pair_params(name: str, text: str) -> tuple[float, ...]:
    """trec_eval's ``name=value`` parameters: rbp's ``p=``; a gain measure's ``level=gain`` pairs, flattened
    (level, gain, ...). As trec_eval, a pair whose name is not an integer is ignored and a gain reads as C's atof;
    a negative level (trec_eval's not-in-pool and unjudged codes) or a level given twice is refused."""
    pairs = [p.partition("=") for p in text.split(",")]
    if any(not eq for _, eq, _ in pairs) or any("=" in v for _, _, v in pairs):
        raise TrecEvalError(
            f"trec_eval: malformed pair parameters in '{text}'\ntrec_eval: Cannot initialize measure '{name}'", 2
        )
    if name in _GAINS:
        levels = {int(k): c_atof(v) for k, _, v in reversed(pairs) if re.fullmatch(r"[+-]?\d+", k)}
        named = [int(k) for k, _, _ in pairs if re.fullmatch(r"[+-]?\d+", k)]
        if len(named) != len(levels) or any(lvl < 0 for lvl in levels):
            raise TrecEvalError(
                f"trec-eval: measure '{name}.{text}': each gain's level must be a grade >= 0, given once", 1
            )
        return tuple(x for lvl in named for x in (float(lvl), levels[lvl]))
    if any(k != "p" for k, _, _ in pairs):
        raise TrecEvalError(f"trec-eval: measure '{name}.{text}': rbp takes only p=", 1)
    return (c_atof(pairs[-1][2]),)


def plan(args: list[str], num_docs: int = 0) -> list[Printed]:
    """The lines trec_eval prints for ``-m`` values ``args`` (``official`` when none), in its order."""
    names, params = marked(args)
    out: list[Printed] = []
    for name in names:
        text = params.get(name)
        if name == "runid":
            out.append(Printed("runid", None, "text", per_query=False))
        elif name in _CUTS:
            out += [Printed(f"{name}_{k}", parse_measure(f"{name}_{k}")) for k in _long_cuts(name, text, _CUTS[name])]
        elif name == "ndcg" and text is not None:
            out.append(Printed(f"ndcg_{text}", Measure("ndcg", params=_pair_params(name, text))))
        elif name in _SCALAR:
            m = parse_measure(name)
            out.append(Printed(name, m, "long" if m.summed else "double", per_query=name != "num_q"))
        else:
            out += _family(name, text, num_docs)
    return out


def _family(name: str, text: str | None, num_docs: int) -> list[Printed]:
    fam = FAMILIES[name]
    per_query, summary = fam.per_query, fam.summary
    kind = "text" if fam.text else ("long" if fam.agg == "sum" else "double")
    if fam.cut == "long":
        cuts = _long_cuts(name, text, tuple(int(x) for x in fam.params))
        return [Printed(cut_name(fam, k), Measure(name, params=(float(k),))) for k in cuts]
    if fam.cut == "double":
        return [Printed(cut_name(fam, x), Measure(name, params=(x,))) for x in _double_cuts(name, text, fam.params)]
    if text is None:
        values, shown = fam.params, name
    elif name in _PAIRS:
        values, shown = _pair_params(name, text), f"{name}_{text}"
    else:
        values, shown = tuple(c_atof(x) for x in text.split(",")), f"{name}_{text}"
    if name == "utility":
        if len(values) != 4:
            raise TrecEvalError(f"measure 'utility': needs 4 coefficients, '{text}' gives {len(values)}", 4)
        values = (*values, float(num_docs))
    return [Printed(shown, Measure(name, params=values), kind, per_query, summary)]
