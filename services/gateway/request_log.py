"""GET /v1/requests/{request_id}: the query log row of one of the user's requests."""

from __future__ import annotations

import json
from typing import Any, Protocol

from services.gateway.http_models import RequestLog

REQUEST_LOG_SQL = """
SELECT request_id, conversation_id, question, intent, decided_by, route, tools, validation,
       attempts, timings_ms, total_ms, tokens, cost_usd, created_at
FROM query_log
WHERE request_id = $1 AND user_id = $2
"""
_JSON_COLUMNS = ("route", "tools", "validation", "timings_ms", "tokens")


class Fetcher(Protocol):
    async def fetchrow(self, query: str, *args: Any) -> Any: ...


async def read_request_log(db: Fetcher, request_id: str, user_id: str) -> RequestLog | None:
    row = await db.fetchrow(REQUEST_LOG_SQL, request_id, user_id)
    if row is None:
        return None
    fields = dict(row)
    for column in _JSON_COLUMNS:
        if isinstance(fields[column], str):
            fields[column] = json.loads(fields[column])
    return RequestLog(**fields)
