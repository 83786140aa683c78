"""Regenerate every command output quoted in README.md and docs/*.md from the real CLI on the bundled sample.

    python scripts/docs_figures.py           # rewrite the quoted outputs in place
    python scripts/docs_figures.py --check   # exit 1, naming each stale block, when any quoted output differs

A quoted output is a block between two markers; its ``$`` lines are the commands, run as written (``\\`` joins
lines, ``| head -n N`` or ``| tail -n N`` keeps the first or last N lines), and everything else in the block
is their output:

    <!-- ragtriage:begin metrics -->
    ```console
    $ .venv/bin/ragtriage metrics --db triage.duckdb --run hybrid-rerank --k 3,5,10
    ...what the command prints...
    ```
    <!-- ragtriage:end -->

Every command runs as its own process (the installed ``ragtriage``, beside this Python) in one scratch folder that
holds ``sample_runs`` (a link to the repository's) and one store, ``triage.duckdb``, loaded once with
:data:`SAMPLE_LOAD`, so a block quoting that load shows the load's own output and the other blocks read that store.
Files a command writes (``--junit gate.xml``) land in the scratch folder. A non-zero exit status is shown as the
block's last line. An output holding a date and time is refused: a quoted figure must be the same on every run.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN = re.compile(r"^<!-- ragtriage:begin (?P<name>[\w.-]+) -->$")
END = "<!-- ragtriage:end -->"
FENCE = "```console"
STORE = "triage.duckdb"
#: The load every block reads: the README's first command on the sample.
SAMPLE_LOAD = (
    f"ragtriage load --db {STORE} --dataset sample_runs/dataset --run sample_runs/runs/bm25 "
    "--run sample_runs/runs/dense --run sample_runs/runs/hybrid-rerank --run sample_runs/runs/no-acl-filter"
)
SAMPLE_CLASSIFY = f"ragtriage classify --db {STORE}"
WIDTH = "100"
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d")
PIPE = re.compile(r"^(?P<cmd>.*?)\s*\|\s*(?P<end>head|tail)\s+(?:-n\s*)?-?(?P<n>\d+)$")


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def shown_path(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


@dataclass(frozen=True)
class Command:
    shown: str  # as the doc prints it after "$ ", continuation lines included
    argv: list[str]  # the arguments after the program name
    keep: tuple[str, int] | None  # ("head", n) or ("tail", n): only the first or last n lines of the output

    @property
    def key(self) -> str:
        return shlex.join(self.argv) + (f" | {self.keep[0]} -n {self.keep[1]}" if self.keep else "")


@dataclass(frozen=True)
class Block:
    path: Path
    name: str
    start: int  # index of the begin marker line
    end: int  # index of the end marker line
    commands: list[Command]


class DocError(Exception):
    """A marker or command a doc cannot be regenerated from; the message names the file and line."""


def parse_command(shown: str, where: str) -> Command:
    """``shown`` without its ``$ ``: the program (any path ending in ``ragtriage``), its arguments and an
    optional ``| head -n N`` or ``| tail -n N``."""
    joined = re.sub(r"\\\n\s*", " ", shown)
    keep = None
    m = PIPE.match(joined.strip())
    if m:
        joined, keep = m["cmd"], (m["end"], int(m["n"]))
    try:
        words = shlex.split(joined, comments=True)
    except ValueError as exc:
        raise DocError(f"{where}: cannot split the command: {exc}") from exc
    if not words or not (words[0] == "ragtriage" or words[0].endswith("/ragtriage")):
        raise DocError(f"{where}: a quoted command must run ragtriage, not {words[:1]}")
    if any(w in {"|", "&&", ";", ">", "<"} for w in words):
        raise DocError(f"{where}: only `| head -n N` or `| tail -n N` may follow a quoted command")
    return Command(shown, words[1:], keep)


def blocks(path: Path, lines: list[str]) -> Iterator[Block]:
    i = 0
    rel = shown_path(path)
    while i < len(lines):
        m = BEGIN.match(lines[i])
        if not m:
            if lines[i].startswith("<!-- ragtriage:"):
                raise DocError(f"{rel}:{i + 1}: a marker that is not `<!-- ragtriage:begin NAME -->`")
            i += 1
            continue
        try:
            end = lines.index(END, i + 1)
        except ValueError:
            raise DocError(f"{rel}:{i + 1}: block {m['name']} has no `{END}`") from None
        commands: list[Command] = []
        j = i + 1
        while j < end:
            if lines[j].startswith("$ "):
                first = j
                shown = lines[j][2:]
                while shown.endswith("\\") and j + 1 < end:
                    j += 1
                    shown += "\n" + lines[j]
                commands.append(parse_command(shown, f"{rel}:{first + 1}"))
            j += 1
        if not commands:
            raise DocError(f"{rel}:{i + 1}: block {m['name']} quotes no `$ ragtriage ...` command")
        yield Block(path, m["name"], i, end, commands)
        i = end + 1


def _program() -> list[str]:
    beside = Path(sys.executable).with_name("ragtriage")
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "ragtriage.cli"]


class Runner:
    """Runs quoted commands in one scratch folder holding the sample and its loaded store; each command once."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / "sample_runs").symlink_to(ROOT / "sample_runs", target_is_directory=True)
        self.env = {
            **os.environ,
            "COLUMNS": WIDTH,
            "NO_COLOR": "1",
            "PYTHONUNBUFFERED": "1",  # stdout and stderr reach the pipe in the order they were written
            "RAGTRIAGE_TUI_CACHE": str(folder / "cache"),
        }
        self.env.pop("FORCE_COLOR", None)
        self.done: dict[str, str] = {}
        self.output(parse_command(SAMPLE_LOAD, "SAMPLE_LOAD"))
        # the classification a load leaves for later, stored before any block reads it: blocks are rendered in
        # any order, and the first one that read classifications would otherwise say that it classifies first
        self.output(parse_command(SAMPLE_CLASSIFY, "SAMPLE_CLASSIFY"))

    def output(self, cmd: Command) -> str:
        if cmd.key not in self.done:
            proc = subprocess.run(
                [*_program(), *cmd.argv],
                cwd=self.folder,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                check=False,
            )
            text = proc.stdout.replace(f"{self.folder}{os.sep}", "").replace(str(self.folder), ".")
            lines = [line.rstrip() for line in text.rstrip("\n").splitlines()]
            if cmd.keep:
                end, n = cmd.keep
                lines = lines[:n] if end == "head" else lines[-n:]
            if proc.returncode:
                lines.append(f"(exit status {proc.returncode})")
            self.done[cmd.key] = "\n".join(lines)
        return self.done[cmd.key]


def render(block: Block, runner: Runner) -> list[str]:
    rel = shown_path(block.path)
    body = [f"<!-- ragtriage:begin {block.name} -->", FENCE]
    for cmd in block.commands:
        out = runner.output(cmd)
        stamp = TIMESTAMP.search(out)
        if stamp:
            raise DocError(f"{rel}:{block.start + 1}: `{cmd.key}` prints a date and time ({stamp[0]}): quote another")
        body += [*f"$ {cmd.shown}".split("\n"), *out.splitlines()]
    return [*body, "```", END]


def regenerate(paths: list[Path], check: bool) -> int:
    stale: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ragtriage-docs-") as tmp:
        runner: Runner | None = None
        for path in paths:
            lines = path.read_text(encoding="utf-8").split("\n")
            found = list(blocks(path, lines))
            if not found:
                continue
            runner = runner or Runner(Path(tmp))
            new = list(lines)
            for b in reversed(found):
                fresh = render(b, runner)
                if lines[b.start : b.end + 1] != fresh:
                    stale.append(f"{shown_path(path)}:{b.start + 1}: {b.name}")
                new[b.start : b.end + 1] = fresh
            if not check and new != lines:
                path.write_text("\n".join(new), encoding="utf-8")
    if check and stale:
        print("quoted outputs differ from what the tool prints; run python scripts/docs_figures.py", file=sys.stderr)
        for s in stale:
            print(f"  {s}", file=sys.stderr)
        return 1
    verb = "stale" if check else "rewritten"
    print(f"{len(stale)} block(s) {verb}" if stale else "every quoted output is current")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when any quoted output is stale")
    parser.add_argument("files", nargs="*", type=Path, help="Markdown files (default: README.md and docs/*.md)")
    args = parser.parse_args()
    try:
        return regenerate([p.resolve() for p in args.files] or doc_files(), args.check)
    except DocError as exc:
        print(exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
