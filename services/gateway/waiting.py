"""Requests waiting for their answers, matched by request_id as replies arrive."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from shared.contracts.envelope import Envelope


@dataclass
class PendingAnswers:
    _futures: dict[str, asyncio.Future[Envelope[Any]]] = field(default_factory=dict)

    def expect(self, request_id: str) -> asyncio.Future[Envelope[Any]]:
        future: asyncio.Future[Envelope[Any]] = asyncio.get_running_loop().create_future()
        self._futures[request_id] = future
        return future

    def deliver(self, envelope: Envelope[Any]) -> bool:
        future = self._futures.pop(envelope.request_id, None)
        if future is None or future.done():
            return False
        future.set_result(envelope)
        return True

    def forget(self, request_id: str) -> None:
        self._futures.pop(request_id, None)

    def __len__(self) -> int:
        return len(self._futures)
