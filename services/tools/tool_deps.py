"""What every tool runner is handed: the database, the user the gateway stamped on the
envelope, and the stage's optional parts. A spec says which optional parts its runner
needs (`ToolSpec.needs`); the dispatcher refuses a call whose needs this stage lacks, so
no runner branches on whether a dependency exists."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import asyncpg

from services.tools.metric_values import MetricValueCache
from services.tools.sql import Fetcher
from shared.contracts.tool_results import ToolResult
from shared.tools import Dependency, SearchDocumentsArgs


# What the runners use of the documents index and of the user's book, so that this module
# names no runner's module (they import it).
class DocumentSearch(Protocol):
    async def search(self, db: Any, args: SearchDocumentsArgs, user_id: str) -> ToolResult: ...


class UserBook(Protocol):
    pool: asyncpg.Pool
    user_id: str

    async def get(self) -> Any: ...


@dataclass
class ToolDeps:
    db: Fetcher
    user_id: str
    # The user's book, read once for all the portfolio calls of a route.
    user_book: UserBook
    documents: DocumentSearch | None = None
    # The figures kept in memory; without it figures are read from the database.
    metric_values: MetricValueCache | None = None

    def lacking(self, needs: frozenset[Dependency]) -> list[Dependency]:
        present: dict[Dependency, bool] = {"documents": self.documents is not None}
        return sorted(need for need in needs if not present[need])

    @property
    def search(self) -> DocumentSearch:
        """The documents index, for a runner whose spec needs it (checked before it runs)."""
        assert self.documents is not None, "dispatched without the documents it needs"
        return self.documents


# A tool's runner: its validated arguments and the deps, to what it fetched.
Runner = Callable[[Any, ToolDeps], Awaitable[ToolResult]]
