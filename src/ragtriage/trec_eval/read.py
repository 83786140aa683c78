"""trec_eval's reading rules for ``ragtriage trec-eval``: which files it can read, the qrels grammar line by line,
and the bytes of ids that are not UTF-8.

trec_eval reads a file whole (an empty file, a device or a directory: "Cannot read"); a qrels line is four fields
separated by blanks (C's isspace), trailing blanks allowed, anything else (a blank line too) "Malformed line N",
where N counts the data lines read so far; a ``#`` in column 1 skips that line and the next line is read as data
whatever it starts with. The qrels are parsed here by that grammar (set-based, in DuckDB) and handed to the load's
frame reader; the run goes through the load's TREC readers, whose refusals are told in trec_eval's words when the
line breaks trec_eval's grammar too.

Ids are compared byte for byte (strcmp). A file that is not UTF-8 is read as Latin-1, one character per byte:
UTF-8 keeps the order of code points, so equality and byte order are the file's; the output is written back
byte for byte (``Outcome.encoding``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ragtriage.trec_eval.plan import TrecEvalError

if TYPE_CHECKING:
    import pyarrow as pa

_WS = r"[\t\x0b\x0c\r ]"  # C's isspace without the newline
_FIELD = r"[^\t\n\x0b\x0c\r ]+"
QRELS_LINE = f"^{_WS}*({_FIELD}){_WS}+{_FIELD}{_WS}+({_FIELD}){_WS}+({_FIELD}){_WS}*$"
RUN_LINE = f"^{_WS}*{_FIELD}{_WS}+{_FIELD}{_WS}+{_FIELD}{_WS}+{_FIELD}{_WS}+{_FIELD}{_WS}+{_FIELD}({_WS}.*)?$"
_WHO = {
    "qrels": ("get_qrels", "qrels"),
    "run": ("get_results", "results"),
    "prefs": ("get_prefs", "prefs"),
    "qrels_prefs": ("get_prefs", "prefs"),  # trec_eval's get_qrels_prefs.c says get_prefs here
    "qrels_jg": ("get_qrels_jg", "qrels"),
}


def readable(path: Path, role: str) -> None:
    """Refuse, as trec_eval does (exit 2, its two lines), a file it cannot read; a third line says what it is."""
    what = _what(path)
    if what is None:
        return
    reader, noun = _WHO[role]
    raise TrecEvalError(
        f"trec_eval.{reader}: Cannot read {noun} file '{path}'\ntrec_eval: Quit in file '{path}'\n"
        f"trec-eval: '{path}' {what}",
        2,
    )


def _what(path: Path) -> str | None:
    """What keeps trec_eval from reading ``path`` (the load's words, ``contract.errors.path_findings``), or None."""
    from ragtriage.contract.errors import path_findings

    found = path_findings(path)
    if found:
        return found[0].message
    return "is empty" if path.stat().st_size == 0 else None


def decoded(data: bytes) -> tuple[str, str]:
    """(text, encoding): UTF-8 when the bytes are, else Latin-1 (one character per byte, order and equality kept)."""
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def qrels_frame(path: Path, text: str) -> pa.Table:
    """The qrels by trec_eval's grammar: (query_id, doc_id, relevance) of each data line in file order; a malformed
    line stops as trec_eval stops (exit 2, its lines); a relevance that is not an integer is refused (trec_eval's
    atol would read it as its leading digits)."""
    from ragtriage.metrics.context import over_arrow

    lines = over_arrow(
        """WITH s AS (SELECT string_split(CASE WHEN suffix($t, chr(10)) THEN $t[:-2] ELSE $t END, chr(10)) AS ls),
           l AS (SELECT unnest(generate_series(1, len(ls))) AS n, unnest(ls) AS line FROM s),
           c AS (SELECT *, starts_with(line, '#') AS hash FROM l),
           r AS (SELECT *, n - row_number() OVER (PARTITION BY hash ORDER BY n) AS grp FROM c),
           k AS (SELECT *, row_number() OVER (PARTITION BY hash, grp ORDER BY n) AS k FROM r),
           d AS (SELECT n, line, row_number() OVER (ORDER BY n) AS idx FROM k WHERE NOT (hash AND k % 2 = 1))
           SELECT idx, n, regexp_extract(line, $re, ['qid', 'docno', 'rel']) AS f,
                  regexp_full_match(line, $re) AS ok FROM d ORDER BY idx""",
        {"t": text, "re": QRELS_LINE},
    )
    bad = over_arrow(
        "SELECT min(idx) FILTER (WHERE NOT ok) AS m, min(n) FILTER (WHERE ok AND NOT regexp_full_match(f.rel, "
        "'[+-]?[0-9]+')) AS g FROM lines",
        lines=lines,
    ).to_pylist()[0]
    if bad["m"] is not None:
        raise TrecEvalError(f"trec_eval.get_qrels: Malformed line {bad['m']}\ntrec_eval: Quit in file '{path}'", 2)
    if bad["g"] is not None:
        raise TrecEvalError(
            f"trec-eval: {path}:{bad['g']}: the relevance is not an integer (trec_eval would read its leading "
            "digits, or 0); refused",
            2,
        )
    return over_arrow(
        "SELECT f.qid AS query_id, f.docno AS doc_id, CAST(f.rel AS BIGINT) AS relevance FROM lines ORDER BY idx",
        lines=lines,
    )


def run_line_number(path: Path, line: int | None) -> int | None:
    """trec_eval's number of run file line ``line`` (data lines only: blank and ``#`` lines are skipped), or None
    when that line keeps trec_eval's grammar (trec_eval reads it; the refusal is ragtriage's own). ``line`` None:
    the first data line that breaks it."""
    import re

    pattern = re.compile(RUN_LINE.encode())
    blank = re.compile(rb"^[\t\x0b\x0c\r ]*(#.*)?$")
    idx = 0
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, start=1):  # only on the refusal path, up to the refused line
            body = raw.rstrip(b"\n")
            if blank.match(body):
                continue
            idx += 1
            if n == line or (line is None and not pattern.match(body)):
                return None if pattern.match(body) else idx
    return None
