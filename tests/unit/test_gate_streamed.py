"""The gate's JSON and Markdown written as they are made: the same bytes as the whole document dumped at once,
hostile strings included, and never one write holding every failing case."""

from __future__ import annotations

import io
import json
import math
from dataclasses import asdict
from datetime import datetime

from ragtriage.gate import reports
from ragtriage.gate.outcome import FailingCase, RuleResult, Verdict, json_pieces

HOSTILE = [
    "\x1b[2J",
    "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",
    "\x1b]52;c;cGF5bG9hZA==\x07",
    "abc\u202edef",
    "[bold]x[/]",
    '=HYPERLINK("http://x")',
    'quote " back \\ slash',
    "line\nbreak\ttab\r",
    "pipe | tick ` <b>&amp;",
    "naïve ☃ 日本",
    "x" * 10_000,
]


def _rule(name: str, passed: bool, n: int, value: float | None = 0.5) -> RuleResult:
    failures = tuple(
        FailingCase(
            f"case-{i}-{HOSTILE[i % len(HOSTILE)]}", f"slice={HOSTILE[(i + 1) % len(HOSTILE)]}", "ranking", f"d{i}"
        )
        for i in range(n)
    )
    return RuleResult(
        name,
        name.split(":")[0],
        passed,
        f"figure {HOSTILE[3]}",
        "needs ≥ 0.5",
        value,
        failures,
        notes=(HOSTILE[0], "plain"),
        ci_low=-0.1,
        ci_high=None,
        p_value=0.03,
    )


def _verdict(run_id: str = "cand\x1b[31m", n: int = 40) -> Verdict:
    return Verdict(
        gate_name="release [x]",
        gate_path="/tmp/g.toml",
        gate_sha256="ab" * 32,
        gate_mtime=datetime(2026, 1, 2, 3, 4, 5),
        run_id=run_id,
        baseline="base|line",
        dataset_version="0123456789abcdef",
        evaluator_version="0.1.0",
        evaluated_at=datetime(2026, 1, 2, 3, 4, 6, 7),
        rules=(
            _rule("leakage", True, 0),
            _rule("regression:R@10", False, n, value=math.nan),
            _rule("zero_hit@10", True, 3),  # a passing rule's cases are not failing cases
            _rule("critical_cases:R@10", False, n // 2, value=None),
            _rule("latency", False, 0),
        ),
        notes=("note " + HOSTILE[1],),
        category_costs=({"category": HOSTILE[4], "cost": 0.125, "cases": 3, "measure": "nDCG@10"},),
        cost_summary="ranking costs most " + HOSTILE[2],
    )


def _old_dict(v: Verdict) -> dict[str, object]:
    """The verdict's document as it was built before it was streamed: asdict of each rule, failures last."""
    return {
        "gate": {"name": v.gate_name, "path": v.gate_path, "sha256": v.gate_sha256, "mtime": v.gate_mtime.isoformat()},
        "run_id": v.run_id,
        "baseline": v.baseline,
        "dataset_version": v.dataset_version,
        "evaluator_version": v.evaluator_version,
        "evaluated_at": v.evaluated_at.isoformat(),
        "passed": v.passed,
        "rules": [
            {**{k: x for k, x in asdict(r).items() if k != "failures"}, "failures": [asdict(f) for f in r.failures]}
            for r in v.rules
        ],
        "failing_cases": [{"rule": r.rule, **asdict(f)} for r in v.rules if not r.passed for f in r.failures],
        "category_costs": list(v.category_costs),
        "cost_summary": v.cost_summary,
        "notes": list(v.notes),
    }


def _dumped(body: object) -> str:
    return json.dumps(body, indent=2, default=str, ensure_ascii=False) + "\n"


class _Writes(io.StringIO):
    """A file that remembers its longest single write."""

    longest = 0

    def write(self, s: str) -> int:
        self.longest = max(self.longest, len(s))
        return super().write(s)


def test_streamed_json_is_the_whole_document_dumped_at_once() -> None:
    one, two = _verdict(), _verdict("other\u202e", n=7)
    assert reports.to_json(one) == _dumped(_old_dict(one))
    # the stored report (gate_verdicts.report): json.dumps's compact form, ASCII only, streamed the same way
    assert json.dumps(one.to_dict(), default=str) == json.dumps(_old_dict(one), default=str)
    stored = "".join(json_pieces(one.parts(), indent=None, ensure_ascii=True))
    assert stored == json.dumps(_old_dict(one), default=str)
    assert reports.to_json([one, two]) == _dumped({"passed": False, "verdicts": [_old_dict(one), _old_dict(two)]})
    empty = Verdict(**{**vars(one), "rules": (_rule("leakage", True, 0),), "notes": (), "category_costs": ()})
    assert reports.to_json(empty) == _dumped(_old_dict(empty))
    data = json.loads(reports.to_json(one))
    assert len(data["failing_cases"]) == one.n_failing_cases == 60
    assert data["failing_cases"][3]["case_id"] == "case-3-abc\u202edef"  # JSON keeps the value; its reader escapes


def test_json_and_markdown_are_written_a_piece_at_a_time() -> None:
    verdict = _verdict(n=2_000)
    for writer in (reports.write_json, reports.write_markdown):
        out = _Writes()
        writer(verdict, out)
        assert len(out.getvalue()) > 500_000 and out.longest < 30_000  # one case (a 10,000-character id) at most


def test_markdown_escapes_every_failing_case_through_the_one_cell_escape() -> None:
    verdict = _verdict(n=12)
    text = reports.to_markdown(verdict)
    assert text == reports.to_markdown([verdict])
    assert "<details open><summary>18 failing case(s)</summary>" in text
    assert "| regression:R@10 | case-0-␛\\[2J | slice=␛\\]8;;http://x␛\\\\link␛\\]8;;␛\\\\ | ranking | d0 |" in text
    assert "| critical\\_cases" not in text and "| critical_cases:R@10 | case-3-abc\\\\u202edef |" in text
    assert "\x1b" not in text and "\u202e" not in text and "<b>" not in text
    both = reports.to_markdown([verdict, _verdict("b", n=1)])
    assert both.startswith("**2 candidates against base\\|line: cand␛\\[31m FAIL, b FAIL**\n\n### ragtriage gate")
    assert both.count("### ragtriage gate") == 2 and "</details>\n\n### ragtriage gate" in both


def test_text_is_printed_in_pieces_of_whole_lines() -> None:
    one, two = _verdict(n=25), _verdict("b", n=1)
    pieces = list(reports.text_pieces([one, two], lines=7))
    text = reports.to_text([one, two])
    assert "".join(pieces) == text and text.endswith("2 candidates against base|line: cand\x1b[31m FAIL, b FAIL\n")
    # 2 verdicts of 5 rules: 2 head lines, 5 rule lines, 10 notes, the cases of every rule and a summary each
    lines = 2 * (2 + 5 + 10 + 1) + (25 + 3 + 12) + (1 + 3 + 0) + 1
    assert len(pieces) == -(-lines // 7) and all(p.endswith("\n") for p in pieces)
    assert "        case-3-abc\u202edef [slice=[bold]x[/]] ranking: d3\n" in text  # the CLI makes it visible
