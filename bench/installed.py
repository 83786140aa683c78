"""The ragtriage a bench times, as pip leaves an installed package: byte-compiled.

pip compiles a wheel's modules when it installs it; an editable install does not, and with
PYTHONDONTWRITEBYTECODE set (or a read-only checkout) no process writes the .pyc files, so every timed process
would compile each ragtriage module it imports again (a few tenths of a second of CPU per process, paid by no
user). A bench calls :func:`byte_compile` before its first timed process.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

_COMPILE = (
    "import compileall, pathlib, ragtriage\n"
    "root = pathlib.Path(ragtriage.__file__).parent\n"
    "compileall.compile_dir(root, quiet=1)\n"
    "print(root)\n"
)


def interpreter(exe: str) -> str:
    """The Python a console script (``.../bin/ragtriage``) runs: its ``#!`` line."""
    first = Path(exe).read_bytes().split(b"\n", 1)[0]
    return first[2:].decode().strip() if first.startswith(b"#!") else exe


def byte_compile(exe: str) -> str:
    """Byte-compile the ragtriage package that ``exe`` (a ``ragtriage`` console script) imports; returns a note
    for the results file naming the folder."""
    out = subprocess.run([interpreter(exe), "-c", _COMPILE], capture_output=True, text=True, check=True).stdout
    return f"ragtriage's modules byte-compiled before timing ({out.strip()}), as pip installs a wheel."
