"""The activity CSV: how a user brings their trades, income and cash movements to finq.

Format
------
UTF-8 (a byte-order mark is fine), comma separated, a header row first, then one activity a
row. Empty lines are skipped. At most 50,000 rows, and 1,000 characters in any field.

Columns, in any order. Header names are matched without regard to case or spacing, and the
names brokers use (in brackets) are read as the same column; any other column is an error.
A column with an empty header name (a trailing comma) is allowed if its cells are empty.

    date             required. Trade date: YYYY-MM-DD, or MM/DD/YYYY.  [Trade Date, Run Date]
    account          required. The account's name, e.g. Brokerage.     [Account Name]
    account_type     brokerage (the default), ira, roth_ira (Roth IRA), 401k (401(k)),
                     cash_management. Said once for an account is enough.
    action           required. buy, sell, dividend, interest, deposit, withdrawal, transfer,
                     fee.  [Transaction Type, Type, Activity]. Broker words are read too:
                     Bought, YOU BOUGHT …, Sold, YOU SOLD …, Qualified Dividend, Cash Dividend,
                     Contribution, Electronic Funds Transfer Received, Distribution, Commission.
    symbol           The instrument, e.g. AAPL; it must be one finq holds.  [Ticker]
    quantity         Shares, more than 0.                                [Shares, Qty]
    price            Per share, in dollars.                              [Price ($)]
    fees             Commission and fees of a trade; 0 if empty.  [Commission, Fees ($), …]
    amount           The cash the row moves.                    [Amount ($), Net Amount]
    settlement_date  When the cash moves.                                [Settle Date]
    to_account       A transfer's receiving account.
    to_account_type  Its type, as account_type.
    currency         USD, the only one for now.
    description      Free text, up to 500 characters.

Numbers may carry "$" and thousands commas; a negative is -5 or (5). Brokers disagree on the
sign of amount, so finq sets it from the action: a buy, withdrawal, fee or transfer takes
cash out, the others bring it in.

By action:
    buy, sell      symbol, quantity and price are required. amount may be left empty and is
                   then quantity × price plus fees (buy) or minus fees (sell); if given it
                   must agree with that within a cent. settlement_date defaults to the next
                   weekday (holidays are not known: give it when it matters).
    dividend       symbol and amount.
    interest       amount, more than 0 (interest charged is a fee); symbol if from a holding.
    deposit, withdrawal, fee
                   amount.
    transfer       to_account (another account of the user's) and amount: cash moves from
                   account to to_account.
Other rows settle on their trade date unless settlement_date says otherwise; it can never be
before the trade date. fees, to_account and to_account_type belong to the actions above only.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from shared.portfolio.activity import TRADES, AccountKind, Activity, ActivityKind, AssetClass

MAX_DATA_ROWS = 50_000
MAX_FIELD_CHARS = 1_000
# Broker-computed amounts are rounded to the cent while quantity × price need not be.
AMOUNT_TOLERANCE = Decimal("0.01")
EARLIEST_YEAR = 1900
LATEST_YEAR = 2100
CURRENCY = "USD"

COLUMNS: tuple[str, ...] = (
    "date",
    "account",
    "account_type",
    "action",
    "symbol",
    "quantity",
    "price",
    "fees",
    "amount",
    "settlement_date",
    "to_account",
    "to_account_type",
    "currency",
    "description",
)
REQUIRED_COLUMNS: tuple[str, ...] = ("date", "account", "action")

# Header names as brokers write them, lower-cased with spaces collapsed, onto finq's columns.
HEADER_ALIASES: dict[str, str] = {
    **{column: column for column in COLUMNS},
    **{column.replace("_", " "): column for column in COLUMNS},
    "trade date": "date",
    "run date": "date",
    "account name": "account",
    "transaction type": "action",
    "type": "action",
    "activity": "action",
    "ticker": "symbol",
    "shares": "quantity",
    "qty": "quantity",
    "price ($)": "price",
    "commission": "fees",
    "fees ($)": "fees",
    "commission ($)": "fees",
    "amount ($)": "amount",
    "net amount": "amount",
    "settle date": "settlement_date",
}

ACTION_WORDS: dict[str, ActivityKind] = {
    **{kind.value: kind for kind in ActivityKind},
    "bought": ActivityKind.BUY,
    "you bought": ActivityKind.BUY,
    "sold": ActivityKind.SELL,
    "you sold": ActivityKind.SELL,
    "qualified dividend": ActivityKind.DIVIDEND,
    "cash dividend": ActivityKind.DIVIDEND,
    "contribution": ActivityKind.DEPOSIT,
    "electronic funds transfer received": ActivityKind.DEPOSIT,
    "distribution": ActivityKind.WITHDRAWAL,
    "commission": ActivityKind.FEE,
}
# Fidelity writes the security after the verb: "YOU BOUGHT APPLE INC (AAPL) (Cash)".
ACTION_PREFIXES: dict[str, ActivityKind] = {
    "you bought ": ActivityKind.BUY,
    "you sold ": ActivityKind.SELL,
}

ACCOUNT_TYPE_WORDS: dict[str, AccountKind] = {
    **{kind.value: kind for kind in AccountKind},
    "roth ira": AccountKind.ROTH_IRA,
    "401(k)": AccountKind.K401,
    "cash management": AccountKind.CASH_MANAGEMENT,
}

# Where the cash of an action goes: -1 out of the account, +1 into it.
CASH_DIRECTION: dict[ActivityKind, int] = {
    ActivityKind.BUY: -1,
    ActivityKind.SELL: 1,
    ActivityKind.DIVIDEND: 1,
    ActivityKind.INTEREST: 1,
    ActivityKind.DEPOSIT: 1,
    ActivityKind.WITHDRAWAL: -1,
    ActivityKind.TRANSFER: -1,
    ActivityKind.FEE: -1,
}
SYMBOL_REQUIRED = frozenset({ActivityKind.BUY, ActivityKind.SELL, ActivityKind.DIVIDEND})

# Activity's field names where they differ from the CSV's column names.
_COLUMN_OF_FIELD: dict[str, str] = {
    "kind": "action",
    "trade_date": "date",
    "account_kind": "account_type",
    "to_account_kind": "to_account_type",
}
_NUMBER = re.compile(
    r"(?P<sign>[-+])?\s*\$?\s*(?P<sign_after_dollar>[-+])?\s*"
    r"(?P<digits>[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]*)?|[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
)
_ISO_DAY = re.compile(r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})")
_US_DAY = re.compile(r"(?P<month>[0-9]{1,2})/(?P<day>[0-9]{1,2})/(?P<year>[0-9]{4})")
_CURRENCY_CODE = re.compile(r"[A-Z]{3}")
# Longest user text quoted back in a message, so that an error stays one readable line.
_QUOTE_CHARS = 40


@dataclass(frozen=True)
class RowError:
    row: int  # the line in the file, the header being line 1
    field: str | None  # the column as finq names it ("quantity"), None for the whole row
    message: str


@dataclass(frozen=True)
class ParsedActivity:
    activities: tuple[Activity, ...]
    errors: tuple[RowError, ...]
    sha256: str  # of the raw bytes: the same file imported twice has the same one


class _BadField(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class _Draft:
    """A row that passed its own checks, waiting for its accounts' types to be known."""

    row: int
    values: dict[str, Any]
    account_kind: AccountKind | None
    to_account_kind: AccountKind | None


@dataclass
class _AccountKinds:
    """Each account's type as first said in the file; a row that says another is an error."""

    kinds: dict[str, tuple[AccountKind, int]] = field(default_factory=dict)

    def note(
        self, account: str, kind: AccountKind | None, row: int, column: str
    ) -> RowError | None:
        if kind is None:
            return None
        said = self.kinds.setdefault(account, (kind, row))
        if said[0] == kind:
            return None
        return RowError(
            row,
            column,
            f"account {_quote(account)} is {kind.value} here but {said[0].value} on row {said[1]}",
        )

    def of(self, account: str) -> AccountKind:
        said = self.kinds.get(account)
        return said[0] if said else AccountKind.BROKERAGE


def parse_activity_csv(
    data: bytes, known_symbols: Mapping[str, AssetClass] | Collection[str]
) -> ParsedActivity:
    """Every valid row as an Activity, and every invalid one as errors naming line and column."""
    sha256 = hashlib.sha256(data).hexdigest()

    def failed(message: str) -> ParsedActivity:
        return ParsedActivity((), (RowError(1, None, message),), sha256)

    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        # The codec reports offsets past the byte-order mark, if there is one.
        offset = error.start + len(data) - len(error.object)
        line = data.count(b"\n", 0, offset) + 1
        return failed(
            f"the file is not UTF-8 text (byte 0x{data[offset]:02x} on line {line}); "
            "save it as CSV UTF-8"
        )
    if "\x00" in text:
        return failed("the file is not CSV text: it holds NUL bytes")
    try:
        records = _records(text)
    except csv.Error as error:
        return failed(f"the file is not readable as CSV: {error}")
    if not records:
        return failed("the file is empty: a header row is required")

    header_row, header = records[0]
    columns, errors = _read_header(header_row, header)
    if errors:
        return ParsedActivity((), tuple(errors), sha256)

    symbols = {symbol.upper() for symbol in known_symbols}
    account_kinds = _AccountKinds()
    drafts: list[_Draft] = []
    for index, (row, cells) in enumerate(records[1:], start=1):
        if index > MAX_DATA_ROWS:
            errors.append(RowError(row, None, f"more than {MAX_DATA_ROWS:,} rows: split the file"))
            break
        row_errors, draft = _read_row(row, cells, columns, symbols)
        if draft is not None:
            for account, kind, column in (
                (draft.values["account"], draft.account_kind, "account_type"),
                (draft.values.get("to_account"), draft.to_account_kind, "to_account_type"),
            ):
                if account is not None and (
                    conflict := account_kinds.note(account, kind, row, column)
                ):
                    row_errors.append(conflict)
        if row_errors:
            errors.extend(row_errors)
        elif draft is not None:
            drafts.append(draft)

    activities: list[Activity] = []
    for draft in drafts:
        values = dict(draft.values, account_kind=account_kinds.of(draft.values["account"]))
        if "to_account" in values:
            values["to_account_kind"] = account_kinds.of(values["to_account"])
        try:
            activities.append(Activity(row=draft.row, **values))
        except ValidationError as error:
            # The row checks above should have caught it; report rather than crash if not.
            for problem in error.errors():
                name = str(problem["loc"][0]) if problem["loc"] else None
                errors.append(
                    RowError(draft.row, _COLUMN_OF_FIELD.get(name or "", name), problem["msg"])
                )
    return ParsedActivity(
        tuple(activities), tuple(sorted(errors, key=lambda error: error.row)), sha256
    )


def _records(text: str) -> list[tuple[int, list[str]]]:
    """Non-empty records with the line each starts on (a quoted field may span lines): the
    header, the most rows allowed and one more, so that a longer file is known as such."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    records: list[tuple[int, list[str]]] = []
    next_line = 1
    for cells in reader:
        if any(cell.strip() for cell in cells):
            records.append((next_line, cells))
            if len(records) > MAX_DATA_ROWS + 1:
                break
        next_line = reader.line_num + 1
    return records


def _read_header(row: int, header: list[str]) -> tuple[list[str | None], list[RowError]]:
    """The finq column of each header cell (None: an unnamed column, ignored)."""
    columns: list[str | None] = []
    errors: list[RowError] = []
    first_cell_of: dict[str, str] = {}
    for cell in header:
        written = " ".join(cell.split())
        if not written:
            columns.append(None)
            continue
        column = HEADER_ALIASES.get(written.lower())
        if column is None:
            errors.append(
                RowError(
                    row,
                    written[:_QUOTE_CHARS],
                    f"unknown column {_quote(written)}: the columns are {', '.join(COLUMNS)}",
                )
            )
        elif column in first_cell_of:
            errors.append(
                RowError(
                    row,
                    column,
                    f"columns {_quote(first_cell_of[column])} and {_quote(written)} "
                    f"are both {column}",
                )
            )
        else:
            first_cell_of[column] = written
        columns.append(column)
    errors.extend(
        RowError(row, column, f"missing required column {column!r}")
        for column in REQUIRED_COLUMNS
        if column not in first_cell_of
    )
    return columns, errors


def _read_row(
    row: int, cells: list[str], columns: list[str | None], symbols: Collection[str]
) -> tuple[list[RowError], _Draft | None]:
    """The row's errors, and its values when it has none."""
    errors: list[RowError] = []
    if len(cells) > len(columns):
        # Usually a comma inside an unquoted description, which shifts every column after it.
        return [RowError(row, None, f"{len(cells)} fields but the header has {len(columns)}")], None
    raw: dict[str, str] = {}
    for column, cell in zip(columns, cells, strict=False):
        if column is None:
            if cell.strip():
                errors.append(RowError(row, None, "a value in a column with no header name"))
            continue
        if len(cell) > MAX_FIELD_CHARS:
            errors.append(RowError(row, column, f"longer than {MAX_FIELD_CHARS:,} characters"))
            continue
        raw[column] = " ".join(cell.split())

    def read(column: str, reader: Any) -> Any:
        text = raw.get(column, "")
        if not text:
            return None
        try:
            return reader(text)
        except _BadField as bad:
            errors.append(RowError(row, column, bad.message))
            return None

    def need(column: str, value: Any, why: str) -> Any:
        if value is None and not any(error.field == column for error in errors):
            errors.append(RowError(row, column, f"{column} is required {why}".strip()))
        return value

    trade_date = need("date", read("date", _day), "")
    account = need("account", read("account", _account_name), "")
    kind: ActivityKind | None = need("action", read("action", _action), "")
    account_kind = read("account_type", _account_kind)
    symbol = read("symbol", lambda text: _symbol(text, symbols))
    quantity = read("quantity", _number)
    price = read("price", _number)
    fees = read("fees", _number)
    amount = read("amount", _number)
    settlement_date = read("settlement_date", _day)
    to_account = read("to_account", _account_name)
    to_account_kind = read("to_account_type", _account_kind)
    currency = read("currency", _currency) or CURRENCY
    description = read("description", _description) or ""
    if kind is None:
        return errors, None

    values: dict[str, Any] = {
        "account": account,
        "kind": kind,
        "trade_date": trade_date,
        "symbol": symbol,
        "currency": currency,
        "description": description,
    }
    what = f"for a {kind.value}"
    if kind in SYMBOL_REQUIRED:
        need("symbol", symbol, what)
    direction = CASH_DIRECTION[kind]
    if kind in TRADES:
        need("quantity", quantity, what)
        need("price", price, what)
        if quantity is not None and quantity <= 0:
            errors.append(
                RowError(row, "quantity", f"quantity must be more than 0, not {quantity}")
            )
            quantity = None
        if price is not None and price < 0:
            errors.append(RowError(row, "price", f"price cannot be negative ({price})"))
            price = None
        if fees is not None and fees < 0:
            errors.append(RowError(row, "fees", f"fees cannot be negative ({fees})"))
        fees = fees or Decimal(0)
        values.update(quantity=quantity, price=price, fees=fees)
        if quantity is not None and price is not None and fees >= 0:
            cash = direction * quantity * price - fees
            if amount is None:
                amount = cash
            elif abs(abs(amount) - abs(cash)) > AMOUNT_TOLERANCE:
                sign = "+" if kind == ActivityKind.BUY else "-"
                errors.append(
                    RowError(
                        row,
                        "amount",
                        f"amount {abs(amount)} does not match quantity × price {sign} fees"
                        f" = {abs(cash)}",
                    )
                )
            else:
                amount = abs(amount) if cash >= 0 else -abs(amount)
    else:
        if fees:
            errors.append(
                RowError(row, "fees", "fees belong to a buy or sell: give a fee its own row")
            )
        if need("amount", amount, what) is not None:
            if amount == 0:
                errors.append(RowError(row, "amount", f"amount cannot be 0 {what}"))
            elif kind == ActivityKind.INTEREST and amount < 0:
                errors.append(
                    RowError(row, "amount", "interest must be more than 0: a charge is a fee")
                )
            else:
                amount = direction * abs(amount)
    values["amount"] = amount

    if kind == ActivityKind.TRANSFER:
        if need("to_account", to_account, what) is not None and to_account == account:
            errors.append(
                RowError(row, "to_account", "a transfer goes to another account than its own")
            )
        values["to_account"] = to_account
    else:
        for column, value in (("to_account", to_account), ("to_account_type", to_account_kind)):
            if value is not None:
                errors.append(RowError(row, column, f"{column} belongs to a transfer only"))

    if trade_date is not None:
        if settlement_date is None and not any(e.field == "settlement_date" for e in errors):
            settlement_date = _next_weekday(trade_date) if kind in TRADES else trade_date
        if settlement_date is not None and settlement_date < trade_date:
            errors.append(
                RowError(
                    row,
                    "settlement_date",
                    f"settlement_date {settlement_date} is before the trade date {trade_date}",
                )
            )
    values["settlement_date"] = settlement_date
    if errors:
        return errors, None
    return errors, _Draft(row, values, account_kind, to_account_kind)


def _quote(text: str) -> str:
    return repr(text if len(text) <= _QUOTE_CHARS else text[: _QUOTE_CHARS - 1] + "…")


def _number(text: str) -> Decimal:
    """A plain decimal, with "$", thousands commas, and a negative as -5 or (5)."""
    inner = text
    negative = False
    if inner.startswith("(") and inner.endswith(")"):
        negative = True
        inner = inner[1:-1].strip()
    match = _NUMBER.fullmatch(inner)
    signs = [match[name] for name in ("sign", "sign_after_dollar") if match and match[name]]
    if match is None or len(signs) > 1 or (negative and signs):
        raise _BadField(f"{_quote(text)} is not a number")
    value = Decimal(match["digits"].replace(",", ""))
    return -value if negative or signs == ["-"] else value


def _day(text: str) -> date:
    match = _ISO_DAY.fullmatch(text) or _US_DAY.fullmatch(text)
    if match is None:
        raise _BadField(f"{_quote(text)} is not a date: write YYYY-MM-DD or MM/DD/YYYY")
    try:
        day = date(int(match["year"]), int(match["month"]), int(match["day"]))
    except ValueError:
        raise _BadField(f"{_quote(text)} is not a day of the calendar") from None
    if not EARLIEST_YEAR <= day.year <= LATEST_YEAR:
        raise _BadField(f"{day} is outside the years {EARLIEST_YEAR}–{LATEST_YEAR}")
    return day


def _account_name(text: str) -> str:
    if len(text) > 100:
        raise _BadField("an account name is at most 100 characters")
    return text


def _action(text: str) -> ActivityKind:
    words = text.lower()
    kind = ACTION_WORDS.get(words)
    if kind is None:
        kind = next((k for p, k in ACTION_PREFIXES.items() if words.startswith(p)), None)
    if kind is None:
        raise _BadField(
            f"unknown action {_quote(text)}: the actions are "
            + ", ".join(kind.value for kind in ActivityKind)
        )
    return kind


def _account_kind(text: str) -> AccountKind:
    kind = ACCOUNT_TYPE_WORDS.get(text.lower())
    if kind is None:
        raise _BadField(
            f"unknown account type {_quote(text)}: the types are "
            + ", ".join(kind.value for kind in AccountKind)
        )
    return kind


def _symbol(text: str, symbols: Collection[str]) -> str:
    symbol = text.upper()
    if symbol not in symbols:
        raise _BadField(f"unknown symbol {_quote(symbol)}: finq holds no instrument of that name")
    return symbol


def _currency(text: str) -> str:
    code = text.upper()
    if not _CURRENCY_CODE.fullmatch(code):
        raise _BadField(f"{_quote(text)} is not a currency code")
    if code != CURRENCY:
        raise _BadField(f"finq keeps portfolios in {CURRENCY} only, not {code}")
    return code


def _description(text: str) -> str:
    if len(text) > 500:
        raise _BadField("a description is at most 500 characters")
    return text


def _next_weekday(day: date) -> date:
    following = day + timedelta(days=1)
    while following.weekday() >= 5:  # Saturday, Sunday
        following += timedelta(days=1)
    return following
