"""The gate file: a TOML document, read with tomllib, checked key by key before anything is evaluated.

A gate must be written before the candidate run exists and must mean exactly what it says, so every unknown key
or wrong type is an error naming the file, line and key (a typo such as ``tolerence`` would otherwise silently
drop a rule). Leakage cannot be disabled or relaxed: a ``[leakage]`` table may only raise the share of cases it
must have checked (``min_checked_share``); any other key in it is an error.
"""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragtriage.contract.dimensions import SLICE_DIMENSIONS as SLICE_COLUMNS
from ragtriage.contract.errors import path_findings
from ragtriage.contract.limits import MAX_CUTOFF

REPRO_ITEMS = (
    "dataset_version",
    "corpus_snapshot",
    "configuration",
    "raw_results",
    "evaluator_version",
    "gate_file_predates_run",
)


class GateFileError(ValueError):
    """The gate file cannot be used; the message names the file, line and key."""

    def __init__(self, path: Path, line: int | None, key: str | None, message: str) -> None:
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {message}" + (f" (key {key!r})" if key and key not in message else ""))
        self.path, self.line, self.key = path, line, key


@dataclass(frozen=True)
class Leakage:
    """Leakage is always checked; ``min_checked_share`` is the share of cases it must have been able to check (cases
    with a principal, given a manifest). With the default 0 the rule still fails when no case was checked."""

    min_checked_share: float = 0.0


@dataclass(frozen=True)
class Regression:
    metric: str
    tolerance: float = 0.0
    require_significance: bool = False
    alpha: float = 0.05
    split: str | None = "holdout"
    split_default: bool = False  # no split given: holdout where the dataset has splits, else all cases


@dataclass(frozen=True)
class SliceMinimum:
    column: str
    value: str
    metric: str
    min: float
    split: str | None = "holdout"
    split_default: bool = False  # no split given: holdout where the dataset has splits, else all cases


@dataclass(frozen=True)
class CriticalCases:
    metric: str
    min: float
    split: str | None = None


@dataclass(frozen=True)
class ZeroHit:
    k: int
    max_rate: float
    split: str | None = "holdout"
    split_default: bool = False  # no split given: holdout where the dataset has splits, else all cases


@dataclass(frozen=True)
class NegativeCases:
    min_share: float = 1.0


@dataclass(frozen=True)
class Latency:
    p95_ms: float | None = None
    max_timeouts: int | None = None


@dataclass(frozen=True)
class GateConfig:
    path: Path
    sha256: str
    mtime: datetime
    name: str = "gate"
    split: str | None = "holdout"
    report_by: str = "query_type"
    seed: int = 0
    n_resamples: int = 10_000
    leakage: Leakage = Leakage()
    regressions: tuple[Regression, ...] = ()
    slice_minima: tuple[SliceMinimum, ...] = ()
    critical: CriticalCases | None = None
    zero_hit: ZeroHit | None = None
    negatives: NegativeCases | None = None
    latency: Latency | None = None
    reproducibility: tuple[str, ...] = REPRO_ITEMS
    reproducibility_asked: bool = False  # the file has a [reproducibility] table: its items hold for every run
    metrics: tuple[str, ...] = field(default=())

    def has_own_rules(self) -> bool:
        """Whether the file names a rule beyond the built-in leakage and reproducibility ones: the kinds
        ``rules.relevance_rules`` adds after leakage."""
        return bool(
            self.regressions or self.slice_minima or self.critical or self.zero_hit or self.negatives or self.latency
        )

    def ks(self) -> tuple[int, ...]:
        """Every cutoff a rule needs, so per-case metrics are computed once."""
        cut = {cutoff_of(m) for m in self.metrics}
        if self.zero_hit:
            cut.add(self.zero_hit.k)
        return tuple(sorted(cut)) or (10,)


# Allowed keys per table and their types (float accepts int too).
_SPECS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "gate": {"name": str, "split": str, "report_by": str, "seed": int, "n_resamples": int},
    "leakage": {"min_checked_share": (int, float)},
    "regression": {
        "metric": str,
        "tolerance": (int, float),
        "require_significance": bool,
        "alpha": (int, float),
        "split": str,
    },
    "slice_minimum": {"slice": dict, "metric": str, "min": (int, float), "split": str},
    "critical_cases": {"metric": str, "min": (int, float), "split": str},
    "zero_hit": {"k": int, "max_rate": (int, float), "split": str},
    "negative_cases": {"min_share": (int, float)},
    "latency": {"p95_ms": (int, float), "max_timeouts": int},
    "reproducibility": {"require": list},
}
_REQUIRED = {
    "regression": ("metric",),
    "slice_minimum": ("slice", "metric", "min"),
    "critical_cases": ("metric", "min"),
    "zero_hit": ("k", "max_rate"),
}
# The range of every number (low, high, whether each end is allowed): a number outside it, NaN or infinite is
# refused before any rule runs, so no value can make a comparison vacuously true (``d < -nan`` never fails).
_RANGES: dict[tuple[str, str], tuple[float, float, bool, bool]] = {
    ("gate", "seed"): (0, 2**32 - 1, True, True),
    ("gate", "n_resamples"): (1, 10**8, True, True),
    ("regression", "tolerance"): (0, 1, True, True),
    ("regression", "alpha"): (0, 1, False, False),
    ("slice_minimum", "min"): (0, 1, True, True),
    ("critical_cases", "min"): (0, 1, True, True),
    ("zero_hit", "k"): (1, MAX_CUTOFF, True, True),
    ("zero_hit", "max_rate"): (0, 1, True, True),
    ("negative_cases", "min_share"): (0, 1, True, True),
    ("latency", "p95_ms"): (0, math.inf, False, False),
    ("latency", "max_timeouts"): (0, 2**31 - 1, True, True),
}
_ARRAYS = ("regression", "slice_minimum")
_COLUMNS = ", ".join(SLICE_COLUMNS)


def _key_line(text: str, table: str, index: int, key: str | None) -> int | None:
    """Line of ``key`` inside the ``index``-th ``[table]``/``[[table]]`` (or of the header when key is None)."""
    lines = text.splitlines()
    header = re.compile(rf"^\s*\[\[?\s*{re.escape(table)}\s*\]\]?\s*(#.*)?$")
    any_header = re.compile(r"^\s*\[")
    seen, start = -1, None
    for i, line in enumerate(lines):
        if header.match(line):
            seen += 1
            if seen == index:
                start = i
                break
    if start is None:
        if key is None:
            return None
        return next((i + 1 for i, ln in enumerate(lines) if re.match(rf"^\s*{re.escape(key)}\s*=", ln)), None)
    if key is None:
        return start + 1
    pat = re.compile(rf"(^|[\s{{,]){re.escape(key)}\s*=")
    for i in range(start + 1, len(lines)):
        if any_header.match(lines[i]):
            break
        if pat.search(lines[i].split("#", 1)[0]):
            return i + 1
    return start + 1


class _Reader:
    def __init__(self, path: Path, text: str) -> None:
        self.path, self.text = path, text

    def fail(self, table: str, index: int, key: str | None, message: str) -> GateFileError:
        return GateFileError(self.path, _key_line(self.text, table, index, key), key, message)

    def check(self, table: str, index: int, body: Any) -> dict[str, Any]:
        label = f"[[{table}]]" if table in _ARRAYS else f"[{table}]"
        if not isinstance(body, dict):
            raise self.fail(table, index, None, f"{label} must be a table")
        spec = _SPECS[table]
        for key, value in body.items():
            if key not in spec:
                if table == "leakage":
                    raise self.fail(
                        table,
                        index,
                        key,
                        f"[leakage] takes only min_checked_share: leakage is always checked and "
                        f"cannot be disabled or relaxed (remove {key!r})",
                    )
                allowed = ", ".join(spec)
                raise self.fail(table, index, key, f"unknown key {key!r} in {label}; allowed: {allowed}")
            kind = spec[key]
            if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
                raise self.fail(table, index, key, f"{label} {key} has the wrong type ({type(value).__name__})")
            self.in_range(table, index, key, value)
        for key in _REQUIRED.get(table, ()):
            if key not in body:
                raise self.fail(table, index, None, f"{label} needs {key!r}")
        return body

    def in_range(self, table: str, index: int, key: str, value: Any) -> None:
        """Refuse a number that is NaN, infinite or outside the key's range."""
        bounds = _RANGES.get((table, key))
        if bounds is None or isinstance(value, bool) or not isinstance(value, int | float):
            return
        lo, hi, lo_in, hi_in = bounds
        label = f"[[{table}]]" if table in _ARRAYS else f"[{table}]"
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(table, index, key, f"{label} {key} = {value} is not a finite number")
        below = value < lo or (value == lo and not lo_in)
        above = value > hi or (value == hi and not hi_in)
        if below or above:
            span = f"{'[' if lo_in else '('}{_num(lo)}, {_num(hi)}{']' if hi_in else ')'}"
            raise self.fail(table, index, key, f"{label} {key} = {value} is out of range {span}")

    def share(self, table: str, key: str, value: float) -> float:
        """A share of cases: a finite number in [0, 1] (NaN or inf from TOML would make the rule meaningless)."""
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise self.fail(table, 0, key, f"[{table}] {key} must be a finite number from 0 to 1, not {value!r}")
        return float(value)

    def metric(self, table: str, index: int, name: str) -> str:
        if (m := re.search(r"@(\d+)$", name)) and int(m.group(1)) > MAX_CUTOFF:
            raise self.fail(table, index, "metric", f"{name}: cutoff {m.group(1)} is out of range [1, {MAX_CUTOFF}]")
        try:
            return gate_metric(name)
        except ValueError as exc:
            raise self.fail(table, index, "metric", str(exc)) from exc


def _num(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:g}" if isinstance(x, float) else str(x)


def gate_metric(name: str) -> str:
    """The fixed-table column a gate rule reads for measure ``name`` (parsed by ``metrics.measures``: ``MRR@10``
    and ``recall_5`` name ``RR@10`` and ``R@5``); a ValueError names what the gate takes."""
    from ragtriage.metrics.measures import parse_measure
    from ragtriage.metrics.per_case import MEASURES, fixed_column

    column = fixed_column(parse_measure(name))
    if column is None or "@" not in column:
        raise ValueError(
            f"metric {name!r}: a gate rule takes one of {', '.join(MEASURES)} at a cutoff, at the dataset's "
            "threshold and gain (e.g. nDCG@10)"
        )
    return column


def for_data(config: GateConfig, has_splits: bool) -> GateConfig:
    """``config`` with every rule that names no split (nor does ``[gate]``) on the data's default split: the holdout
    where the dataset has splits, else all cases. A dataset without splits has no holdout, and a rule on it would
    measure nothing."""
    if has_splits:
        return config

    def on_all(rule: Any) -> Any:
        return replace(rule, split=None) if rule is not None and rule.split_default else rule

    return replace(
        config,
        regressions=tuple(map(on_all, config.regressions)),
        slice_minima=tuple(map(on_all, config.slice_minima)),
        zero_hit=on_all(config.zero_hit),
    )


def split_note(split: str | None, defaulted: bool) -> tuple[str, ...]:
    """The note a rule on the default split carries, saying which split that was and why."""
    if not defaulted:
        return ()
    if split is None:
        return ("split: all cases (the dataset has no splits; the default is the holdout where it has them)",)
    return (f'split: {split} (the default where the dataset has splits; set split = "all" for every case)',)


def cutoff_of(metric: str) -> int:
    """The cutoff of a metric :func:`gate_metric` accepted (``nDCG@10`` -> 10)."""
    return int(metric.rsplit("@", 1)[1])


def _split(value: str | None) -> str | None:
    return None if value in (None, "all", "*") else value


def parse_gate(path: Path) -> GateConfig:
    """Read and check a gate file; any problem raises GateFileError (the CLI exits 2)."""
    unreadable = path_findings(path)  # before opening: a FIFO would wait for a writer forever
    if unreadable:
        raise GateFileError(path, None, None, f"cannot read the gate file ({unreadable[0].message})")
    from ragtriage.contract.staging import compression_findings

    damaged = compression_findings(path)  # a NUL byte is refused as in every input
    if damaged:
        raise GateFileError(path, damaged[0].line, damaged[0].field, damaged[0].message)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise GateFileError(path, None, None, f"cannot read the gate file: {exc.strerror}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise GateFileError(
            path, line, None, f"not valid UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start}); save it as UTF-8"
        ) from exc
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise GateFileError(path, int(m.group(1)) if m else None, None, f"not valid TOML: {exc}") from exc
    r = _Reader(path, text)
    for top in doc:
        if top not in _SPECS:
            raise GateFileError(
                path,
                _key_line(text, top, 0, None) or _key_line(text, "", 0, top),
                top,
                f"unknown table {top!r}; allowed: {', '.join(_SPECS)}",
            )
    gate = r.check("gate", 0, doc.get("gate", {}))
    default_split = _split(gate.get("split", "holdout"))
    defaulted = "split" not in gate  # a rule without a split of its own takes the data's default

    def on_split(rule: dict[str, Any]) -> tuple[str | None, bool]:
        """A rule's split and whether it is the data's default (neither the rule nor ``[gate]`` names one)."""
        return _split(rule.get("split", default_split)), defaulted and "split" not in rule

    report_by = gate.get("report_by", "query_type")
    if report_by not in SLICE_COLUMNS:
        raise r.fail("gate", 0, "report_by", f"report_by {report_by!r} is not a slice column: {_COLUMNS}")
    leak = r.check("leakage", 0, doc.get("leakage", {}))
    kw: dict[str, Any] = {
        "leakage": Leakage(r.share("leakage", "min_checked_share", leak.get("min_checked_share", 0.0)))
    }
    for table in _ARRAYS:
        items = doc.get(table, [])
        if not isinstance(items, list):
            raise r.fail(table, 0, None, f"use [[{table}]] (an array of tables), one per rule")
        for i, item in enumerate(items):
            r.check(table, i, item)
    kw["regressions"] = tuple(
        Regression(
            r.metric("regression", i, b["metric"]),
            float(b.get("tolerance", 0.0)),
            bool(b.get("require_significance", False)),
            float(b.get("alpha", 0.05)),
            *on_split(b),
        )
        for i, b in enumerate(doc.get("regression", []))
    )
    minima = []
    for i, b in enumerate(doc.get("slice_minimum", [])):
        sl = b["slice"]
        if len(sl) != 1 or not isinstance(next(iter(sl.values())), str | bool | int):
            raise r.fail("slice_minimum", i, "slice", 'slice must hold one column = value, e.g. { doc_type = "table" }')
        ((column, value),) = sl.items()
        if column not in SLICE_COLUMNS:
            raise r.fail("slice_minimum", i, column, f"cannot slice by {column!r}; use one of {_COLUMNS}")
        text_value = str(value).lower() if isinstance(value, bool) else str(value)
        minima.append(
            SliceMinimum(
                column,
                text_value,
                r.metric("slice_minimum", i, b["metric"]),
                float(b["min"]),
                *on_split(b),
            )
        )
    kw["slice_minima"] = tuple(minima)
    if "critical_cases" in doc:
        b = r.check("critical_cases", 0, doc["critical_cases"])
        kw["critical"] = CriticalCases(
            r.metric("critical_cases", 0, b["metric"]), float(b["min"]), _split(b.get("split", "all"))
        )
    if "zero_hit" in doc:
        b = r.check("zero_hit", 0, doc["zero_hit"])
        kw["zero_hit"] = ZeroHit(int(b["k"]), float(b["max_rate"]), *on_split(b))
    if "negative_cases" in doc:
        b = r.check("negative_cases", 0, doc["negative_cases"])
        kw["negatives"] = NegativeCases(float(b.get("min_share", 1.0)))
    if "latency" in doc:
        b = r.check("latency", 0, doc["latency"])
        if not b:
            raise r.fail("latency", 0, None, "[latency] needs p95_ms and/or max_timeouts")
        kw["latency"] = Latency(float(b["p95_ms"]) if "p95_ms" in b else None, b.get("max_timeouts"))
    if "reproducibility" in doc:
        b = r.check("reproducibility", 0, doc["reproducibility"])
        req = b.get("require", list(REPRO_ITEMS))
        bad = [x for x in req if x not in REPRO_ITEMS]
        if bad:
            raise r.fail(
                "reproducibility",
                0,
                "require",
                f"unknown reproducibility item(s) {bad}; allowed: {', '.join(REPRO_ITEMS)}",
            )
        kw["reproducibility"] = tuple(req)
        kw["reproducibility_asked"] = True
    metrics = {x.metric for x in kw["regressions"]} | {x.metric for x in kw["slice_minima"]}
    if "critical" in kw:
        metrics.add(kw["critical"].metric)
    return GateConfig(
        path=path,
        sha256=hashlib.sha256(raw).hexdigest(),
        mtime=datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(tzinfo=None),
        name=str(gate.get("name", path.stem)),
        split=default_split,
        report_by=report_by,
        seed=int(gate.get("seed", 0)),
        n_resamples=int(gate.get("n_resamples", 10_000)),
        metrics=tuple(sorted(metrics)),
        **kw,
    )
