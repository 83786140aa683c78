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
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from ragtriage.record.types import RecordError

JOURNAL = ".record-journal.jsonl"
OWNED = ("run.json", "results.jsonl", "events.jsonl", JOURNAL)


def _line(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_atomic(path: Path, lines: Iterable[str]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8", newline="\n") as fh:
        fh.writelines(lines)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class RunFolder:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.journal = root / JOURNAL
        self._fh: TextIO | None = None
        self.created = False

    def open_new(self, header: dict[str, Any], *, force: bool) -> None:
        """Start a fresh recording; an existing run folder is replaced only with ``force``, and only when the new
        recording writes its files (a pre-flight failure leaves the old run as it was)."""
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
        """The interrupted recording's header and its finished cases by case id; the journal is rewritten
        without a torn last line. Every key of ``header`` must equal the interrupted recording's."""
        if not self.journal.exists():
            done = (self.root / "run.json").exists() and not (self.root / JOURNAL).exists()
            why = "it is complete" if done else "it holds no interrupted recording"
            raise RecordError(f"cannot resume {self.root}: {why}")
        lines = self.journal.read_text(encoding="utf-8").splitlines()
        entries: dict[str, dict[str, Any]] = {}
        first: dict[str, Any] | None = None
        for text in lines:
            try:
                obj = json.loads(text)
            except json.JSONDecodeError:
                continue  # a line torn by a crash: that case is simply recorded again
            if "header" in obj and first is None:
                first = obj["header"]
            elif "case_id" in obj:
                entries[obj["case_id"]] = obj
        if first is None:
            raise RecordError(f"cannot resume {self.root}: its journal has no header; record again with --force")
        changed = sorted(k for k in header if first.get(k) != header[k])
        if changed:
            raise RecordError(
                f"cannot resume {self.root}: these settings differ from the interrupted recording: "
                f"{', '.join(changed)}; use the same options, or record again with --force"
            )
        write_atomic(self.journal, [_line({"header": first}), *(_line(e) for e in entries.values())])
        self._fh = self.journal.open("a", encoding="utf-8", newline="\n")
        return first, entries

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

    def finish(self, entries: Iterable[dict[str, Any]], manifest: dict[str, Any], *, complete: bool) -> None:
        """Write the contract's files from the journal entries (in case order) and drop the journal if complete."""
        if self._fh is not None:
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None
        ordered = sorted(entries, key=lambda e: int(e["position"]))
        write_atomic(self.root / "results.jsonl", (_line(r) for e in ordered for r in e["results"]))
        write_atomic(self.root / "events.jsonl", (_line(e["event"]) for e in ordered))
        write_atomic(self.root / "run.json", [json.dumps(manifest, ensure_ascii=False, indent=2) + "\n"])
        if complete:
            self.journal.unlink(missing_ok=True)
