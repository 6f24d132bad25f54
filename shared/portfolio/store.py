"""A user's portfolio in PostgreSQL (migration 016): importing a file of activity, and
reading it back.

An import is all or nothing. The file is parsed (in a child process with limits when it
comes from the network: `shared.portfolio.import_process`), then checked together with
everything the user holds already, by replaying the old rows and the new through the
ledger: a sale of more than is held at that moment, in this file or because of it, is an
error of the row that sells. Any error and nothing is stored; else the import, the
accounts it names and every row are written in one transaction. The same file (its
SHA-256) is imported once per user; sent again, it is recognized and nothing is stored.

An import can be undone: its rows go, with the accounts only it named, and the file may be
imported again. Nothing derived is stored (positions, lots, cost basis and cash are
replayed from the rows on every read), so what remains is consistent once it replays: the
remaining rows are replayed through the ledger first, as an import's are, and an undo that
would leave a later sale selling shares no longer bought is refused, naming that sale.

Every read and write acts for one user (`shared.db.acting_as`, or a transaction that set
`app.user_id`): row-level security shows the services' role that user's rows only, and the
queries say `user_id = finq_acting_user()` too, because the owner, who runs the operator's
commands, is shown every user's rows.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Literal, Protocol

import asyncpg
from pydantic import BaseModel, Field

from shared.db import acting_as
from shared.portfolio.activity import (
    INCOME,
    TRADES,
    AccountKind,
    Activity,
    ActivityKind,
    AssetClass,
    Instrument,
)
from shared.portfolio.csv_format import ParsedActivity, RowError, parse_activity_csv
from shared.portfolio.ledger import Ledger, OversoldError

# Parses an activity file against the symbols finq knows: `parse_here` in this process, or
# import_process.parse_in_child in a child process with limits (a file from the network).
ActivityParser = Callable[[bytes, Mapping[str, AssetClass]], Awaitable[ParsedActivity]]


class Database(Protocol):
    """A connection in a transaction acting for a user, or a pool acting for one."""

    async def fetch(self, query: str, *args: Any) -> list[Any]: ...


class RowProblem(BaseModel):
    """Why one row (or the file, row 1 being its header) cannot be imported."""

    row: int = Field(description="The line in the file, the header being line 1")
    field: str | None = Field(description="The column, as finq names it; null: the whole row")
    message: str


class EarlierImport(BaseModel):
    """The import that already holds the same file."""

    import_id: str
    file_name: str
    rows: int
    imported_at: datetime


class ImportOutcome(BaseModel):
    """What an import did: the rows and accounts stored, or why nothing was."""

    import_id: str | None = Field(default=None, description="Null when nothing was stored")
    file_name: str
    sha256: str
    rows: int = Field(default=0, description="Rows stored by this import")
    accounts: list[str] = Field(default_factory=list, description="The accounts the file names")
    accounts_created: list[str] = Field(
        default_factory=list, description="Those that did not exist before this import"
    )
    duplicate_of: EarlierImport | None = Field(
        default=None, description="Set when the same file was imported before: nothing stored"
    )
    errors: list[RowProblem] = Field(
        default_factory=list, description="Every row that cannot be imported: nothing stored"
    )

    @property
    def stored(self) -> bool:
        return self.import_id is not None


class Account(BaseModel):
    id: str
    name: str
    kind: AccountKind
    currency: str
    created_at: datetime


class AccountList(BaseModel):
    """GET /v1/portfolio/accounts: the caller's accounts, by name."""

    accounts: list[Account]


async def parse_here(data: bytes, known_symbols: Mapping[str, AssetClass]) -> ParsedActivity:
    """Parse in this process (off the event loop): for files the operator chose."""
    return await asyncio.to_thread(parse_activity_csv, data, known_symbols)


def file_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# Imports of one user run one at a time: each is checked against what the others stored.
_IMPORT_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended('finq.portfolio:' || $1, 0))"
_EARLIER_IMPORT_SQL = """
    SELECT id::text AS import_id, file_name, rows, imported_at FROM portfolio_imports
    WHERE user_id = finq_acting_user() AND sha256 = $1
"""


async def import_activity(
    pool: asyncpg.Pool,
    user_id: str,
    file_name: str,
    data: bytes,
    parse: ActivityParser = parse_here,
) -> ImportOutcome:
    """Import a file of activity for `user_id`, all or nothing (see the module)."""
    sha256 = file_sha256(data)
    outcome = ImportOutcome(file_name=file_name, sha256=sha256)
    scope = acting_as(pool, user_id)
    # Looked up before parsing too: a file sent again costs no child process.
    if earlier := await _earlier_import(scope, sha256):
        return outcome.model_copy(update={"duplicate_of": earlier})
    instruments = await load_instruments(scope)
    parsed = await parse(data, {s: i.asset_class for s, i in instruments.items()})
    if parsed.errors:
        return outcome.model_copy(update={"errors": _problems(parsed.errors)})
    async with scope.acquire() as conn:
        await conn.execute(_IMPORT_LOCK_SQL, user_id)
        if earlier := await _earlier_import(conn, sha256):
            return outcome.model_copy(update={"duplicate_of": earlier})
        kinds = await _account_kinds(conn)
        new = _with_known_kinds(parsed.activities, kinds)
        stored = await _load_stored(conn)
        # Off the event loop: a long history takes its time, and the gateway serves others.
        if problems := await asyncio.to_thread(_replay, stored, new):
            return outcome.model_copy(update={"errors": problems})
        named = sorted({name for a in new for name in (a.account, a.to_account) if name})
        created = [name for name in named if name not in kinds]
        import_id = await _store(conn, file_name, sha256, new)
    return outcome.model_copy(
        update={
            "import_id": import_id,
            "rows": len(new),
            "accounts": named,
            "accounts_created": created,
        }
    )


async def _earlier_import(db: Database, sha256: str) -> EarlierImport | None:
    rows = await db.fetch(_EARLIER_IMPORT_SQL, sha256)
    return EarlierImport(**dict(rows[0])) if rows else None


def _problems(errors: Sequence[RowError]) -> list[RowProblem]:
    return [RowProblem(row=e.row, field=e.field, message=e.message) for e in errors]


async def _account_kinds(db: Database) -> dict[str, AccountKind]:
    return {account.name: account.kind for account in await list_accounts(db)}


def _with_known_kinds(
    activities: Sequence[Activity], kinds: Mapping[str, AccountKind]
) -> list[Activity]:
    """The activities with the kinds of the accounts the user holds already: an account
    keeps the kind it was made with (a file that leaves the type out reads as brokerage)."""
    updated: list[Activity] = []
    for activity in activities:
        changes: dict[str, AccountKind] = {}
        if (kind := kinds.get(activity.account)) is not None and kind != activity.account_kind:
            changes["account_kind"] = kind
        if activity.to_account is not None:
            to_kind = kinds.get(activity.to_account)
            if to_kind is not None and to_kind != activity.to_account_kind:
                changes["to_account_kind"] = to_kind
        updated.append(activity.model_copy(update=changes) if changes else activity)
    return updated


@dataclass(frozen=True)
class _Replayed:
    """One activity in the replay, and whether it comes from the file being imported."""

    activity: Activity
    new: bool


def _replay(stored: Sequence[Activity], new: Sequence[Activity]) -> list[RowProblem]:
    """The new rows' problems when replayed after everything stored; [] when none.

    On a day, stored rows come first (in the order they were imported) and then the file's
    in its own order. Each activity takes its place in that order as its `row` for the
    replay, so the ledger's ordering keeps it and its error names exactly one activity."""
    ordered = sorted(
        [(a.trade_date, 0, position, _Replayed(a, False)) for position, a in enumerate(stored)]
        + [(a.trade_date, 1, a.row, _Replayed(a, True)) for a in new],
        key=lambda entry: entry[:3],
    )
    replayed = [entry[3] for entry in ordered]
    if found := _first_oversold([item.activity for item in replayed]):
        place, error = found
        return [_oversold_problem(error, replayed[place], new)]
    return []


def _first_oversold(ordered: Sequence[Activity]) -> tuple[int, OversoldError] | None:
    """The first sale of more than is held when `ordered` is replayed in exactly this order
    (its place in it, and the ledger's error), or None.

    Each activity takes its place in the order as its `row` for the replay: the ledger
    orders a day's rows by `row`, which would otherwise mix rows of different files."""
    renumbered = [
        activity.model_copy(update={"row": place})
        for place, activity in enumerate(ordered, start=1)
    ]
    try:
        Ledger.build(renumbered)
    except OversoldError as error:
        return error.row - 1, error
    return None


def _oversold_problem(error: OversoldError, sale: _Replayed, new: Sequence[Activity]) -> RowProblem:
    sold = sale.activity
    asked = _plain(error.asked)
    held = f"{error.account} holds only {_plain(error.held)} then"
    if sale.new:
        return RowProblem(
            row=sold.row,
            field="quantity",
            message=f"sells {asked} {error.symbol} on {sold.trade_date}, but {held}",
        )
    # A sale imported before fails because of this file: it takes the shares away first.
    culprits = [
        a
        for a in new
        if a.account == error.account
        and a.symbol == error.symbol
        and a.kind is ActivityKind.SELL
        and a.trade_date <= sold.trade_date
    ]
    row = culprits[-1].row if culprits else (new[0].row if new else 1)
    return RowProblem(
        row=row,
        field="quantity",
        message=f"leaves too few {error.symbol} for a sale of {asked} on {sold.trade_date} "
        f"imported before (row {sold.row} of its file): {held}",
    )


def _plain(quantity: Decimal) -> str:
    """20, 15.5: a quantity as a person writes it (numeric keeps the file's trailing zeros)."""
    return f"{quantity.normalize():f}"


async def _store(
    conn: asyncpg.Connection, file_name: str, sha256: str, activities: Sequence[Activity]
) -> str:
    """Write the import, its accounts and its rows; the caller's transaction holds them."""
    import_id = await conn.fetchval(
        "INSERT INTO portfolio_imports (file_name, sha256, rows) VALUES ($1, $2, $3) RETURNING id",
        file_name,
        sha256,
        len(activities),
    )
    account_ids = await _ensure_accounts(conn, activities)
    trades: list[tuple[Any, ...]] = []
    income: list[tuple[Any, ...]] = []
    transfers: list[tuple[Any, ...]] = []
    for a in activities:
        common = (import_id, account_ids[a.account], a.row)
        dates = (a.amount, a.currency, a.trade_date, a.settlement_date, a.description)
        if a.kind in TRADES:
            trades.append((*common, a.kind.value, a.symbol, a.quantity, a.price, a.fees, *dates))
        elif a.kind in INCOME:
            income.append((*common, a.kind.value, a.symbol, *dates))
        else:
            to_account = account_ids[a.to_account] if a.to_account else None
            transfers.append((*common, a.kind.value, to_account, a.symbol, *dates))
    tail = "amount, currency, trade_date, settlement_date, description"
    if trades:
        await conn.executemany(
            "INSERT INTO trades (import_id, account_id, row, side, symbol, quantity, price, "
            f"fees, {tail}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
            trades,
        )
    if income:
        await conn.executemany(
            f"INSERT INTO income (import_id, account_id, row, kind, symbol, {tail}) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            income,
        )
    if transfers:
        await conn.executemany(
            "INSERT INTO transfers (import_id, account_id, row, kind, to_account_id, symbol, "
            f"{tail}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            transfers,
        )
    return str(import_id)


async def _ensure_accounts(
    conn: asyncpg.Connection, activities: Sequence[Activity]
) -> dict[str, Any]:
    """The id of every account the activities name, making those the user lacks with the
    kind and currency their first row gives (an account that exists keeps its own)."""
    first: dict[str, tuple[AccountKind, str]] = {}
    for a in activities:
        first.setdefault(a.account, (a.account_kind, a.currency))
        if a.to_account is not None:
            kind = a.to_account_kind or AccountKind.BROKERAGE
            first.setdefault(a.to_account, (kind, a.currency))
    names = list(first)
    await conn.execute(
        "INSERT INTO accounts (name, kind, currency) "
        "SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) "
        "ON CONFLICT (user_id, name) DO NOTHING",
        names,
        [first[name][0].value for name in names],
        [first[name][1] for name in names],
    )
    rows = await conn.fetch(
        "SELECT id, name FROM accounts WHERE user_id = finq_acting_user() AND name = ANY($1)",
        names,
    )
    return {row["name"]: row["id"] for row in rows}


# Every row of the acting user's activity, as Activity's fields, with where it came from
# (its import and that import's file), but for the rows of one import when an undo asks.
_ACTIVITY_SQL = """
SELECT activity.*, i.file_name AS import_file_name FROM (
    SELECT t.row, a.name AS account, a.kind AS account_kind, t.side AS kind, t.trade_date,
           t.settlement_date, t.symbol, t.quantity, t.price, t.fees, t.amount,
           NULL::text AS to_account, NULL::text AS to_account_kind, t.currency,
           t.description, t.import_id
    FROM trades t JOIN accounts a ON a.id = t.account_id
    WHERE t.user_id = finq_acting_user()
    UNION ALL
    SELECT n.row, a.name, a.kind, n.kind, n.trade_date, n.settlement_date, n.symbol,
           NULL, NULL, 0, n.amount, NULL, NULL, n.currency, n.description, n.import_id
    FROM income n JOIN accounts a ON a.id = n.account_id
    WHERE n.user_id = finq_acting_user()
    UNION ALL
    SELECT r.row, a.name, a.kind, r.kind, r.trade_date, r.settlement_date, r.symbol,
           NULL, NULL, 0, r.amount, b.name, b.kind, r.currency, r.description, r.import_id
    FROM transfers r JOIN accounts a ON a.id = r.account_id
         LEFT JOIN accounts b ON b.id = r.to_account_id
    WHERE r.user_id = finq_acting_user()
) activity
JOIN portfolio_imports i ON i.id = activity.import_id
WHERE ($1::text IS NULL OR activity.account = $1 OR activity.to_account = $1)
  AND ($2::date IS NULL OR activity.trade_date <= $2)
  AND ($3::uuid IS NULL OR activity.import_id <> $3)
ORDER BY activity.trade_date, i.imported_at, i.id, activity.row
"""
_NOT_ACTIVITY_FIELDS = ("import_id", "import_file_name")


async def load_activities(
    db: Database, *, account: str | None = None, until: date | None = None
) -> list[Activity]:
    """The acting user's activity (of one account, up to a day, when asked), in the order
    it happened: by trade date, then as imported, then by row. `row` is the row's line in
    the file it was imported from."""
    return await _load_stored(db, account, until)


async def _load_stored(
    db: Database, account: str | None = None, until: date | None = None
) -> list[Activity]:
    return [stored.activity for stored in await _load_stored_rows(db, account, until)]


@dataclass(frozen=True)
class _StoredRow:
    """A stored activity and the file it was imported from."""

    activity: Activity
    file_name: str


async def _load_stored_rows(
    db: Database,
    account: str | None = None,
    until: date | None = None,
    without_import: uuid.UUID | None = None,
) -> list[_StoredRow]:
    rows = await db.fetch(_ACTIVITY_SQL, account, until, without_import)
    stored: list[_StoredRow] = []
    for row in rows:
        values = {k: v for k, v in dict(row).items() if k not in _NOT_ACTIVITY_FIELDS}
        stored.append(_StoredRow(Activity.model_validate(values), row["import_file_name"]))
    return stored


async def list_accounts(db: Database) -> list[Account]:
    """The acting user's accounts, by name."""
    rows = await db.fetch(
        "SELECT id::text AS id, name, kind, currency, created_at FROM accounts "
        "WHERE user_id = finq_acting_user() ORDER BY name"
    )
    return [Account(**dict(row)) for row in rows]


async def load_instruments(db: Database) -> dict[str, Instrument]:
    """finq's reference list of instruments, by symbol (the same for every user)."""
    rows = await db.fetch("SELECT symbol, name, asset_class FROM instruments ORDER BY symbol")
    return {row["symbol"]: Instrument(**dict(row)) for row in rows}


class ImportSummary(BaseModel):
    """One file the user imported, as GET /v1/portfolio/imports lists it."""

    id: str
    file_name: str
    file_kind: Literal["activity_csv"] = Field(
        default="activity_csv",
        description="The format it was read as: finq's activity CSV "
        "(shared/portfolio/csv_format.py), the one kind finq imports",
    )
    accounts: list[str] = Field(description="The accounts its rows name, by name")
    rows: int = Field(description="The rows it stored")
    created_at: datetime = Field(description="When it was imported")
    status: Literal["imported"] = Field(
        default="imported",
        description="Every import listed is held in full: an import is all or nothing, and "
        "an undone one is removed with its rows",
    )


class UndoneImport(BaseModel):
    """DELETE /v1/portfolio/imports/{id}: what undoing the import removed."""

    import_id: str
    file_name: str
    rows_removed: int = Field(description="Its trades, income and transfers")
    accounts_removed: list[str] = Field(
        description="Accounts that only its rows named, removed with them"
    )


class ImportNotFound(LookupError):
    """No import of that id among the acting user's own."""


class UndoRefused(Exception):
    """Undoing the import would leave the remaining rows inconsistent (see the module)."""

    code = "undo_would_oversell"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


_IMPORTS_SQL = """
SELECT i.id::text AS id, i.file_name, i.rows, i.imported_at AS created_at,
       ARRAY(
           SELECT a.name FROM accounts a
           WHERE a.id IN (
               SELECT account_id FROM trades WHERE import_id = i.id
               UNION SELECT account_id FROM income WHERE import_id = i.id
               UNION SELECT account_id FROM transfers WHERE import_id = i.id
               UNION SELECT to_account_id FROM transfers WHERE import_id = i.id
           )
           ORDER BY a.name
       ) AS accounts
FROM portfolio_imports i
WHERE i.user_id = finq_acting_user()
ORDER BY i.imported_at DESC, i.id
LIMIT $1 OFFSET $2
"""
_IMPORT_COUNT_SQL = "SELECT count(*) FROM portfolio_imports WHERE user_id = finq_acting_user()"


async def list_imports(db: Database, limit: int, offset: int) -> tuple[list[ImportSummary], int]:
    """The acting user's imports, newest first (`limit` of them from `offset`), and how many
    there are in all."""
    rows = await db.fetch(_IMPORTS_SQL, limit, offset)
    total = (await db.fetch(_IMPORT_COUNT_SQL))[0][0]
    return [ImportSummary(**dict(row)) for row in rows], total


_IMPORT_OF_USER_SQL = """
SELECT file_name FROM portfolio_imports WHERE user_id = finq_acting_user() AND id = $1
FOR UPDATE
"""
# The accounts the import's rows name, before they go: the ones no other row names then go
# with them (an account exists because an import named it).
_IMPORT_ACCOUNTS_SQL = """
SELECT account_id FROM trades WHERE import_id = $1
UNION SELECT account_id FROM income WHERE import_id = $1
UNION SELECT account_id FROM transfers WHERE import_id = $1
UNION SELECT to_account_id FROM transfers WHERE import_id = $1 AND to_account_id IS NOT NULL
"""
_DELETE_IMPORT_ROWS_SQL = [
    f"DELETE FROM {table} WHERE user_id = finq_acting_user() AND import_id = $1"
    for table in ("trades", "income", "transfers")
]
_DELETE_IMPORT_SQL = "DELETE FROM portfolio_imports WHERE user_id = finq_acting_user() AND id = $1"
_DELETE_UNUSED_ACCOUNTS_SQL = """
DELETE FROM accounts a
WHERE a.user_id = finq_acting_user() AND a.id = ANY($1::uuid[])
  AND NOT EXISTS (SELECT 1 FROM trades t WHERE t.account_id = a.id)
  AND NOT EXISTS (SELECT 1 FROM income n WHERE n.account_id = a.id)
  AND NOT EXISTS (
      SELECT 1 FROM transfers r WHERE r.account_id = a.id OR r.to_account_id = a.id
  )
RETURNING a.name
"""


async def undo_import(pool: asyncpg.Pool, user_id: str, import_id: str) -> UndoneImport:
    """Undo one of `user_id`'s imports (see the module): ImportNotFound when they have no
    import of that id, UndoRefused when what remains would not replay."""
    try:
        wanted = uuid.UUID(import_id)
    except ValueError:
        raise ImportNotFound(import_id) from None
    async with acting_as(pool, user_id).acquire() as conn:
        # One at a time with the user's imports: each is checked against what the other left.
        await conn.execute(_IMPORT_LOCK_SQL, user_id)
        file_name = await conn.fetchval(_IMPORT_OF_USER_SQL, wanted)
        if file_name is None:
            raise ImportNotFound(import_id)
        remaining = await _load_stored_rows(conn, without_import=wanted)
        # Off the event loop, as an import's replay: a long history takes its time.
        found = await asyncio.to_thread(_first_oversold, [row.activity for row in remaining])
        if found is not None:
            place, error = found
            raise UndoRefused(_undo_problem(file_name, remaining[place], error))
        accounts = [row[0] for row in await conn.fetch(_IMPORT_ACCOUNTS_SQL, wanted)]
        removed = 0
        for statement in _DELETE_IMPORT_ROWS_SQL:
            removed += int((await conn.execute(statement, wanted)).split()[-1])
        await conn.execute(_DELETE_IMPORT_SQL, wanted)
        gone = await conn.fetch(_DELETE_UNUSED_ACCOUNTS_SQL, accounts)
    return UndoneImport(
        import_id=str(wanted),
        file_name=file_name,
        rows_removed=removed,
        accounts_removed=sorted(row["name"] for row in gone),
    )


def _undo_problem(file_name: str, sale: _StoredRow, error: OversoldError) -> str:
    sold = sale.activity
    return (
        f"undoing {file_name} would leave a later sale without its shares: row {sold.row} of "
        f"{sale.file_name} sells {_plain(error.asked)} {error.symbol} on {sold.trade_date}, "
        f"but {error.account} would hold only {_plain(error.held)} then; undo {sale.file_name} "
        "first"
    )
