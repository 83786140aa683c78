"""Which format a qrels, run or topics file is in, told from its first lines rather than its name.

Users arrive with ``qrels.dev.small.tsv``, ``run.bm25.txt.gz``, ``topics.301-350`` or ``test.json``: the name
says little, the content says enough. The first 64 KiB (decompressed) decide; the reader of the chosen format
then checks every line and names the ones that do not fit.

- qrels: ``trec`` (qid iter docno rel), ``beir`` (query-id corpus-id score, header optional), ``json``
  ({qid: {docno: rel}}), or the contract's labels (``jsonl``/``csv``/``tsv``/``parquet``);
- run: ``trec`` (qid Q0 docno rank score tag [extra...]), ``msmarco`` (qid docno rank), ``json``
  ({qid: {docno: score}}), or the contract's results;
- topics: ``trec-topics`` (<top><num>...<title>...), ``tsv`` (qid<TAB>text), ``beir`` (queries.jsonl: _id,
  text), or the contract's cases.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragtriage.contract.compression import MAX_LINE, compression_fault, head_bytes, plain_name
from ragtriage.contract.json_stream import bounded_loads

ROLES = ("qrels", "run", "topics")
FORMATS = {
    "qrels": ("trec", "beir", "json", "jsonl", "csv", "tsv", "parquet"),
    "run": ("trec", "msmarco", "json", "jsonl", "csv", "tsv", "parquet"),
    "topics": ("trec-topics", "tsv", "beir", "jsonl", "csv", "parquet"),
}
_NATIVE_KEY = {"qrels": "case_id", "run": "case_id", "topics": "id"}


@dataclass(frozen=True)
class Sniffed:
    fmt: str
    header: bool = False  # BEIR qrels: the first line is a header


class SniffError(ValueError):
    """The file's format cannot be told; the message says which formats were expected and how to name one.
    ``line`` is the line that told it, when one did."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def _data_lines(text: str, limit: int = 20) -> list[str]:
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            out.append(raw.rstrip("\r\n"))
        if len(out) >= limit:
            break
    return out


def is_number(s: str) -> bool:
    """Whether a field reads as a number (a BEIR score, fractional or not): a line whose third field is not one
    is a header. A fractional grade is a data line, which the reader then refuses, never a dropped header."""
    try:
        float(s)
    except ValueError:
        return False
    return True


def _json_kind(first: str) -> str:
    """``json`` for a dict-of-dicts (possibly spread over many lines), ``jsonl`` for one flat object per line."""
    try:
        obj = bounded_loads(first, MAX_LINE)
    except ValueError:  # not JSON, or beyond the parser's bounds: the dict reader names where
        return "json"
    if isinstance(obj, dict) and obj and all(isinstance(v, dict) for v in obj.values()):
        return "json"
    return "jsonl"


def sniff(path: Path, role: str, override: str | None = None) -> Sniffed:
    """The format of ``path`` read as ``role`` (qrels | run | topics); ``override`` names it outright."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    fault = compression_fault(path)
    if fault:
        raise SniffError(f"{path}{f':{fault[0]}' if fault[0] else ''}: {fault[1]}")
    if override:
        if override not in FORMATS[role]:
            raise SniffError(f"{path}: format {override!r} is not a {role} format; use {'|'.join(FORMATS[role])}")
        return Sniffed(override, header=override == "beir" and _has_header(path))
    head = head_bytes(path)
    if head.startswith(b"PAR1"):
        return Sniffed("parquet")
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = _data_lines(text)
    if not lines:
        raise SniffError(f"{path}: file holds no lines to read")
    first = lines[0].strip()
    if first.startswith("{"):
        return Sniffed(_json_kind(first))
    if first.startswith("["):
        raise SniffError(
            f"{path}:1: a JSON array at the top level is not a {role} format: JSON {role} is one object "
            "{qid: {docno: value}} (pytrec_eval, ranx), or JSONL with one object per line",
            line=1,
        )
    if role == "topics" and first.lower().startswith("<top"):
        return Sniffed("trec-topics")
    suffix = Path(plain_name(path)).suffix.lower()
    key = _NATIVE_KEY[role]
    if suffix == ".csv" or (("," in first) and key in [c.strip().strip('"') for c in first.split(",")]):
        return Sniffed("csv")
    if "\t" in first and key in [c.strip() for c in first.split("\t")]:
        return Sniffed("tsv")
    return _sniff_columns(path, role, lines)


def _sniff_columns(path: Path, role: str, lines: list[str]) -> Sniffed:
    fields = lines[0].split()
    n = len(fields)
    if role == "topics":
        if "\t" in lines[0]:
            return Sniffed("tsv")
        raise SniffError(f"{path}: not a topics file: expected 'qid<TAB>text' lines, <top> blocks or JSONL")
    if role == "qrels":
        if n == 4:
            return Sniffed("trec")
        if n == 3:
            return Sniffed("beir", header=beir_header([fields], comments=True))
        raise SniffError(
            f"{path}:1: expected a qrels line 'qid iter docno rel' (TREC) or 'query-id corpus-id score' (BEIR), "
            f"found {n} columns"
        )
    if n >= 6:
        return Sniffed("trec")
    if n == 3:
        return Sniffed("msmarco")
    raise SniffError(
        f"{path}:1: expected a run line 'qid Q0 docno rank score tag' (TREC) or 'qid docno rank' (MS MARCO), "
        f"found {n} columns"
    )


def _has_header(path: Path) -> bool:
    text = head_bytes(path, 8192).decode("utf-8", errors="replace")
    return beir_header((line.split() for line in text.splitlines()), comments=True)


def beir_header(lines: Iterable[Sequence[str]], *, comments: bool) -> bool:
    """The one BEIR header rule: the first non-blank line of ``lines`` (each split into its fields) is a header
    when it has three fields and the third is not a number (:func:`is_number`).

    ``comments`` names where the readers differ on ``#`` lines: sniffing skips them (``True``), as it skips them
    to tell any format; the BEIR stager reads every line as data (``False``), so a ``#`` first line is no header
    there and is refused by its width. ``tests/unit/test_beir_header.py`` pins each verdict."""
    for fields in lines:
        if not fields or (comments and fields[0].startswith("#")):
            continue
        return len(fields) == 3 and not is_number(fields[2])
    return False
