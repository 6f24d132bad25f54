"""The alias log: metric phrases the catalog did not know, and the aliases learned from them.

A phrase that missed, or that only a fuzzy or embedding fallback understood, is counted in
`alias_misses` (with the question it came in and what it resolved to), so the team sees
which names users type. A fallback reading is also held in `alias_pending` for its
conversation: when a later question of the same conversation names that metric exactly,
the user has evidently accepted the reading, and the phrase becomes a learned alias that
resolves exactly from then on (`learned_aliases`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from shared.metric_catalog import METRICS_BY_ID
from shared.metric_resolver import Resolution


class Database(Protocol):
    async def fetch(self, query: str, *args: Any) -> list[Any]: ...


# Both statements of a question in one round trip: the misses counted, the fallback readings
# held for the conversation.
RECORD_SQL = """
WITH phrases AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::double precision[])
        AS p (phrase, resolved_to, method, confidence)
), misses AS (
    INSERT INTO alias_misses AS m (phrase, example, resolved_to, method, confidence)
    SELECT phrase, $5, resolved_to, method, confidence FROM phrases
    ON CONFLICT (phrase) DO UPDATE
        SET count = m.count + 1, last_seen = now(), example = EXCLUDED.example,
            resolved_to = EXCLUDED.resolved_to, method = EXCLUDED.method,
            confidence = EXCLUDED.confidence
    RETURNING 1
), pending AS (
    INSERT INTO alias_pending (conversation_id, phrase, metric)
    SELECT $6, phrase, resolved_to FROM phrases WHERE resolved_to IS NOT NULL
    ON CONFLICT (conversation_id, phrase) DO UPDATE
        SET metric = EXCLUDED.metric, created_at = now()
    RETURNING 1
)
SELECT (SELECT count(*) FROM misses) AS misses, (SELECT count(*) FROM pending) AS pending
"""

CONFIRM_SQL = """
WITH confirmed AS (
    DELETE FROM alias_pending
    WHERE conversation_id = $1 AND metric = ANY($2::text[])
    RETURNING phrase, metric
)
INSERT INTO learned_aliases (phrase, metric, confirmed_by)
SELECT phrase, metric, $3 FROM confirmed
ON CONFLICT (phrase) DO NOTHING
RETURNING phrase, metric
"""


@dataclass(frozen=True)
class AliasMiss:
    phrase: str
    example: str
    count: int
    first_seen: datetime
    last_seen: datetime
    resolved_to: str | None
    method: str | None
    confidence: float | None


async def record_metric_phrases(
    db: Database,
    conversation_id: str,
    question: str,
    resolutions: Sequence[Resolution],
    unresolved: Sequence[str],
) -> None:
    """Count the fallback readings and the misses of one question."""
    rows: dict[str, tuple[str | None, str | None, float | None]] = {}
    for phrase in unresolved:
        rows[phrase] = (None, None, None)
    for resolution in resolutions:
        if resolution.by_fallback:
            rows[resolution.phrase] = (
                resolution.metric_id,
                resolution.method,
                resolution.confidence,
            )
    if not rows:
        return
    phrases = list(rows)
    await db.fetch(
        RECORD_SQL,
        phrases,
        [rows[p][0] for p in phrases],
        [rows[p][1] for p in phrases],
        [rows[p][2] for p in phrases],
        question,
        conversation_id,
    )


async def confirm_exact_uses(
    db: Database, conversation_id: str, request_id: str, metric_ids: Sequence[str]
) -> dict[str, str]:
    """Learn the conversation's pending readings of these metrics; returns what was learned."""
    if not metric_ids:
        return {}
    rows = await db.fetch(CONFIRM_SQL, conversation_id, list(metric_ids), request_id)
    return {row["phrase"]: row["metric"] for row in rows}


async def load_learned_aliases(db: Database) -> dict[str, str]:
    rows = await db.fetch("SELECT phrase, metric FROM learned_aliases")
    # A metric dropped from the catalog leaves its learned aliases behind: skip them.
    return {row["phrase"]: row["metric"] for row in rows if row["metric"] in METRICS_BY_ID}


async def list_alias_misses(db: Database, limit: int = 50) -> list[AliasMiss]:
    rows = await db.fetch(
        "SELECT phrase, example, count, first_seen, last_seen, resolved_to, method, confidence"
        " FROM alias_misses ORDER BY count DESC, last_seen DESC LIMIT $1",
        limit,
    )
    return [AliasMiss(**dict(row)) for row in rows]
