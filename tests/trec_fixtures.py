"""Seeded TREC qrels and runs of our own for the trec_eval-compatibility tests, and trec_eval's printed lines for
them built from pytrec_eval (trec_eval's own C code) per query.

The collection is made to hold what those tests rely on, each property a place where a reader or a measure can
go wrong (``tests/unit/test_trec_fixtures.py`` asserts every one, so the files cannot quietly lose them):

- many tied scores, within and across relevance levels, so trec_eval's order (score descending, then docno
  descending in byte order) decides ranks, top ranks included; docnos that sort one way as strings and another as
  numbers (``7`` > ``42`` > ``310``; ``FT9-7`` > ``FT9-10``) and in upper and lower case;
- graded labels -1..4 (``-l2`` reads grade 1 as not relevant), qrels documents the run does not retrieve, run
  documents the qrels do not judge;
- topics whose judgements hold no relevant document (one of them only at ``-l2``), one list deeper than 1000;
- query ids of 1-3 digits, so their byte order (trec_eval's ``-q`` order) is not their numeric order;
- a run topic the qrels lack (trec_eval ignores it); the truncated run also misses qrels topics (``-c`` scores
  them 0) and has columns after the run tag on some lines;
- files written with single spaces, or with tabs and space-padded fields (the general reader's path).
"""

from __future__ import annotations

import gzip
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]
RunLine = tuple[str, str, int, float, str]  # qid, docno, rank column, score, what follows the score

SEED = 20261205
TAG = "seeded"
RUN_ONLY = "998"  # a run topic the qrels lack
CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
#: trec_eval's measures as ``-m all_trec -q`` prints the ones ragtriage computes, in its order
TREC_MEASURES = [
    "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank",
    *(f"P_{k}" for k in CUTS), *(f"recall_{k}" for k in CUTS), "ndcg", *(f"ndcg_cut_{k}" for k in CUTS),
    *(f"map_cut_{k}" for k in CUTS), "success_1", "success_5", "success_10",
]  # fmt: skip
COUNTS = {"num_q", "num_ret", "num_rel", "num_rel_ret"}


@dataclass(frozen=True)
class Collection:
    """Graded judgements and one run, as generated; ``lines`` is the run file's order (topics contiguous, lines
    shuffled within each, the rank column a shuffle too: trec_eval reads neither)."""

    qrels: Qrels
    lines: tuple[RunLine, ...]
    no_relevant: tuple[str, ...]  # qrels topics without a document of grade >= 1
    only_grade_1: str  # a topic whose relevant documents are all grade 1: none relevant at -l2
    missing: tuple[str, ...]  # qrels topics the truncated run drops

    def run(self) -> Run:
        return as_run(self.lines)

    def truncated(self, seed: int = SEED) -> tuple[RunLine, ...]:
        """The run without the ``missing`` topics, each other list cut after a random share of its lines, and
        words after the tag on some lines (trec_eval ignores them; ragtriage's load notes them)."""
        rnd = random.Random(seed + 1)
        out: list[RunLine] = []
        for qid in dict.fromkeys(line[0] for line in self.lines):
            if qid in self.missing:
                continue
            rows = [line for line in self.lines if line[0] == qid]
            for q, d, r, s, _ in rows[: max(3, int(len(rows) * rnd.uniform(0.1, 1.0)))]:
                out.append((q, d, r, s, " junk at end" if rnd.random() < 0.08 else ""))
        return tuple(out)


def binary(qrels: Qrels) -> Qrels:
    """The graded judgements read as 0/1 (grade >= 1), the shape of trec_eval's qrels.test."""
    return {q: {d: int(g >= 1) for d, g in docs.items()} for q, docs in qrels.items()}


def as_run(lines: Iterable[RunLine]) -> Run:
    out: Run = {}
    for q, d, _, s, _ in lines:
        out.setdefault(q, {})[d] = s
    return out


def _qids(rnd: random.Random, n: int) -> list[str]:
    """``n`` distinct ids of 1-3 digits, every length present."""
    picked = {rnd.randint(1, 9), rnd.randint(10, 99), rnd.randint(100, 400)}
    while len(picked) < n:
        picked.add(rnd.choice([rnd.randint(1, 9), rnd.randint(10, 99), rnd.randint(100, 400)]))
    out = [str(q) for q in picked if str(q) != RUN_ONLY]
    rnd.shuffle(out)
    return out[:n]


def _docnos(rnd: random.Random, n: int) -> list[str]:
    """``n`` distinct docnos: plain numbers of 1-5 digits, and ``FT<n>-<n>`` / ``ft<n>-<n>`` unpadded."""
    out: dict[str, None] = {}
    while len(out) < n:
        style = rnd.random()
        if style < 0.45:
            d = str(rnd.randint(1, 10 ** rnd.randint(1, 5)))
        else:
            d = f"{'FT' if style < 0.85 else 'ft'}{rnd.randint(1, 9)}-{rnd.randint(1, 10 ** rnd.randint(1, 4))}"
        out[d] = None
    return list(out)


def _grade(rnd: random.Random) -> int:
    return rnd.choices([-1, 0, 1, 2, 3, 4], weights=[8, 60, 16, 7, 6, 3])[0]


def _scores(rnd: random.Random, signal: list[float], style: str) -> list[float]:
    """Scores for documents of the given signal (higher is better): coarse steps (ties everywhere), fine values
    with copied scores (ties anywhere in the list), or negative log-like steps."""
    noisy = [s + rnd.gauss(0, 1.2) for s in signal]
    if style == "coarse":
        return [round(v * 2) / 2 + 5.0 for v in noisy]
    if style == "negative":
        return [-round(abs(8 - v) * 8) / 8 for v in noisy]
    fine = [round(10 + v * 1.7, 4) for v in noisy]
    for i in range(len(fine)):
        if rnd.random() < 0.25:
            fine[i] = fine[rnd.randrange(len(fine))]
    return fine


def collection(
    seed: int = SEED, topics: int = 25, depth: tuple[int, int] = (120, 360), deep: int = 1100, run_only: bool = True
) -> Collection:
    """The seeded collection: ``topics`` qrels topics of ``depth`` retrieved documents (one of ``deep``, when
    ``deep`` is set), and, with ``run_only``, the run topic the qrels lack."""
    rnd = random.Random(seed)
    qids = _qids(rnd, topics)
    no_relevant = (qids[1], qids[4])
    only_grade_1 = qids[2]
    qrels: Qrels = {}
    lines: list[RunLine] = []
    for i, qid in enumerate(qids):
        n = deep if deep and i == 3 else rnd.randint(*depth)
        docs = _docnos(rnd, n + n // 3)
        retrieved, unretrieved = docs[:n], docs[n:]
        grades = {d: _grade(rnd) for d in retrieved if rnd.random() < 0.6}
        grades |= {d: rnd.choice([1, 1, 2, 3, 4, 0]) for d in unretrieved if rnd.random() < 0.5}
        if qid in no_relevant:
            grades = {d: min(g, 0) for d, g in grades.items()}
        elif qid == only_grade_1:
            grades = {d: min(g, 1) for d, g in grades.items()}
        qrels[qid] = grades
        signal = [max(grades.get(d, 0), 0) * 0.8 for d in retrieved]
        style = ("coarse", "fine", "negative")[i % 3]
        rows = list(zip(retrieved, _scores(rnd, signal, style), rnd.sample(range(1, n + 1), n), strict=True))
        rnd.shuffle(rows)
        lines += [(qid, d, r, s, "") for d, s, r in rows]
        if run_only and i == topics // 2:  # the run-only topic, among the others
            lines += [(RUN_ONLY, f"x{j}", j + 1, float(20 - j), "") for j in range(12)]
    missing = tuple(qids[i] for i in (4, 7, 11) if i < len(qids))
    return Collection(qrels, tuple(lines), no_relevant, only_grade_1, missing)


def small(seed: int = SEED) -> Collection:
    """Five topics of 20-30 retrieved documents each (two without a relevant document), no deep list and no
    run-only topic: for tests that write the same data in many formats and count what they load."""
    return collection(seed, topics=5, depth=(20, 30), deep=0, run_only=False)


# --- writers ---------------------------------------------------------------------------------------------------


def qrels_text(qrels: Qrels, padded: bool = False) -> str:
    """One line per judgement, topics in numeric order, documents in dict order; ``padded``: tab-separated with
    the grade right-aligned in two characters (``\\t 1``, ``\\t-1``)."""
    out = []
    for q in sorted(qrels, key=int):
        for d, g in qrels[q].items():
            out.append(f"{q}\t0\t{d}\t{g:>2}" if padded else f"{q} 0 {d} {g}")
    return "".join(f"{line}\n" for line in out)


def run_text(lines: Iterable[RunLine], padded: bool = False, tag: str = TAG) -> str:
    """One line per result in the given order; ``padded``: tab-separated, the score space-padded to ten
    characters with six decimals as trec_eval's own test run has them (``\\t  2.129133\\t``)."""
    if padded:
        return "".join(f"{q}\tQ0\t{d}\t{r}\t{s:10.6f}\t{tag}{x}\n" for q, d, r, s, x in lines)
    return "".join(f"{q} Q0 {d} {r} {s!r} {tag}{x}\n" for q, d, r, s, x in lines)


def write(path: Path, text: str) -> Path:
    """``text`` to ``path``, gzipped when the name ends in ``.gz``."""
    data = text.encode()
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)
    return path


def read_qrels(path: Path) -> Qrels:
    """A qrels file as trec_eval reads it (any whitespace, gzipped or not)."""
    out: Qrels = {}
    for f in _fields(path):
        out.setdefault(f[0], {})[f[2]] = int(f[3])
    return out


def read_run(path: Path) -> Run:
    """A run file as trec_eval reads it (score from the text, words after the tag ignored)."""
    out: Run = {}
    for f in _fields(path):
        out.setdefault(f[0], {})[f[2]] = float(f[4])
    return out


def _fields(path: Path) -> list[list[str]]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return [line.split() for line in raw.decode().splitlines() if line.strip()]


# --- trec_eval's output, from pytrec_eval ------------------------------------------------------------------------

_CUT = re.compile(r"(P|recall|ndcg_cut|map_cut|success)_(\d+)")


def pytrec_measures(names: Sequence[str]) -> set[str]:
    """pytrec_eval's measure specs for trec_eval's printed names (``P_5`` -> ``P.5``, cutoffs of a family
    joined)."""
    cuts: dict[str, list[str]] = {}
    plain = set()
    for name in names:
        m = _CUT.fullmatch(name)
        if m:
            cuts.setdefault(m[1], []).append(m[2])
        elif name != "num_q":
            plain.add(name)
    return plain | {f"{family}.{','.join(ks)}" for family, ks in cuts.items()}


def per_query(qrels: Qrels, run: Run, names: Sequence[str], level: int = 1) -> dict[str, dict[str, float]]:
    """pytrec_eval's value of each name for every qrels topic, a topic absent from the run evaluated on an empty
    list (what ``trec_eval -c`` does with it); run topics the qrels lack are left out, as trec_eval does."""
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, pytrec_measures(names), relevance_level=level)
    values: dict[str, dict[str, float]] = evaluator.evaluate({q: run.get(q, {}) for q in qrels})
    return values


def _line(name: str, qid: str, value: float) -> str:
    """trec_eval's print layout: name left-aligned in 22, a tab, the query, a tab, ``%ld`` for counts and
    ``%6.4f`` otherwise."""
    text = str(round(value)) if name in COUNTS else f"{value:6.4f}"
    return f"{name:<22}\t{qid}\t{text}"


def trec_eval_lines(
    qrels: Qrels, run: Run, names: Sequence[str], level: int = 1, complete_total: bool = False
) -> list[str]:
    """What ``trec_eval -q -l{level}`` prints for ``names`` (in the order given), with ``-c`` for the qrels topics
    absent from the run: each qrels topic's lines in byte order of its id (``num_q`` only in the summary), then
    the ``all`` lines: counts summed, every other value the mean over all qrels topics, summed in the order
    trec_eval sums them. ``complete_total``: the ``num_rel all`` line as trec_eval prints it when ``-c`` is given,
    every judgment graded 1 or more whatever the level (its per-query lines keep the level)."""
    values = per_query(qrels, run, names, level)
    topics = sorted(qrels, key=lambda q: q.encode())
    out = [_line(n, q, values[q][n]) for q in topics for n in names if n != "num_q"]
    for n in names:
        column = [1.0 if n == "num_q" else values[q][n] for q in topics]
        total = 0.0
        for v in column:
            total += v
        if complete_total and n == "num_rel":
            total = float(sum(grade >= 1 for docs in qrels.values() for grade in docs.values()))
        out.append(_line(n, "all", total if n in COUNTS else total / len(topics)))
    return out


@dataclass(frozen=True)
class Files:
    """The collections written once per test process (``tests/conftest.py``'s ``trec_files``), each file both
    gzipped as written by trec_eval's test folder (qrels single-spaced, runs tab-separated with padded scores)
    and plain with single spaces (what the store-less light path reads):

    ``qrels`` (0/1), ``graded`` (-1..4), ``run``, ``trunc`` (with columns after the tag) with the suffix ``.gz``
    or ``.txt``; ``small.qrels`` and ``small.run``: the small collection, tab-separated and padded."""

    folder: Path
    full: Collection
    small: Collection

    def __call__(self, name: str) -> Path:
        return self.folder / name


def write_files(folder: Path) -> Files:
    full, little = collection(), small()
    texts = {
        "qrels": (qrels_text(binary(full.qrels)), qrels_text(binary(full.qrels))),
        "graded": (qrels_text(full.qrels, padded=True), qrels_text(full.qrels)),
        "run": (run_text(full.lines, padded=True), run_text(full.lines)),
        "trunc": (run_text(full.truncated(), padded=True), run_text(full.truncated())),
    }
    for name, (packed, plain) in texts.items():
        write(folder / f"{name}.gz", packed)
        write(folder / f"{name}.txt", plain)
    write(folder / "small.qrels", qrels_text(little.qrels, padded=True))
    write(folder / "small.run", run_text(little.lines, padded=True))
    return Files(folder, full, little)
