"""The format registry (``store.byo.READERS``) reads every format ``contract.sniff`` can name, per role."""

from __future__ import annotations

from ragtriage.contract.sniff import FORMATS
from ragtriage.contract.staging import FORMATS as CONTRACT_TABLE_FORMATS
from ragtriage.store.byo import READERS, STAGED


def test_every_sniffed_format_has_a_reader() -> None:
    for role, formats in FORMATS.items():
        assert role in STAGED
        for fmt in formats:
            assert (role, fmt) in READERS or fmt in CONTRACT_TABLE_FORMATS, (role, fmt)


def test_the_registry_names_no_format_sniffing_cannot_name() -> None:
    assert all(fmt in FORMATS[role] for role, fmt in READERS)
