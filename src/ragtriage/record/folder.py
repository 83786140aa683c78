"""The run folder being recorded: a journal appended one line per finished case, then files renamed into place.

While recording, each finished case is one JSON line (its result rows, its event, its latencies) appended to
``.record-journal.jsonl``; a crash can tear only the last line, which is dropped on resume. ``finish`` writes
``results.jsonl``, ``events.jsonl`` and ``run.json`` to temporary names and renames them over the old ones, so
a reader sees either the previous complete file or the new one, never half a file. The journal stays until the
run is complete, which is what ``--resume`` continues from.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from ragtriage.paths import written_whole
from ragtriage.record.types import RecordError

JOURNAL = ".record-journal.jsonl"
OWNED = ("run.json", "results.jsonl", "events.jsonl", JOURNAL)


def _line(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_atomic(path: Path, lines: Iterable[str]) -> None:
    with written_whole(path) as tmp, tmp.open("w", encoding="utf-8", newline="\n") as fh:
        fh.writelines(lines)
        fh.flush()
        os.fsync(fh.fileno())


class RunFolder:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.journal = root / JOURNAL
        self._fh: TextIO | None = None
        self.created = False

    def open_new(self, header: dict[str, Any], *, force: bool) -> None:
        """Start a fresh recording; an existing run folder is replaced only with ``force``, and only when the new
        recording writes its files (a pre-flight failure leaves the old run as it was)."""
        self._check_root()
        existing = [n for n in OWNED if (self.root / n).exists()]
        if existing and not force:
            raise RecordError(
                f"{self.root} already holds a run ({', '.join(existing)}); pass --resume to continue it "
                "or --force to record it again"
            )
        self.created = not self.root.exists()
        self.root.mkdir(parents=True, exist_ok=True)
        write_atomic(self.journal, [_line({"header": header})])
        self._fh = self.journal.open("a", encoding="utf-8", newline="\n")

    def open_resume(self, header: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """The interrupted recording's header and its finished cases by case id (their events, latencies and
        versions; not their result rows). The journal is rewritten without a torn line; every key of
        ``header`` must equal the interrupted recording's."""
        self._check_root()
        if not self.journal.exists():
            done = (self.root / "run.json").exists() and not (self.root / JOURNAL).exists()
            why = "it is complete" if done else "it holds no interrupted recording"
            raise RecordError(f"cannot resume {self.root}: {why}")
        first: dict[str, Any] | None = None
        summaries: dict[str, dict[str, Any]] = {}
        with written_whole(self.journal) as tmp:  # a refusal below leaves the journal as it was
            with self.journal.open(encoding="utf-8") as src, tmp.open("w", encoding="utf-8", newline="\n") as dst:
                for text in src:
                    obj = _parse(text)
                    if obj is None:
                        continue  # a line torn by a crash: that case is simply recorded again
                    if "header" in obj and first is None:
                        first = obj["header"]
                    elif "case_id" in obj and obj["case_id"] not in summaries:
                        summaries[obj["case_id"]] = {k: v for k, v in obj.items() if k != "results"}
                    else:
                        continue
                    dst.write(_line(obj))
            if first is None:
                raise RecordError(f"cannot resume {self.root}: its journal has no header; record again with --force")
            changed = sorted(k for k in header if first.get(k) != header[k])
            if changed:
                raise RecordError(
                    f"cannot resume {self.root}: these settings differ from the interrupted recording: "
                    f"{', '.join(changed)}; use the same options, or record again with --force"
                )
        self._fh = self.journal.open("a", encoding="utf-8", newline="\n")
        return first, summaries

    def _check_root(self) -> None:
        """``--out`` names a folder: an existing file, FIFO or device there is refused before anything is opened."""
        if (self.root.exists() or self.root.is_symlink()) and not self.root.is_dir():
            raise RecordError(
                f"{self.root} exists and is not a folder (a file, link, FIFO or device); --out names the run "
                "folder to write: pass a new or existing folder"
            )

    def abandon(self) -> None:
        """Drop a journal that holds no case (the recording failed before its first one)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        self.journal.unlink(missing_ok=True)
        if self.created and not any(self.root.iterdir()):
            self.root.rmdir()

    def append(self, entry: dict[str, Any]) -> None:
        assert self._fh is not None
        self._fh.write(_line(entry))
        self._fh.flush()

    def finish(self, manifest: dict[str, Any], *, complete: bool) -> None:
        """Write the contract's files from the journal, in case order, and drop the journal if complete.

        Memory holds one (position, offset) pair per case, never the result rows: the journal is read twice,
        once to order the cases and once, by seeking, to write them."""
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None
        order: dict[str, tuple[int, int]] = {}
        with self.journal.open("rb") as fh:
            offset = 0
            for raw in fh:
                obj = _parse(raw.decode("utf-8", errors="replace"))
                if obj is not None and "case_id" in obj and obj["case_id"] not in order:
                    order[obj["case_id"]] = (int(obj["position"]), offset)
                offset += len(raw)
            offsets = [o for _, o in sorted(order.values())]

            def entries() -> Iterator[dict[str, Any]]:
                for o in offsets:
                    fh.seek(o)
                    yield json.loads(fh.readline())

            write_atomic(self.root / "results.jsonl", (_line(r) for e in entries() for r in e["results"]))
            write_atomic(self.root / "events.jsonl", (_line(e["event"]) for e in entries()))
        write_atomic(self.root / "run.json", [json.dumps(manifest, ensure_ascii=False, indent=2) + "\n"])
        if complete:
            self.journal.unlink(missing_ok=True)


def _parse(text: str) -> dict[str, Any] | None:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None
