"""Fuzzing the loaders: hypothesis mutates the sample's files (values of any type and size, removed fields,
byte-level damage, truncation, re-encoding, duplicated and shuffled lines) and every load must end in exit 0 or
exit 2, never a traceback, and a refused load must leave the store exactly as it was.

Bounded for CI: a fixed number of examples, no deadline (a load is I/O-bound on a shared machine)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtriage.contract.fields import TABLES
from tests.bad_inputs import copy_case, digest, load, make_base, no_traceback

pytestmark = pytest.mark.slow  # every test here takes seconds of its own: `pytest -m slow` and CI run them

FILES = {
    "cases.jsonl": ("dataset", "cases"),
    "labels.jsonl": ("dataset", "labels"),
    "documents.jsonl": ("dataset", "documents"),
    "dataset.json": ("dataset", "dataset"),
    "results.jsonl": ("run", "results"),
    "events.jsonl": ("run", "events"),
    "run.json": ("run", "run"),
}

hostile_text = st.sampled_from(["", " ", "\x1b[2J", "\u202e", "=1+1", "[bold]x[/]", "\x00", "q001", "2024-13-45"])
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([2**31 - 1, 2**31, 2**63 - 1, 2**63, -(2**31) - 1, 0, -1])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | hostile_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=5,
)


@st.composite
def field_edit(draw: st.DrawFn, table: str) -> tuple[str, str, Any]:
    names = [f.name for f in TABLES[table].fields]
    field = draw(st.sampled_from([*names, "extra"]))
    return draw(st.sampled_from(["set", "delete"])), field, draw(json_values)


@st.composite
def mutation(draw: st.DrawFn) -> tuple[str, str, Any]:
    name = draw(st.sampled_from(sorted(FILES)))
    kind = draw(st.sampled_from(["field", "field", "bytes", "truncate", "encoding", "lines"]))
    if kind == "field":
        return name, kind, (draw(st.integers(0, 50)), draw(field_edit(FILES[name][1])))
    if kind == "bytes":
        return name, kind, (draw(st.integers(0, 10_000)), draw(st.binary(min_size=1, max_size=8)))
    if kind == "truncate":
        return name, kind, draw(st.integers(0, 10_000))
    if kind == "encoding":
        return name, kind, draw(st.sampled_from(["utf-16", "latin-1", "utf-8-sig", "cp1252"]))
    return name, kind, draw(st.sampled_from(["duplicate", "reverse", "blank", "crlf"]))


def apply(path: Path, kind: str, arg: Any) -> None:
    data = path.read_bytes()
    if kind == "bytes":
        at, junk = arg
        at %= max(len(data), 1)
        path.write_bytes(data[:at] + junk + data[at + len(junk) :])
    elif kind == "truncate":
        path.write_bytes(data[: arg % max(len(data), 1)])
    elif kind == "encoding":
        path.write_bytes(data.decode("utf-8", errors="replace").encode(arg, errors="replace"))
    elif kind == "lines":
        lines = data.splitlines(keepends=True)
        changed = {
            "duplicate": lines + lines[:1],
            "reverse": lines[::-1],
            "blank": [*lines[:1], b"\n", *lines[1:]],
            "crlf": [ln.replace(b"\n", b"\r\n") for ln in lines],
        }[arg]
        path.write_bytes(b"".join(changed))
    else:
        _edit_field(path, *arg)


def _edit_field(path: Path, row: int, edit: tuple[str, str, Any]) -> None:
    op, field, value = edit
    try:  # an earlier mutation may have left no JSON to edit: the file then stays as that one left it
        text = path.read_text(encoding="utf-8")
        objs = [json.loads(text)] if path.suffix == ".json" else [json.loads(ln) for ln in text.splitlines()]
    except (UnicodeDecodeError, json.JSONDecodeError):
        return
    if not objs or not all(isinstance(o, dict) for o in objs):
        return
    target = objs[row % len(objs)]
    if op == "set":
        target[field] = value
    else:
        target.pop(field, None)
    text = json.dumps(objs[0]) if path.suffix == ".json" else "".join(json.dumps(o) + "\n" for o in objs)
    path.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, dict[str, tuple[int, str]]]:
    ds, run, db = make_base(tmp_path_factory.mktemp("fuzz-base"))
    return ds, run, db, digest(db)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(mutation(), min_size=1, max_size=2))
def test_loaders_never_crash_and_never_half_write(
    base: tuple[Path, Path, Path, dict[str, tuple[int, str]]], mutations: list[tuple[str, str, Any]]
) -> None:
    ds0, run0, db0, before = base
    with tempfile.TemporaryDirectory() as tmp:
        ds, run, db = copy_case(db0, ds0, run0, Path(tmp))
        for name, kind, arg in mutations:
            folder = ds if FILES[name][0] == "dataset" else run
            apply(folder / name, kind, arg)
        targets = {FILES[name][0] for name, _, _ in mutations}
        for target in sorted(targets):
            res = load(db, dataset=ds) if target == "dataset" else load(db, run=run)
            assert no_traceback(res), f"{mutations}: {res.exception!r}"
            assert res.exit_code in (0, 2), res.output
            if res.exit_code == 2:
                assert digest(db) == before, f"{mutations} changed the store:\n{res.output}"
                assert "transaction is aborted" not in res.output.lower()
            else:
                before = digest(db)
