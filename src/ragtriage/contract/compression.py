"""Compressed inputs (.gz, .bz2) read like plain ones, recognised by their magic bytes whatever the file name.

DuckDB's readers decompress gzip themselves (``compression='gzip'``), so a gzipped run is still scanned
in vectorised C++. DuckDB has no bzip2 reader: a bzip2 file is decompressed once, in blocks, into a scratch file
that lives as long as the load (``scratch()``), and DuckDB reads that copy. The bounds every text input is held
to (decompressed size and ratio, line length, NUL bytes) are checked here, in the one pass over its bytes.

A NUL byte in a text input is refused, in every reader, plain or compressed, on any line (a header and a
comment too): a text file holds none, so one means a binary file, a corrupt one or UTF-16 without its byte-order
mark, and DuckDB's readers would otherwise cut a value at it, load it as an id, or skip its line unseen.

The rule is applied where every text input is read through once (``scan``); the finding names the
file, the line and the field: the JSON key before the NUL on a JSON line, else the column it falls in (tab-,
comma- or whitespace-separated as the line and the file name say).
"""

from __future__ import annotations

import atexit
import bz2
import gzip
import re
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ragtriage.safe_text import visible

_GZIP, _BZ2 = b"\x1f\x8b", b"BZh"
_scratch: list[Path] = []

MAX_RATIO = 100
"""Decompressed bytes per compressed byte a file may reach once past ``RATIO_FREE`` (text runs and qrels compress
5-20 times): beyond it the file is refused as a decompression bomb before any reader sees it."""
RATIO_FREE = 64 << 20
MAX_DECOMPRESSED = 64 << 30
"""Decompressed bytes no input may exceed, whatever its ratio."""
_BLOCK = 1 << 22
MAX_LINE = 64 << 20
"""The longest line the text readers take (``staging._LONG_LINES``): DuckDB's reader drops a longer line without a
word, so a file holding one is refused here, naming the line."""


@dataclass(frozen=True)
class TextScan:
    """One pass over a file's decompressed bytes: what is wrong with it (``fault``: line or None, and what), and
    what the TREC fast path needs to know (``contract/trec_csv.census``): lines, whether the last one lacks its
    newline, whether a tab or a space occurs anywhere, and whether some CR does not end a line."""

    fault: tuple[int | None, str] | None
    lines: int = 0
    unterminated: bool = False
    has_tab: bool = False
    has_space: bool = False
    lone_cr: bool = False
    fault_code: str = "compression"  # the finding's code (``NUL_CODE`` for a NUL byte)
    fault_field: str | None = None  # the field the fault is in, when it is in one


_scanned: dict[tuple[str, int, int], TextScan] = {}


def compression_fault(path: Path) -> tuple[int | None, str] | None:
    """What is wrong with a compressed file, read to its end once (None for plain files and sound ones).

    Every byte is accounted for: a truncated or corrupt stream, a NUL byte (see below; a run followed by a
    gigabyte of NULs loaded its first lines and nothing said so), and output beyond ``MAX_RATIO`` times the
    compressed size (after the first ``RATIO_FREE`` bytes) or ``MAX_DECOMPRESSED`` are each refused by name, as
    (line or None, what is wrong)."""
    return scan(path).fault if compression_of(path) else None


def text_fault(path: Path) -> TextScan | None:
    """The scan of any text input (not Parquet) when it found a fault: ``compression_fault``, a NUL byte
    (plain files too), or a line longer than ``MAX_LINE``."""
    if not compression_of(path) and head_bytes(path, 4) == b"PAR1":
        return None
    seen = scan(path)
    return seen if seen.fault else None


def scan(path: Path) -> TextScan:
    """The file's ``TextScan``, kept per file size and mtime: every reader of one load asks, and the pass costs
    as much as decompressing the file."""
    try:
        st = path.stat()
    except OSError as exc:
        return TextScan((None, f"cannot read: {exc.strerror}"))
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _scanned:
        _scanned[key] = _read_through(path, compression_of(path), st.st_size)
    return _scanned[key]


def _read_through(path: Path, comp: str | None, size: int) -> TextScan:
    limit = min(MAX_DECOMPRESSED, max(RATIO_FREE, MAX_RATIO * size)) if comp else None
    total, lines, last, since = 0, 0, b"\n", 0
    tab = space = lone = carry = False
    head: bytes | None = b""  # the current line's bytes before this block (None: too long to keep)
    try:
        with open_binary(path) as fh:
            while block := fh.read(_BLOCK):
                nul = block.find(b"\0")
                if nul >= 0:
                    return _nul_scan(path, comp, lines + block.count(b"\n", 0, nul) + 1, head, block, nul)
                newline = block.rfind(b"\n")
                if newline >= 0:
                    head = block[newline + 1 :]
                elif head is not None:
                    head = head + block if len(head) + len(block) <= _BLOCK else None
                total += len(block)
                if limit is not None and total > limit:
                    return TextScan((None, _bomb(comp, size, limit)))
                first = block.find(b"\n")
                if first < 0:
                    since += len(block)
                    too_long = since > MAX_LINE
                else:  # a block is shorter than MAX_LINE: only the line running into it can be too long
                    too_long = since + first > MAX_LINE
                    since = len(block) - block.rfind(b"\n") - 1
                if too_long:
                    return TextScan((lines + 1, f"line longer than {MAX_LINE >> 20} MiB, the longest line read"))
                lines += block.count(b"\n")
                tab, space = tab or b"\t" in block, space or b" " in block
                lone = lone or (carry and not block.startswith(b"\n"))
                carry = block.endswith(b"\r")
                if b"\r" in block:  # one quick pass; the two counts only for a block holding a CR
                    lone = lone or block.count(b"\r") - block.count(b"\r\n") != int(carry)
                last = block[-1:]
    except EOFError:
        return TextScan(
            (None, f"the {comp} stream is truncated: it ends before its end marker (the file is cut short)")
        )
    except (OSError, ValueError, zlib.error) as exc:  # BadGzipFile, bz2's invalid stream, CRC mismatch
        return TextScan((None, f"the {comp} stream is corrupt: {exc}" if comp else f"cannot read: {exc}"))
    return TextScan(None, lines, last != b"\n", tab, space, lone or carry)


def _nul_scan(path: Path, comp: str | None, line: int, head: bytes | None, block: bytes, at: int) -> TextScan:
    """The fault of a NUL byte at ``block[at]`` on line ``line`` (``head``: the line's bytes before the block)."""
    start = block.rfind(b"\n", 0, at) + 1
    before = head if start == 0 else b""
    end = block.find(b"\n", at)
    text = block[start : end if end >= 0 else len(block)]
    field = None if before is None else nul_field(before + text, len(before) + at - start, plain_name(path))
    return TextScan((line, nul_message(comp)), fault_code=NUL_CODE, fault_field=field)


def _bomb(comp: str | None, size: int, limit: int) -> str:
    return (
        f"decompresses to more than {limit:,} bytes ({comp}, {size:,} bytes compressed; the bound is {MAX_RATIO} "
        f"times the compressed size, at most {MAX_DECOMPRESSED:,} bytes): refused as a decompression bomb"
    )


def compression_of(path: Path) -> str | None:
    """``gzip``, ``bz2`` or None, from the first bytes (a file named ``run.gz`` that is plain text is plain)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(3)
    except OSError:
        return None
    if head.startswith(_GZIP):
        return "gzip"
    if head.startswith(_BZ2):
        return "bz2"
    return None


def open_binary(path: Path) -> IO[bytes]:
    """The file's decompressed bytes (for sniffing its first lines and hashing nothing else)."""
    comp = compression_of(path)
    if comp == "gzip":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if comp == "bz2":
        return bz2.open(path, "rb")
    return path.open("rb")


def head_bytes(path: Path, n: int = 65536) -> bytes:
    """Up to ``n`` decompressed bytes from the start of the file (b"" when it cannot be read)."""
    try:
        with open_binary(path) as fh:
            return fh.read(n)
    except (OSError, EOFError, ValueError, zlib.error):
        return b""


def plain_name(path: Path) -> str:
    """The file name without a compression suffix: ``qrels.test.tsv.gz`` -> ``qrels.test.tsv``."""
    name = path.name
    for suffix in (".gz", ".bz2", ".gzip", ".bzip2"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def duckdb_source(path: Path) -> tuple[Path, str]:
    """A path DuckDB can read and the ``compression`` option to read it with.

    bzip2 is decompressed into a scratch file: inside ``scratch()`` the copy is removed when the load ends,
    outside it when the process exits.
    """
    comp = compression_of(path)
    if comp == "gzip":
        return path, "gzip"
    if comp != "bz2":
        return path, "none"
    if not _scratch:  # a caller outside a load (validate, record): a folder removed when the process exits
        folder = Path(tempfile.mkdtemp(prefix="ragtriage-"))
        atexit.register(shutil.rmtree, folder, True)
        _scratch.append(folder)
    out = _scratch[-1] / f"{len(list(_scratch[-1].iterdir()))}-{plain_name(path)}"
    with bz2.open(path, "rb") as src, out.open("wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 22)
    return out, "none"


@contextmanager
def scratch() -> Iterator[Path]:
    """A scratch folder for decompressed copies, removed when the load ends (re-entrant: nested uses share it)."""
    if _scratch:  # nested, or after a use outside any scratch(): share the open folder
        yield _scratch[-1]
        return
    folder = Path(tempfile.mkdtemp(prefix="ragtriage-"))
    _scratch.append(folder)
    try:
        yield folder
    finally:
        _scratch.pop()
        shutil.rmtree(folder, ignore_errors=True)


# NUL bytes -------------------------------------------------------------------------------------------------

NUL_CODE = "encoding"  # the file cannot be read as text: readers stop at it, as at a UTF-16 file
_JSON_KEY = re.compile(rb'"((?:[^"\\]|\\.)*)"\s*:')
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"?')
_JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")


def nul_message(comp: str | None) -> str:
    text = f"the decompressed {comp} text" if comp else "the text"
    return f"a NUL byte in {text}: not a text file, or corrupt (saved as UTF-16? save it as UTF-8)"


def nul_field(line: bytes, at: int, file_name: str) -> str | None:
    """The field of ``line`` holding the NUL at byte ``at``; None when the line before it is not known."""
    before = line[:at]
    name = file_name.lower()
    if name.endswith(_JSON_SUFFIXES) or line.lstrip()[:1] in (b"{", b"["):
        return _json_field(line, before)
    if name.endswith(".toml"):
        key, eq, _ = before.partition(b"=")
        return visible(key.strip().decode("utf-8", errors="replace")) if eq else "key"
    if b"\t" in line:
        column = before.count(b"\t") + 1
    elif name.endswith(".csv"):
        column = before.count(b",") + 1
    else:  # TREC-style: columns split by runs of spaces
        words = before.split()
        column = len(words) + (0 if before[-1:].strip() else 1)
    return f"column {column}"


def _json_field(line: bytes, before: bytes) -> str | None:
    """A key holding the NUL itself, else the last key before it (whose value holds it)."""
    strings = list(_JSON_STRING.finditer(before))
    last = strings[-1] if strings else None
    if last is not None and last.end() == len(before) and (len(last.group()) == 1 or last.group()[-1:] != b'"'):
        key = _JSON_KEY.match(line, last.start())  # the NUL is inside this string: is it a key?
        if key is not None:
            return visible(key.group(1).decode("utf-8", errors="replace"))
    keys = _JSON_KEY.findall(before)
    return visible(keys[-1].decode("utf-8", errors="replace")) if keys else None
