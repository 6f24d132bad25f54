"""Conversations as the gateway keeps them: the question written as a turn in the same
statement as the question row, the last turns loaded for the router, and the two read
endpoints' queries. Every query is scoped to the asking user."""

from __future__ import annotations

import json
from typing import Any, Protocol

from pydantic import ValidationError

from services.gateway.http_models import (
    AskResponse,
    ConversationDetail,
    ConversationMessage,
    ConversationSummary,
)
from shared.contracts.answers import AnswerValidated
from shared.contracts.questions import ConversationTurn
from shared.contracts.understanding import Understood

TITLE_CHARS = 80

# A new conversation, its question row and its first turn, in one statement.
START_CONVERSATION_SQL = """
WITH conversation AS (
    INSERT INTO conversations (id, user_id, title) VALUES ($2, $3, $7)
), question AS (
    INSERT INTO questions (request_id, conversation_id, user_id, question, trace_id, deadline)
    VALUES ($1, $2, $3, $4, $5, $6)
)
INSERT INTO messages (conversation_id, request_id, role, content, user_id)
VALUES ($2, $1, 'user', $4, $3)
"""

# A turn in an existing conversation of this user: nothing is written unless the
# conversation is theirs, and the statement says whether it was.
CONTINUE_CONVERSATION_SQL = """
WITH conversation AS (
    UPDATE conversations SET updated_at = now()
    WHERE id = $2 AND user_id = $3
    RETURNING id
), question AS (
    INSERT INTO questions (request_id, conversation_id, user_id, question, trace_id, deadline)
    SELECT $1, id, $3, $4, $5, $6 FROM conversation
), turn AS (
    INSERT INTO messages (conversation_id, request_id, role, content, user_id)
    SELECT id, $1, 'user', $4, $3 FROM conversation
)
SELECT count(*) FROM conversation
"""

# The last turns before this request: each question with finq's answer and its route.
HISTORY_SQL = """
SELECT u.content AS question, a.content AS answer, a.intent, a.route,
       coalesce(a.needs_clarification, false) AS needs_clarification
FROM messages u
LEFT JOIN messages a ON a.request_id = u.request_id AND a.role = 'assistant'
WHERE u.conversation_id = $1 AND u.role = 'user' AND u.request_id <> $2
ORDER BY u.id DESC
LIMIT $3
"""

LIST_SQL = """
SELECT c.id, c.title, c.created_at, c.updated_at,
       (SELECT count(*) FROM messages m WHERE m.conversation_id = c.id) AS message_count
FROM conversations c
WHERE c.user_id = $1
ORDER BY c.updated_at DESC, c.id
LIMIT $2 OFFSET $3
"""

# Each assistant turn comes with its answer's body (the AnswerValidated payload as sent)
# and its question's trace id, to show it as it was first shown.
DETAIL_SQL = """
SELECT c.id, c.title, c.created_at, c.updated_at,
       coalesce(
           (SELECT json_agg(json_build_object(
                'role', m.role, 'content', m.content, 'intent', m.intent,
                'needs_clarification', m.needs_clarification, 'created_at', m.created_at,
                'request_id', m.request_id,
                'body', CASE WHEN m.role = 'assistant' THEN a.body END,
                'trace_id', CASE WHEN m.role = 'assistant' THEN q.trace_id END) ORDER BY m.id)
            FROM messages m
            LEFT JOIN answers a ON a.request_id = m.request_id
            LEFT JOIN questions q ON q.request_id = m.request_id
            WHERE m.conversation_id = c.id),
           '[]'::json) AS messages
FROM conversations c
WHERE c.id = $1 AND c.user_id = $2
"""


class Connection(Protocol):
    async def execute(self, query: str, *args: Any) -> str: ...
    async def fetch(self, query: str, *args: Any) -> list[Any]: ...
    async def fetchrow(self, query: str, *args: Any) -> Any: ...
    async def fetchval(self, query: str, *args: Any) -> Any: ...


def conversation_title(question: str) -> str:
    """The first question, cut at a word boundary so a title never ends mid-word."""
    text = " ".join(question.split())
    if len(text) <= TITLE_CHARS:
        return text
    cut = text[: TITLE_CHARS - 1].rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "…"


def turn_from_row(row: Any) -> ConversationTurn:
    route = row["route"]
    if isinstance(route, str):
        route = json.loads(route)
    route = route or {}
    understood = route.get("understood")
    return ConversationTurn(
        question=row["question"],
        answer=row["answer"] or "",
        intent=row["intent"],
        # A turn answered before the route was typed carries nothing to inherit.
        understood=Understood.model_validate(understood) if understood else None,
        tool_calls=route.get("tool_calls", []),
        needs_clarification=row["needs_clarification"],
    )


# The most text of earlier turns (questions and answers) sent with a question: a long
# conversation must not grow every message on the bus and every model prompt without end.
HISTORY_MAX_CHARS = 12_000


async def load_history(
    db: Connection,
    conversation_id: str,
    request_id: str,
    turns: int,
    max_chars: int = HISTORY_MAX_CHARS,
) -> list[ConversationTurn]:
    """The conversation's last `turns` turns before `request_id`, oldest first, as many of
    the latest as fit in `max_chars` of question and answer text."""
    if turns <= 0:
        return []
    rows = await db.fetch(HISTORY_SQL, conversation_id, request_id, turns)
    kept: list[ConversationTurn] = []
    size = 0
    for row in rows:  # newest first
        turn = turn_from_row(row)
        size += len(turn.question) + len(turn.answer)
        if size > max_chars:
            break
        kept.append(turn)
    return kept[::-1]


async def list_conversations(
    db: Connection, user_id: str, limit: int, offset: int
) -> list[ConversationSummary]:
    rows = await db.fetch(LIST_SQL, user_id, limit, offset)
    return [ConversationSummary(**dict(row)) for row in rows]


async def read_conversation(
    db: Connection, conversation_id: str, user_id: str
) -> ConversationDetail | None:
    row = await db.fetchrow(DETAIL_SQL, conversation_id, user_id)
    if row is None:
        return None
    messages = json.loads(row["messages"]) if isinstance(row["messages"], str) else row["messages"]
    return ConversationDetail(
        id=row["id"],
        title=row["title"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        messages=[message_from_row(m, row["id"]) for m in messages],
    )


def message_from_row(row: dict[str, Any], conversation_id: str) -> ConversationMessage:
    """A turn as DETAIL_SQL reads it; an assistant turn with the answer as first shown."""
    body, trace_id = row.pop("body", None), row.pop("trace_id", None)
    message = ConversationMessage.model_validate(row)
    if body is None:
        return message
    try:
        shown = AnswerValidated.model_validate(body)
    except ValidationError:
        return message  # a body written by an older finq: the turn's text still shows
    message.answer = AskResponse.of(message.request_id, conversation_id, trace_id, shown)
    return message
