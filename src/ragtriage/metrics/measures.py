"""Measure names in ir_measures' syntax (``nDCG@10``, ``nDCG(dcg='exp-log2')@10``, ``P(rel=2)@5``, ``AP``), parsed
in this one place into a typed :class:`Measure`.

Users arrive with the names ir_measures, ranx and trec_eval print, so the parser accepts ir_measures' spelling and
aliases (``MRR`` = ``RR``, ``MAP`` = ``AP``, ``NDCG``, ``RPrec``, ``BPref``, ``Precision``, ``Recall``,
``NumRelRet`` = ``NumRet(rel=...)``) and trec_eval's names (``P_10``, ``ndcg_cut_10``, ``map``, ``recip_rank``,
``num_rel_ret``, ``R-prec``). A parameter left out (``rel``, ``dcg``) stays ``None`` until :meth:`Measure.resolve`
fills it from the dataset's relevance threshold and the chosen gain, and the output says which it took.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

import pyarrow as pa

from ragtriage.metrics.context import MetricsError
from ragtriage.metrics.trec_families import FAMILIES, cut_name
from ragtriage.metrics.trec_families import parse as parse_family

DCGS = ("log2", "exp-log2")
#: gain name of the metrics layer (``--gain``) -> ir_measures' ``dcg`` parameter
GAIN_TO_DCG = {"linear": "log2", "exponential": "exp-log2"}
DCG_TO_GAIN = {dcg: gain for gain, dcg in GAIN_TO_DCG.items()}


@dataclass(frozen=True)
class Spec:
    """One core measure in the measure table: the parameters it takes besides the cutoff, whether it takes a
    cutoff and whether it needs one, trec_eval's names (``trec`` uncut, ``trec_cut`` the prefix of ``P_10``), and
    whether its cases add up (trec_eval's num_*, ir_measures' SumAgg) instead of averaging. Its SQL is
    registered under the same name in ``metrics.engine``."""

    params: tuple[str, ...] = ("rel",)
    cut: bool = True
    needs_cut: bool = False
    trec: str | None = None
    trec_cut: str | None = None
    summed: bool = False


#: The measure table: canonical name -> :class:`Spec`
SPECS: dict[str, Spec] = {
    "P": Spec(needs_cut=True, trec_cut="P"),
    "R": Spec(needs_cut=True, trec_cut="recall"),
    "RR": Spec(trec="recip_rank"),
    "AP": Spec(trec="map", trec_cut="map_cut"),
    "nDCG": Spec(("dcg",), trec="ndcg", trec_cut="ndcg_cut"),
    "Rprec": Spec(cut=False, trec="Rprec"),
    "Bpref": Spec(cut=False, trec="bpref"),
    "Judged": Spec(()),
    "Success": Spec(needs_cut=True, trec_cut="success"),
    "NumRet": Spec(cut=False, trec="num_ret", summed=True),
    "NumRelRet": Spec(cut=False, trec="num_rel_ret", summed=True),
    "NumRel": Spec(cut=False, trec="num_rel", summed=True),
    "NumQ": Spec((), cut=False, trec="num_q", summed=True),
    # dataset unit span: characters of the relevant evidence against the union of the top-k results' spans
    "SpanRecall": Spec(needs_cut=True),
    "SpanPrecision": Spec(needs_cut=True),
    "SpanIoU": Spec(needs_cut=True),
}

#: The fixed table's measures (``metrics.per_case``: one column per measure and k), and the ``--k`` shorthand's.
FIXED = ("P", "R", "RR", "nDCG", "AP", "Success", "Judged")

# trec_eval's names: uncut -> measure, and the prefix of a cut one (``P_10``, ``ndcg_cut.5``) -> measure
_TREC = {spec.trec: name for name, spec in SPECS.items() if spec.trec} | {"R-prec": "Rprec"}
_TREC_CUT = {spec.trec_cut: name for name, spec in SPECS.items() if spec.trec_cut}
_TREC_RE = re.compile(rf"^({'|'.join(_TREC_CUT)})[_.](\d+)$")

_ALIASES = {
    "MRR": "RR",
    "MAP": "AP",
    "NDCG": "nDCG",
    "RPrec": "Rprec",
    "BPref": "Bpref",
    "Precision": "P",
    "Recall": "R",
}


def fixed_label(family: str, k: int, gain: str) -> str:
    """The printed name of a fixed-table column (``nDCG@10``) under ``gain``: the name ir_measures gives that
    figure, so the exponential gain prints as ``nDCG(dcg='exp-log2')@10`` and a plain ``nDCG@10`` is always
    trec_eval's linear-gain figure."""
    return f"{family}(dcg={GAIN_TO_DCG[gain]!r})@{k}" if family == "nDCG" and gain != "linear" else f"{family}@{k}"


def shown_columns(table: pa.Table, gain: str) -> pa.Table:
    """A fixed-table (``per_case``) table with its nDCG columns named as :func:`fixed_label` prints them."""
    names = [
        fixed_label("nDCG", int(c.split("@")[1]), gain) if c.startswith("nDCG@") else c for c in table.column_names
    ]
    return table.rename_columns(names)


class MeasureError(MetricsError):
    """A measure name that cannot be parsed; the message names the bad part and an example that works."""


@dataclass(frozen=True)
class Measure:
    """One measure with its parameters. ``rel``/``dcg`` of ``None`` mean "the dataset's setting" until resolved.

    ``cutoff`` of ``None`` means the whole ranked list. ``defaulted`` names the parameters :meth:`resolve` filled.
    """

    name: str
    cutoff: int | None = None
    rel: int | None = None
    dcg: str | None = None
    defaulted: tuple[str, ...] = ()
    params: tuple[float, ...] = ()  # a trec_eval family's parameters (``metrics.trec_families``)

    def __str__(self) -> str:
        """ir_measures' spelling, parameters that were given (or filled) included: ``nDCG(dcg='log2')@10``."""
        if self.name in FAMILIES:
            return self._family_str()
        params = []
        if self.rel is not None and "rel" not in self.defaulted:
            params.append(f"rel={self.rel}")
        if self.dcg is not None and ("dcg" not in self.defaulted or self.dcg != "log2"):
            params.append(f"dcg={self.dcg!r}")  # the exponential gain is never printed as plain nDCG
        name = self.name
        if name == "NumRelRet" and params:
            name = "NumRet"
        text = f"{name}({', '.join(params)})" if params else name
        return f"{text}@{self.cutoff}" if self.cutoff is not None else text

    def _family_str(self) -> str:
        fam = FAMILIES[self.name]
        if fam.cut:
            return cut_name(fam, self.params[0])
        if self.params == fam.params:
            return self.name
        return f"{self.name}({','.join(f'{x:g}' for x in self.params)})"

    @property
    def summed(self) -> bool:
        if self.name in FAMILIES:
            return FAMILIES[self.name].agg == "sum"
        return SPECS[self.name].summed

    def takes(self, param: str) -> bool:
        if self.name in FAMILIES:
            return param == "rel"
        return param in SPECS[self.name].params

    def resolve(self, threshold: int, gain: str) -> Measure:
        """Fill a left-out ``rel`` with the dataset's threshold, ``dcg`` with the gain; ``defaulted`` records it."""
        filled = list(self.defaulted)
        out = self
        if self.takes("rel") and self.rel is None and self.name != "NumRet":
            out, filled = replace(out, rel=threshold), [*filled, "rel"]
        if self.takes("dcg") and self.dcg is None:
            out, filled = replace(out, dcg=GAIN_TO_DCG[gain]), [*filled, "dcg"]
        return replace(out, defaulted=tuple(filled))

    def parameters(self, threshold_source: str = "dataset") -> str:
        """The parameters the figure was made with, a left-out one marked as taken from the dataset's threshold (or
        ``--threshold`` when the command was given one) or the gain."""
        parts = []
        if self.cutoff is not None:
            parts.append(f"cutoff={self.cutoff}")
        if self.rel is not None:
            source = " (--threshold)" if threshold_source == "--threshold" else " (dataset threshold)"
            parts.append(f"rel={self.rel}" + (source if "rel" in self.defaulted else ""))
        if self.dcg is not None:
            parts.append(f"dcg={self.dcg}" + (" (--gain)" if "dcg" in self.defaulted else ""))
        return ", ".join(parts)

    def trec_name(self, threshold: int) -> str | None:
        """trec_eval's name for this measure under ``-l threshold``, or None when trec_eval has no such measure."""
        if self.rel is not None and self.rel != threshold:
            return None
        if self.name in FAMILIES:
            return str(replace(self, rel=None, defaulted=()))
        if self.name == "NumRet" and self.rel is not None:
            return "num_rel_ret"
        if self.name == "nDCG" and self.dcg != "log2":
            return None
        spec = SPECS[self.name]
        if self.cutoff is None:
            return spec.trec
        return f"{spec.trec_cut}_{self.cutoff}" if spec.trec_cut else None


def _value(node: ast.expr, text: str) -> object:
    try:
        return ast.literal_eval(node)
    except ValueError as exc:
        raise MeasureError(f"measure {text!r}: {ast.unparse(node)!r} is not a literal value") from exc


def _from_trec(text: str) -> Measure | None:
    """A measure named as trec_eval names it (``P_10``, ``ndcg_cut.5``, ``map``, ``R-prec``), or None."""
    m = _TREC_RE.match(text)
    name = _TREC_CUT[m.group(1)] if m else _TREC.get(text)
    if name is None:
        return None
    dcg = "log2" if "dcg" in SPECS[name].params else None
    return Measure(name, cutoff=int(m.group(2)), dcg=dcg) if m else Measure(name, dcg=dcg)


def parse_measure(text: str) -> Measure:
    """``"nDCG(dcg='exp-log2')@10"`` -> ``Measure("nDCG", cutoff=10, dcg="exp-log2")``; raises :class:`MeasureError`
    naming the bad part (unknown name, parameter, value or cutoff)."""
    text = text.strip()
    family = parse_family(text)
    if family is not None:
        return Measure(family[0], params=family[1])
    trec = _from_trec(text)
    if trec is not None:
        return trec
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise MeasureError(f"measure {text!r}: not in ir_measures' syntax, e.g. nDCG@10 or P(rel=2)@5") from exc
    cutoff: object = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        cutoff, node = _value(node.right, text), node.left
    args: dict[str, object] = {}
    if isinstance(node, ast.Call):
        if node.args:
            raise MeasureError(f"measure {text!r}: parameters must be named, e.g. P(rel=2)@5")
        args = {str(kw.arg): _value(kw.value, text) for kw in node.keywords}
        node = node.func
    if not isinstance(node, ast.Name):
        raise MeasureError(f"measure {text!r}: expected a measure name such as nDCG, P, AP")
    return _build(text, _ALIASES.get(node.id, node.id), cutoff, args)


def _build(text: str, name: str, cutoff: object, args: dict[str, object]) -> Measure:
    if name not in SPECS:
        raise MeasureError(f"measure {text!r}: unknown measure {name!r}; use one of {', '.join(SPECS)}")
    spec = SPECS[name]
    params, cut_ok, cut_required = spec.params, spec.cut, spec.needs_cut
    if cutoff is not None and (not cut_ok or not isinstance(cutoff, int) or isinstance(cutoff, bool) or cutoff < 1):
        why = "takes no cutoff" if not cut_ok else f"cutoff {cutoff!r} must be an integer >= 1"
        raise MeasureError(f"measure {text!r}: {name} {why}")
    if cutoff is None and cut_required:
        raise MeasureError(f"measure {text!r}: {name} needs a cutoff, e.g. {name}@10")
    for key in args:
        if key not in params:
            allowed = ", ".join(params) or "none"
            raise MeasureError(f"measure {text!r}: {name} has no parameter {key!r} (supported: {allowed})")
    rel, dcg = args.get("rel"), args.get("dcg")
    if rel is not None and (not isinstance(rel, int) or isinstance(rel, bool)):
        raise MeasureError(f"measure {text!r}: rel={rel!r} must be an integer grade")
    if dcg is not None and dcg not in DCGS:
        raise MeasureError(f"measure {text!r}: dcg={dcg!r} is not one of {', '.join(DCGS)}")
    if name == "NumRet" and rel is not None:
        name = "NumRelRet"
    return Measure(name, cutoff=cutoff if isinstance(cutoff, int) else None, rel=rel, dcg=dcg if dcg else None)


def parse_measures(texts: Iterable[str | Measure]) -> list[Measure]:
    """Several measures, in order, duplicates dropped (``--measure`` is repeatable and may be comma-free)."""
    out: list[Measure] = []
    for t in texts:
        m = t if isinstance(t, Measure) else parse_measure(t)
        if m not in out:
            out.append(m)
    if not out:
        raise MeasureError("no measure given: name at least one, e.g. --measure nDCG@10")
    return out


def measures_for_ks(ks: Iterable[int], *, trec: bool = False) -> list[Measure]:
    """The ``--k`` shorthand as measures: per k P, R, nDCG, AP (and Success); trec-compat adds trec_eval's
    uncut set (map, Rprec, bpref, recip_rank, num_*) the way ``trec_eval -m`` prints them."""
    ks = list(ks)
    if not trec:
        return [Measure(n, cutoff=k) for n in FIXED for k in ks]
    head = [Measure(n) for n in ("NumQ", "NumRet", "NumRel", "NumRelRet", "AP", "Rprec", "Bpref", "RR")]
    cut = [
        Measure(n, cutoff=k, dcg="log2" if n == "nDCG" else None)
        for n in ("P", "R", "nDCG", "AP", "Success")
        for k in ks
    ]
    return head + cut
