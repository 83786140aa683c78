"""`ragtriage tui --qrels Q --run R`: the store of a set of files in the cache folder, keyed by their contents.
The first opening loads them (into a temporary file renamed into place), the next one loads nothing, a changed
file is another store, --rebuild loads again, and concurrent openings build it once and never see half a store."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage import loading
from ragtriage.cli import app
from ragtriage.cli import tui as tui_cli
from ragtriage.loading import cached_store, store_key
from ragtriage.store import connect
from ragtriage.store.byo import LoadRequest, RunSource

QRELS = "q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\nq2 0 d4 3\n"
RUN_A = "q1 Q0 d2 1 2.5 a\nq1 Q0 d1 2 1.25 a\nq2 Q0 d4 1 0.5 a\n"
RUN_B = "q1 Q0 d1 1 3.0 b\nq2 Q0 d3 1 0.75 b\nq2 Q0 d4 2 0.5 b\n"


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "a.run").write_text(RUN_A)
    (tmp_path / "b.run").write_text(RUN_B)
    return tmp_path / "qrels.txt", tmp_path / "a.run", tmp_path / "b.run"


def _req(qrels: Path, *runs: Path) -> LoadRequest:
    return LoadRequest(qrels=qrels, runs=[RunSource(r) for r in runs])


def _never(*_: object, **__: object) -> object:
    raise AssertionError("loaded again: the cached store should have been read")


def test_the_second_opening_loads_nothing(
    files: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    qrels, a, b = files
    folder = tmp_path / "cache"
    first = cached_store(_req(qrels, a, b), folder=folder)
    assert first.built is not None and first.path.parent == folder and first.path.exists()
    con = connect(first.path, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM results").fetchall()[0][0] == 6
    finally:
        con.close()
    assert not [p for p in folder.iterdir() if "building" in p.name]  # the temporary file was renamed into place
    monkeypatch.setattr(loading, "load_inputs", _never)
    second = cached_store(_req(qrels, a, b), folder=folder)
    assert second.path == first.path and second.built is None
    # names and times are not the key: the same contents under other names are the same store
    copy = tmp_path / "copy"
    copy.mkdir()
    renamed = [shutil.copy(p, copy / f"x{i}") for i, p in enumerate(files)]
    assert store_key(_req(*map(Path, renamed))) == store_key(_req(qrels, a, b))


def test_changed_contents_and_rebuild_load_again(files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    qrels, a, b = files
    folder = tmp_path / "cache"
    first = cached_store(_req(qrels, a), folder=folder)
    a.write_text(RUN_A.replace("2.5", "0.1"))
    changed = cached_store(_req(qrels, a), folder=folder)
    assert changed.built is not None and changed.path != first.path
    again = cached_store(_req(qrels, a), folder=folder, rebuild=True)
    assert again.built is not None and again.path == changed.path


def test_concurrent_openings_build_once(
    files: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    qrels, a, b = files
    folder = tmp_path / "cache"
    real = loading.load_inputs
    loads = 0

    def counted(*args: object, **kw: object) -> loading.LoadResult:
        nonlocal loads
        loads += 1
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(loading, "load_inputs", counted)
    found: list[loading.CachedStore] = []
    threads = [
        threading.Thread(target=lambda: found.append(cached_store(_req(qrels, a, b), folder=folder))) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert loads == 1 and len({f.path for f in found}) == 1
    assert sum(f.built is not None for f in found) == 1


def test_the_command_says_where_the_store_is_and_opens_it(
    files: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    qrels, a, b = files
    monkeypatch.setenv("RAGTRIAGE_CACHE_DIR", str(tmp_path / "c"))
    opened: list[Path] = []
    builds: list[object] = []

    def run_app(
        db: Path, run: str | None, baseline: str | None, author: str | None, build: object, **_: object
    ) -> None:
        opened.append(db)
        builds.append(build)
        if callable(build):  # what the app runs on its worker before the views open
            build(lambda step: None)

    monkeypatch.setattr(tui_cli, "_run_app", run_app)
    args = ["tui", "--qrels", str(qrels), "--run", str(a), "--run", str(b)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "loading the files now" in res.stderr and str(opened[0]) in res.stderr.replace("\n", "")
    assert opened[0].parent == tmp_path / "c" / "stores" and opened[0].exists()
    assert getattr(builds[0], "what", "") == "qrels.txt, a.run, b.run"
    monkeypatch.setattr(loading, "load_inputs", _never)
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "read from the cache, nothing loaded" in res.stderr and opened[1] == opened[0] and builds[1] is None
    res = CliRunner().invoke(app, [*args, "--db", str(tmp_path / "x.duckdb")])
    assert res.exit_code == 2 and "not both" in res.stderr


def test_a_background_load_is_followed_and_stopped_by_its_follower(
    files: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    qrels, a, _ = files
    folder = tmp_path / "cache"
    req = _req(qrels, a)
    target = loading.cached_store_path(req, folder)
    steps: list[str] = []
    done = loading.BackgroundLoad(req, target)(steps.append)
    assert done.path == target and target.exists() and "reading run" in steps
    real = loading.load_inputs

    def slow(con: object, r: LoadRequest, progress: loading.Progress, **kw: object) -> loading.LoadResult:
        for _ in range(500):  # steps until the follower stops it (a load of many steps)
            progress("writing")
            time.sleep(0.01)
        return real(con, r, progress, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(loading, "load_inputs", slow)

    class Quit(Exception):
        pass

    def quitting(step: str) -> None:
        raise Quit(step)

    other = loading.cached_store_path(_req(qrels), folder)  # another set of files: not built yet
    with pytest.raises(Quit):
        loading.BackgroundLoad(_req(qrels), other)(quitting)
    deadline = time.monotonic() + 30
    while [p for p in folder.iterdir() if "building" in p.name] and time.monotonic() < deadline:
        time.sleep(0.01)  # the load ends at its next step and removes its temporary file
    assert not other.exists() and not [p for p in folder.iterdir() if "building" in p.name]
