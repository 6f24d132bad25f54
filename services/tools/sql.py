"""What a tool needs of the database: one query, all its rows (an asyncpg pool or connection)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class Fetcher(Protocol):
    async def fetch(self, query: str, *args: Any) -> Sequence[Any]: ...
