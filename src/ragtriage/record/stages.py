"""Two retrievers named for one run: the first stage's hits are recorded as ``candidate``, the second's as ``final``.

Both are asked at once, as a serving system would run them side by side for recording; the latency recorded is
the time until both answered.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from ragtriage.record.types import Request, Response, Retriever


class TwoStageRetriever:
    def __init__(self, final: Retriever, candidates: Retriever) -> None:
        self.final, self.candidates = final, candidates

    def describe(self) -> dict[str, Any]:
        return {"kind": "two-stage", "final": self.final.describe(), "candidates": self.candidates.describe()}

    async def aclose(self) -> None:
        await asyncio.gather(self.final.aclose(), self.candidates.aclose())

    @staticmethod
    def _merge(final: Response, cand: Response) -> Response:
        return dataclasses.replace(final, candidates=cand.final, versions={**cand.versions, **final.versions})

    async def retrieve(self, request: Request) -> Response:
        f, c = await asyncio.gather(self.final.retrieve(request), self.candidates.retrieve(request))
        return self._merge(f, c)

    async def first(self, request: Request) -> Response:
        f, c = await asyncio.gather(self.final.first(request), self.candidates.first(request))
        return self._merge(f, c)
