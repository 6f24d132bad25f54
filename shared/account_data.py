"""What a user owns, as a whole: exported, and deleted (one upload, one conversation, or
everything and the user with it). Pure database work, called without HTTP: the gateway's
/v1/documents/{id}, /v1/conversations/{id}, /v1/me and /v1/me/export, and the operator's
`finq users delete NAME`.

Each function takes the services' pool, the owner's (the operator's commands) or one
connection, and the user's id, and works in one transaction acting for that user
(`app.user_id`): row-level security keeps every statement to their rows whoever connects,
and each statement names the user as well, so an owner's connection (which sees every
row) deletes no one else's.

A user's rows are those of OWNED_TABLES, children before their parents so no foreign key
is broken on the way; tests/gateway/test_your_data.py compares that list with every table
of the database that holds a `user_id`, so a new table cannot be forgotten here.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import date, datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any, Literal

import asyncpg
from pydantic import BaseModel, Field

from shared.contracts.base import utc_now
from shared.db import ACT_AS_SQL

# Every table holding a user's rows (by its `user_id` column), in the order they are
# deleted: a row goes before any row it references.
OWNED_TABLES = (
    "answers",
    "questions",
    "messages",
    "conversations",
    "query_log",
    "statement_figures",
    "chunks",
    "document_files",
    "documents",
    "trades",
    "income",
    "transfers",
    "portfolio_imports",
    "accounts",
)

# Deleting a document takes its file, chunks (and their vectors) and statement figures with
# it (ON DELETE CASCADE). A public filing has no user: no user's statement matches it.
DELETE_DOCUMENT_SQL = "DELETE FROM documents WHERE id = $1 AND user_id = $2 RETURNING id"
# Whether a document the user could not delete is one they may see: a public one.
PUBLIC_DOCUMENT_SQL = "SELECT public FROM documents WHERE id = $1"

# A conversation's rows: its turns go with it (ON DELETE CASCADE); its questions, their
# answers and log rows go here ($1 the conversation, $2 its user)...
DELETE_CONVERSATION_SQL = [
    """DELETE FROM answers WHERE user_id = $2 AND request_id IN (
           SELECT request_id FROM questions WHERE conversation_id = $1 AND user_id = $2)""",
    "DELETE FROM questions WHERE conversation_id = $1 AND user_id = $2",
    "DELETE FROM query_log WHERE conversation_id = $1 AND user_id = $2",
]
# ...and the metric readings waiting on its next turn (a table without users of its own).
DELETE_CONVERSATION_ALIASES_SQL = "DELETE FROM alias_pending WHERE conversation_id = $1"
OWN_CONVERSATION_SQL = "DELETE FROM conversations WHERE id = $1 AND user_id = $2 RETURNING id"

# The metric readings waiting on a next turn of any of the user's conversations (the table
# holds no user of its own).
DELETE_PENDING_ALIASES_SQL = """
DELETE FROM alias_pending WHERE conversation_id IN (
    SELECT id FROM conversations WHERE user_id = $1)
"""
# The user's own row (through a SECURITY DEFINER function: the services' role cannot touch
# the users table): their key stops working. The local user's row stays (migration 021).
FORGET_USER_SQL = "SELECT finq_forget_acting_user()"
ACCOUNT_SQL = "SELECT * FROM finq_acting_user_account()"


class DocumentDeletion(StrEnum):
    DELETED = "deleted"
    PUBLIC = "public"  # a filing finq holds for everyone: no user's to delete
    NOT_FOUND = "not_found"  # no such document, or another user's


@asynccontextmanager
async def acting_for(
    db: asyncpg.Pool | asyncpg.Connection, user_id: str
) -> AsyncIterator[asyncpg.Connection]:
    """One transaction on `db` acting for `user_id`."""
    if isinstance(db, asyncpg.Pool):
        async with db.acquire() as conn, conn.transaction():
            await conn.execute(ACT_AS_SQL, user_id)
            yield conn
        return
    async with db.transaction():
        await db.execute(ACT_AS_SQL, user_id)
        yield db


def _document_key(document_id: str) -> uuid.UUID | None:
    """The id as the documents table keys it, or None for what is no document id."""
    try:
        return uuid.UUID(document_id)
    except ValueError:
        return None


async def delete_document(
    db: asyncpg.Pool | asyncpg.Connection, user_id: str, document_id: str
) -> DocumentDeletion:
    """Delete one of the user's uploads and everything read from it (its stored file, its
    chunks and their vectors, its statement figures), whatever its ingest job is doing: a
    job still reading it finds it gone and stores nothing (services/ingest)."""
    key = _document_key(document_id)
    if key is None:
        return DocumentDeletion.NOT_FOUND
    async with acting_for(db, user_id) as conn:
        if await conn.fetchval(DELETE_DOCUMENT_SQL, key, user_id) is not None:
            return DocumentDeletion.DELETED
        public = await conn.fetchval(PUBLIC_DOCUMENT_SQL, key)
    return DocumentDeletion.PUBLIC if public else DocumentDeletion.NOT_FOUND


async def delete_conversation(
    db: asyncpg.Pool | asyncpg.Connection, user_id: str, conversation_id: str
) -> bool:
    """Delete one of the user's conversations with its turns, questions, answers and log
    rows; False when the user has no such conversation."""
    async with acting_for(db, user_id) as conn:
        # The conversation first: nothing else is touched unless it is the user's.
        if await conn.fetchval(OWN_CONVERSATION_SQL, conversation_id, user_id) is None:
            return False
        for statement in DELETE_CONVERSATION_SQL:
            await conn.execute(statement, conversation_id, user_id)
        await conn.execute(DELETE_CONVERSATION_ALIASES_SQL, conversation_id)
    return True


class AccountDeletion(BaseModel):
    """What DELETE /v1/me (and `finq users delete`) removed."""

    user_id: str
    rows: dict[str, int] = Field(description="Rows deleted, by table")
    user_removed: bool = Field(
        description="Whether the user (and with it their API key) is gone; the local user "
        "of a `finq up` has no key and stays, with none of their rows"
    )


async def delete_account(db: asyncpg.Pool | asyncpg.Connection, user_id: str) -> AccountDeletion:
    """Delete every row the user owns, in one transaction, and the user: their key is
    refused from the next request on."""
    deleted: dict[str, int] = {}
    async with acting_for(db, user_id) as conn:
        await conn.execute(DELETE_PENDING_ALIASES_SQL, user_id)
        for table in OWNED_TABLES:
            status = await conn.execute(f"DELETE FROM {table} WHERE user_id = $1", user_id)
            deleted[table] = int(status.rsplit(" ", 1)[-1])
        removed = bool(await conn.fetchval(FORGET_USER_SQL))
    return AccountDeletion(user_id=user_id, rows=deleted, user_removed=removed)


# --- the export ----------------------------------------------------------------------


class ExportedUser(BaseModel):
    id: str
    name: str
    created_at: datetime
    operator: bool


class ExportedKey(BaseModel):
    """An API key as finq keeps it, without the key or its hash: its first characters
    (which tell keys apart) and its dates."""

    prefix: str
    created_at: datetime
    revoked_at: datetime | None


class ExportedMessage(BaseModel):
    request_id: str
    role: Literal["user", "assistant"]
    content: str
    intent: str | None
    needs_clarification: bool
    created_at: datetime
    # An assistant turn: what the router made of the question, and the answer as sent
    # (the validator's AnswerValidated), both as stored.
    route: dict[str, Any] | None = None
    answer: dict[str, Any] | None = None


class ExportedConversation(BaseModel):
    id: str
    title: str
    created_at: datetime
    updated_at: datetime
    messages: list[ExportedMessage]


class ExportedRequest(BaseModel):
    """A query log row: what finq did with one question (GET /v1/requests/{id})."""

    request_id: str
    conversation_id: str
    question: str
    intent: str | None
    decided_by: str | None
    route: dict[str, Any] | None
    tools: list[dict[str, Any]]
    validation: dict[str, Any]
    attempts: int
    timings_ms: dict[str, float]
    total_ms: float | None
    tokens: dict[str, Any]
    cost_usd: float | None
    stages: list[dict[str, Any]]
    created_at: datetime


class ExportedDocument(BaseModel):
    """An upload's metadata (its text is in the file the user has)."""

    id: str
    title: str
    doc_type: str
    source_name: str | None
    symbol: str | None
    company: str | None
    form: str | None
    fiscal_year: int | None
    fiscal_quarter: int | None
    period_end: date | None
    filed: date | None
    page_count: int | None
    table_count: int
    chunk_count: int
    status: str
    error: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime


class ExportedAccount(BaseModel):
    id: str
    name: str
    kind: str
    currency: str
    created_at: datetime


class ExportedImport(BaseModel):
    id: str
    file_name: str
    sha256: str
    rows: int
    imported_at: datetime


class ExportedActivity(BaseModel):
    """One row of an imported file: its import and line, its account, and its effect on
    the account's cash (`amount`, signed); amounts are exact decimals."""

    id: int
    import_id: str
    account_id: str
    row: int
    symbol: str | None
    amount: Decimal
    currency: str
    trade_date: date
    settlement_date: date
    description: str


class ExportedTrade(ExportedActivity):
    side: Literal["buy", "sell"]
    quantity: Decimal
    price: Decimal
    fees: Decimal


class ExportedIncome(ExportedActivity):
    kind: Literal["dividend", "interest"]


class ExportedTransfer(ExportedActivity):
    kind: Literal["deposit", "withdrawal", "transfer", "fee"]
    to_account_id: str | None


class ExportedPortfolio(BaseModel):
    accounts: list[ExportedAccount]
    imports: list[ExportedImport]
    trades: list[ExportedTrade]
    income: list[ExportedIncome]
    transfers: list[ExportedTransfer]


class AccountExport(BaseModel):
    """Everything finq holds of one user (GET /v1/me/export), never a key or its hash."""

    exported_at: datetime
    user: ExportedUser
    keys: list[ExportedKey]
    conversations: list[ExportedConversation]
    requests: list[ExportedRequest]
    documents: list[ExportedDocument]
    portfolio: ExportedPortfolio


CONVERSATIONS_SQL = """
SELECT c.id, c.title, c.created_at, c.updated_at,
       coalesce(
           (SELECT json_agg(json_build_object(
                'request_id', m.request_id, 'role', m.role, 'content', m.content,
                'intent', m.intent, 'needs_clarification', m.needs_clarification,
                'created_at', m.created_at, 'route', m.route,
                'answer', CASE WHEN m.role = 'assistant' THEN a.body END) ORDER BY m.id)
            FROM messages m
            LEFT JOIN answers a ON a.request_id = m.request_id AND a.user_id = $1
            WHERE m.conversation_id = c.id AND m.user_id = $1),
           '[]'::json) AS messages
FROM conversations c WHERE c.user_id = $1 ORDER BY c.created_at, c.id
"""
REQUESTS_SQL = """
SELECT request_id, conversation_id, question, intent, decided_by, route, tools, validation,
       attempts, timings_ms, total_ms, tokens, cost_usd, stages, created_at
FROM query_log WHERE user_id = $1 ORDER BY created_at, request_id
"""
DOCUMENTS_SQL = """
SELECT id::text AS id, title, doc_type, source_name, symbol, company, form, fiscal_year,
       fiscal_quarter, period_end, filed, page_count, table_count, chunk_count, status, error,
       created_at, updated_at
FROM documents WHERE user_id = $1 ORDER BY created_at, id
"""
ACCOUNTS_SQL = """
SELECT id::text AS id, name, kind, currency, created_at FROM accounts
WHERE user_id = $1 ORDER BY created_at, name
"""
IMPORTS_SQL = """
SELECT id::text AS id, file_name, sha256, rows, imported_at FROM portfolio_imports
WHERE user_id = $1 ORDER BY imported_at, id
"""
_ACTIVITY_COLUMNS = (
    "id, import_id::text AS import_id, account_id::text AS account_id, row, symbol, amount, "
    "currency, trade_date, settlement_date, description"
)
TRADES_SQL = f"""
SELECT {_ACTIVITY_COLUMNS}, side, quantity, price, fees FROM trades
WHERE user_id = $1 ORDER BY trade_date, id
"""
INCOME_SQL = f"""
SELECT {_ACTIVITY_COLUMNS}, kind FROM income WHERE user_id = $1 ORDER BY trade_date, id
"""
TRANSFERS_SQL = f"""
SELECT {_ACTIVITY_COLUMNS}, kind, to_account_id::text AS to_account_id FROM transfers
WHERE user_id = $1 ORDER BY trade_date, id
"""
# The query log's JSON columns, read back as the values they hold.
_JSON_COLUMNS = ("route", "tools", "validation", "timings_ms", "tokens", "stages", "error")


def _row(record: asyncpg.Record) -> dict[str, Any]:
    row = dict(record)
    for column in _JSON_COLUMNS:
        if isinstance(row.get(column), str):
            row[column] = json.loads(row[column])
    return row


async def export_account(
    db: asyncpg.Pool | asyncpg.Connection, user_id: str
) -> AccountExport | None:
    """Everything the user owns, read in one transaction (one consistent moment); None
    when there is no such user."""
    async with acting_for(db, user_id) as conn:
        account = await conn.fetchrow(ACCOUNT_SQL)
        if account is None:
            return None

        async def rows(query: str) -> list[dict[str, Any]]:
            return [_row(record) for record in await conn.fetch(query, user_id)]

        conversations = await rows(CONVERSATIONS_SQL)
        for conversation in conversations:
            if isinstance(conversation["messages"], str):
                conversation["messages"] = json.loads(conversation["messages"])
        portfolio = ExportedPortfolio(
            accounts=[ExportedAccount(**row) for row in await rows(ACCOUNTS_SQL)],
            imports=[ExportedImport(**row) for row in await rows(IMPORTS_SQL)],
            trades=[ExportedTrade(**row) for row in await rows(TRADES_SQL)],
            income=[ExportedIncome(**row) for row in await rows(INCOME_SQL)],
            transfers=[ExportedTransfer(**row) for row in await rows(TRANSFERS_SQL)],
        )
        keys: list[ExportedKey] = []
        if account["key_prefix"]:  # the local user of a `finq up` has no key
            keys.append(
                ExportedKey(
                    prefix=account["key_prefix"],
                    created_at=account["created_at"],
                    revoked_at=account["revoked_at"],
                )
            )
        return AccountExport(
            exported_at=utc_now(),
            user=ExportedUser(
                id=account["id"],
                name=account["name"],
                created_at=account["created_at"],
                operator=account["operator"],
            ),
            keys=keys,
            conversations=[ExportedConversation(**row) for row in conversations],
            requests=[ExportedRequest(**row) for row in await rows(REQUESTS_SQL)],
            documents=[ExportedDocument(**row) for row in await rows(DOCUMENTS_SQL)],
            portfolio=portfolio,
        )
