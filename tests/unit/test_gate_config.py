"""Gate file parsing: every rule read as written, and every mistake named by file, line and key."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ragtriage.gate.config import REPRO_ITEMS, GateFileError, parse_gate

FULL = """\
[gate]
name = "release"
split = "holdout"

[leakage]

[[regression]]
metric = "R@10"
tolerance = 0.02
require_significance = true
alpha = 0.01

[[regression]]
metric = "nDCG@5"
split = "all"

[[slice_minimum]]
slice = { doc_type = "table" }
metric = "nDCG@5"
min = 0.6

[critical_cases]
metric = "R@10"
min = 1

[zero_hit]
k = 10
max_rate = 0.05

[negative_cases]
min_share = 0.9

[latency]
p95_ms = 800
max_timeouts = 0

[reproducibility]
require = ["dataset_version", "raw_results"]
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "gate.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_full_file_is_read_as_written(tmp_path: Path) -> None:
    cfg = parse_gate(_write(tmp_path, FULL))
    assert cfg.name == "release"
    assert cfg.sha256 == hashlib.sha256(FULL.encode()).hexdigest()
    r1, r2 = cfg.regressions
    assert (r1.metric, r1.tolerance, r1.require_significance, r1.alpha, r1.split) == (
        "R@10",
        0.02,
        True,
        0.01,
        "holdout",
    )
    assert (r2.metric, r2.tolerance, r2.require_significance, r2.split) == ("nDCG@5", 0.0, False, None)
    (s,) = cfg.slice_minima
    assert (s.column, s.value, s.metric, s.min, s.split) == ("doc_type", "table", "nDCG@5", 0.6, "holdout")
    assert cfg.critical is not None and (cfg.critical.metric, cfg.critical.min) == ("R@10", 1.0)
    assert cfg.zero_hit is not None and (cfg.zero_hit.k, cfg.zero_hit.max_rate) == (10, 0.05)
    assert cfg.negatives is not None and cfg.negatives.min_share == 0.9
    assert cfg.latency is not None and (cfg.latency.p95_ms, cfg.latency.max_timeouts) == (800.0, 0)
    assert cfg.reproducibility == ("dataset_version", "raw_results")
    assert cfg.ks() == (5, 10)


def test_empty_file_keeps_leakage_and_full_reproducibility(tmp_path: Path) -> None:
    cfg = parse_gate(_write(tmp_path, ""))
    assert cfg.regressions == () and cfg.latency is None
    assert cfg.reproducibility == REPRO_ITEMS
    assert cfg.split == "holdout"


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("[[regression]]\nmetric = 'R@10'\ntolerence = 0.1\n", 3, "unknown key 'tolerence' in [[regression]]"),
        ("[leakage]\nenabled = false\n", 2, "cannot be disabled"),
        ("[leakage]\nmin_checked_share = nan\n", 2, "min_checked_share must be a finite number from 0 to 1"),
        ("[leakage]\nmin_checked_share = inf\n", 2, "min_checked_share must be a finite number from 0 to 1"),
        ("[leakage]\nmin_checked_share = -0.1\n", 2, "min_checked_share must be a finite number from 0 to 1"),
        ("[leakage]\nmin_checked_share = 1.5\n", 2, "min_checked_share must be a finite number from 0 to 1"),
        ("[leakage]\nmin_checked_share = '90%'\n", 2, "min_checked_share has the wrong type"),
        ("[leakage]\nmin_checked_share = true\n", 2, "min_checked_share has the wrong type"),
        ("[gate]\nname = 'x'\n[latensy]\np95_ms = 3\n", 3, "unknown table 'latensy'"),
        ("[[regression]]\nmetric = 'MAPP@10'\n", 2, "unknown measure 'MAPP'"),
        ("[[regression]]\nmetric = 'AP'\n", 2, "a gate rule takes one of P, R, RR"),
        ("[[regression]]\ntolerance = 0.1\n", 1, "needs 'metric'"),
        ("[zero_hit]\nk = 10\nmax_rate = '5%'\n", 3, "max_rate has the wrong type"),
        ("[[slice_minimum]]\nslice = { colour = 'red' }\nmetric = 'P@5'\nmin = 0.5\n", 2, "cannot slice by 'colour'"),
        ("[regression]\nmetric = 'R@10'\n", 1, "use [[regression]]"),
        ("[gate]\nname = \n", 2, "not valid TOML"),
        ("[reproducibility]\nrequire = ['vibes']\n", 2, "unknown reproducibility item"),
    ],
)
def test_bad_files_name_file_line_and_key(tmp_path: Path, text: str, line: int, needle: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(GateFileError) as info:
        parse_gate(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}:{line}: "), msg
    assert needle in msg


def test_leakage_takes_a_share_of_checked_cases(tmp_path: Path) -> None:
    assert parse_gate(_write(tmp_path, "")).leakage.min_checked_share == 0.0
    assert parse_gate(_write(tmp_path, "[leakage]\nmin_checked_share = 1\n")).leakage.min_checked_share == 1.0
    assert parse_gate(_write(tmp_path, "[leakage]\nmin_checked_share = 0.95\n")).leakage.min_checked_share == 0.95


def test_second_array_item_error_points_at_its_own_line(tmp_path: Path) -> None:
    text = "[[regression]]\nmetric = 'R@10'\n\n[[regression]]\nmetric = 'R@5'\nalfa = 0.1\n"
    with pytest.raises(GateFileError, match=r"gate.toml:6: unknown key 'alfa'"):
        parse_gate(_write(tmp_path, text))


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(GateFileError, match="cannot read the gate file"):
        parse_gate(tmp_path / "nope.toml")


NUMBERS = [
    ("[[regression]]\nmetric = 'nDCG@10'\ntolerance = nan\n", 3, "tolerance", "not a finite number"),
    ("[[regression]]\nmetric = 'nDCG@10'\ntolerance = -nan\n", 3, "tolerance", "not a finite number"),
    ("[[regression]]\nmetric = 'nDCG@10'\ntolerance = inf\n", 3, "tolerance", "not a finite number"),
    ("[[regression]]\nmetric = 'nDCG@10'\ntolerance = -0.1\n", 3, "tolerance", "out of range [0, 1]"),
    ("[[regression]]\nmetric = 'nDCG@10'\nalpha = 0\n", 3, "alpha", "out of range (0, 1)"),
    ("[[regression]]\nmetric = 'nDCG@10'\nalpha = nan\n", 3, "alpha", "not a finite number"),
    ("[[slice_minimum]]\nslice = { doc_type = 't' }\nmetric = 'nDCG@5'\nmin = nan\n", 4, "min", "finite"),
    ("[critical_cases]\nmetric = 'R@10'\nmin = 1.5\n", 3, "min", "out of range [0, 1]"),
    ("[zero_hit]\nk = 10\nmax_rate = nan\n", 3, "max_rate", "not a finite number"),
    ("[zero_hit]\nk = 1099511627776\nmax_rate = 0.1\n", 2, "k", "out of range [1, 2147483647]"),
    ("[zero_hit]\nk = 0\nmax_rate = 0.1\n", 2, "k", "out of range"),
    ("[negative_cases]\nmin_share = nan\n", 2, "min_share", "not a finite number"),
    ("[negative_cases]\nmin_share = inf\n", 2, "min_share", "not a finite number"),
    ("[latency]\np95_ms = nan\n", 2, "p95_ms", "not a finite number"),
    ("[latency]\np95_ms = -5\n", 2, "p95_ms", "out of range (0, inf)"),
    ("[latency]\nmax_timeouts = -1\n", 2, "max_timeouts", "out of range"),
    ("[gate]\nn_resamples = 0\n", 2, "n_resamples", "out of range"),
    ("[gate]\nseed = -1\n", 2, "seed", "out of range"),
    ("[[regression]]\nmetric = 'nDCG@1099511627776'\n", 2, "metric", "cutoff 1099511627776 is out of range"),
]


@pytest.mark.parametrize(("text", "line", "key", "needle"), NUMBERS)
def test_every_number_is_finite_and_in_range(tmp_path: Path, text: str, line: int, key: str, needle: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(GateFileError) as info:
        parse_gate(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}:{line}: "), msg
    assert key in msg and needle in msg, msg
    assert info.value.key == key


def test_a_gate_file_that_is_not_utf8_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "gate.toml"
    path.write_bytes(b'[gate]\nname = "r\xe9lease"\n')
    with pytest.raises(GateFileError, match=r"gate.toml:2: not valid UTF-8 \(byte 0xe9"):
        parse_gate(path)
