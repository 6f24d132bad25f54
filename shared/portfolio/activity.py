"""One row of a user's activity, as imported and as stored.

Money and quantities are `Decimal`: a cost basis is a sum of many prices times quantities,
and binary floats would make hand-checked figures differ in their last cent.

Signs: `quantity`, `price` and `fees` are never negative; `amount` is the row's effect on
the account's cash, signed (a buy spends: negative; a sell, a dividend, interest and a
deposit bring cash: positive; a withdrawal, an outgoing transfer and a fee: negative).
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class AccountKind(StrEnum):
    BROKERAGE = "brokerage"
    IRA = "ira"
    ROTH_IRA = "roth_ira"
    K401 = "401k"
    CASH_MANAGEMENT = "cash_management"


class AssetClass(StrEnum):
    EQUITY = "equity"
    ETF = "etf"
    BOND = "bond"
    CASH = "cash"
    CRYPTO = "crypto"
    OTHER = "other"


class ActivityKind(StrEnum):
    BUY = "buy"
    SELL = "sell"
    DIVIDEND = "dividend"
    INTEREST = "interest"
    DEPOSIT = "deposit"
    WITHDRAWAL = "withdrawal"
    # Between two of the user's own accounts: `account` gives, `to_account` takes.
    TRANSFER = "transfer"
    FEE = "fee"


TRADES = frozenset({ActivityKind.BUY, ActivityKind.SELL})
INCOME = frozenset({ActivityKind.DIVIDEND, ActivityKind.INTEREST})
# Money that enters or leaves the user's accounts from outside: not a gain or a loss.
EXTERNAL_FLOWS = frozenset({ActivityKind.DEPOSIT, ActivityKind.WITHDRAWAL})


class Activity(BaseModel):
    """One activity row, validated. `row` is its line in the file it came from (the header
    is line 1), so an error or a citation names it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    row: int = Field(ge=1)
    account: str = Field(min_length=1, max_length=100)
    account_kind: AccountKind = AccountKind.BROKERAGE
    kind: ActivityKind
    trade_date: date
    # When the cash moves: a trade settles a business day later (T+1) unless the file says;
    # everything else on its day.
    settlement_date: date
    symbol: str | None = Field(default=None, max_length=12)
    quantity: Decimal | None = Field(default=None, gt=0)
    price: Decimal | None = Field(default=None, ge=0)
    fees: Decimal = Field(default=Decimal(0), ge=0)
    amount: Decimal
    to_account: str | None = Field(default=None, min_length=1, max_length=100)
    to_account_kind: AccountKind | None = None
    currency: str = Field(default="USD", pattern=r"^[A-Z]{3}$")
    description: str = Field(default="", max_length=500)


class Instrument(BaseModel):
    """What a symbol is: finq's own reference list (the companies it holds, and the funds,
    bonds and coins it knows); a symbol outside it is refused at import."""

    model_config = ConfigDict(frozen=True)

    symbol: str
    name: str
    asset_class: AssetClass
