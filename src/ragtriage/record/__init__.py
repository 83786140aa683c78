"""``ragtriage record``: run every case against a live retriever and write the contract's run folder.

Adapters (HTTP, Python callables, LangChain- and LlamaIndex-shaped objects) sit behind one typed seam,
:class:`~ragtriage.record.types.Retriever`; the runner, the journal and run.json know nothing of transports.
"""

from ragtriage.record.hits import ResponseShape, parse_path
from ragtriage.record.runner import Outcome, Progress, RecordOptions
from ragtriage.record.session import RecordPlan, RecordResult, record_run
from ragtriage.record.types import Hit, RecordError, Request, Response, Retriever, RetrieverError

__all__ = [
    "Hit",
    "Outcome",
    "Progress",
    "RecordError",
    "RecordOptions",
    "RecordPlan",
    "RecordResult",
    "Request",
    "Response",
    "ResponseShape",
    "Retriever",
    "RetrieverError",
    "parse_path",
    "record_run",
]
