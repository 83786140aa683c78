"""The overview says when leakage was judged against a corpus manifest derived from trace metadata (partial)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtriage.store.corpus_manifest import PARTIAL_LABEL
from ragtriage.tui.app import TriageApp
from tests.tui.helpers import pilot_test, settle
from tests.tui.test_untrusted import shown

pytest.importorskip("opentelemetry.proto")
pytest.importorskip("openinference.semconv")
from tests.unit.test_trace_manifest import META, _load  # noqa: E402


@pytest.mark.slow  # loads through the CLI
@pilot_test
@pytest.mark.parametrize("documents", [None, [{"document_id": "d-reset", "acl": ["staff"]}]])
async def test_the_overview_names_a_partial_manifest_at_80x24(tmp_path: Path, documents: list | None) -> None:
    db, res = _load(tmp_path, META, documents=documents)
    assert res.exit_code == 0, res.output
    app = TriageApp(db, "prod", author="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        text = shown(app)
        # derived: the metadata's acls found the leaks; real: only d-reset is known, nothing leaks
        assert ("LEAKAGE FAILS" in text) is (documents is None), text
        assert (PARTIAL_LABEL in text) is (documents is None), text
