"""`finq portfolio import --user NAME FILE.csv`, `finq portfolio show --user NAME` and
`finq portfolio demo`: a user's own accounts and activity.

The commands connect as the database's owner (the operator's DSN) and act for the user
they name (`shared.db.acting_as`): every row is written as that user's and every read
shows that user's only.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Coroutine
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.control.commands import Subparsers
from services.control.commands.demo_user import prepare_demo
from services.control.commands.named_users import UnknownUser, owner_pool, user_id_of
from services.control.settings import ControlSettings

if TYPE_CHECKING:
    from shared.portfolio.store import ImportOutcome

# Exit codes: a file or user refused, as `finq users` does.
REFUSED = 2


def register(subparsers: Subparsers) -> None:
    portfolio = subparsers.add_parser("portfolio", help="a user's own accounts and activity")
    actions = portfolio.add_subparsers(dest="portfolio_command", required=True)
    imported = actions.add_parser(
        "import",
        help="import a CSV file of activity for a user, all or nothing",
        description="Import a CSV file of trades, income and transfers (the columns: "
        "shared/portfolio/csv_format.py) into the user's accounts. A file with any row that "
        "cannot be imported stores nothing and each such row is printed; the same file "
        "imported again stores nothing.",
    )
    imported.add_argument("file", metavar="FILE.csv")
    imported.set_defaults(handler=command_portfolio_import)
    show = actions.add_parser("show", help="a user's accounts, with positions and cash")
    show.set_defaults(handler=command_portfolio_show)
    for action in (imported, show):
        action.add_argument("--user", required=True, metavar="NAME", help="the user's name")
    actions.add_parser(
        "demo", help="make the demo user (key in FINQ_HOME/demo.key) and its history"
    ).set_defaults(handler=command_portfolio_demo)


def command_portfolio_import(args: argparse.Namespace, settings: ControlSettings) -> int:
    return refusing(import_file(args.file, args.user, settings.operator_dsn))


def command_portfolio_show(args: argparse.Namespace, settings: ControlSettings) -> int:
    return refusing(show_accounts(args.user, settings.operator_dsn))


def command_portfolio_demo(_: argparse.Namespace, settings: ControlSettings) -> int:
    return refusing(make_demo(settings))


def refusing(command: Coroutine[Any, Any, int]) -> int:
    """Run a portfolio command; a user or demo it cannot find is exit 2, said on stderr."""
    from shared.portfolio.demo import DemoUnavailable

    try:
        return asyncio.run(command)
    except (UnknownUser, DemoUnavailable) as error:
        print(f"finq portfolio: {error}", file=sys.stderr)
        return REFUSED


async def import_file(file: str, user: str, dsn: str) -> int:
    """Import the CSV file `file` into `user`'s accounts, all or nothing, and say what it did;
    the exit code."""
    from shared.portfolio.store import import_activity

    path = Path(file)
    try:
        data = await asyncio.to_thread(path.read_bytes)
    except OSError as error:
        print(f"finq portfolio import: cannot read {path}: {error.strerror}", file=sys.stderr)
        return REFUSED
    pool = await owner_pool(dsn)
    try:
        user_id = await user_id_of(pool, user)
        outcome = await import_activity(pool, user_id, path.name, data)
    finally:
        await pool.close()
    return report_import(outcome, user)


def report_import(outcome: ImportOutcome, user: str) -> int:
    """Print what an import did; the exit code (2 when rows were refused)."""
    if outcome.duplicate_of is not None:
        earlier = outcome.duplicate_of
        print(
            f"{outcome.file_name}: already imported on {earlier.imported_at:%Y-%m-%d} "
            f"(import {earlier.import_id}, {earlier.rows} rows); nothing imported"
        )
        return 0
    if outcome.errors:
        for error in outcome.errors:
            where = f"row {error.row}" + (f", field {error.field}" if error.field else "")
            print(f"{where}: {error.message}", file=sys.stderr)
        rows = len({error.row for error in outcome.errors})
        print(
            f"{outcome.file_name}: {rows} row{'s' if rows > 1 else ''} cannot be imported; "
            "nothing was imported",
            file=sys.stderr,
        )
        return REFUSED
    created = f" ({len(outcome.accounts_created)} new)" if outcome.accounts_created else ""
    print(
        f"imported {outcome.rows} rows of {outcome.file_name} for {user} into "
        f"{len(outcome.accounts)} account{'s' if len(outcome.accounts) > 1 else ''}{created}: "
        f"{', '.join(outcome.accounts)} (import {outcome.import_id})"
    )
    return 0


LATEST_CLOSES_SQL = """
SELECT DISTINCT ON (symbol) symbol, day, close FROM prices
WHERE symbol = ANY($1::text[]) ORDER BY symbol, day DESC
"""


async def show_accounts(user: str, dsn: str) -> int:
    """Print `user`'s accounts: each position valued at the latest close held, and cash."""
    from shared.db import acting_as
    from shared.portfolio.ledger import Ledger
    from shared.portfolio.store import list_accounts, load_activities

    pool = await owner_pool(dsn)
    try:
        scope = acting_as(pool, await user_id_of(pool, user))
        accounts = await list_accounts(scope)
        activities = await load_activities(scope)
        symbols = sorted({a.symbol for a in activities if a.symbol})
        closes = {row["symbol"]: row for row in await pool.fetch(LATEST_CLOSES_SQL, symbols)}
    finally:
        await pool.close()
    if not accounts:
        print(f"{user} has no accounts yet: finq portfolio import --user {user} FILE")
        return 0
    # Every row, those dated later than today too, with cash settled as of today.
    last = max((a.trade_date for a in activities), default=date.today())
    ledger = Ledger.build(activities, as_of=max(last, date.today()))
    for account in accounts:
        print(f"{account.name} ({account.kind.value}, {account.currency})")
        for holding in ledger.holdings(account=account.name):
            close = closes.get(holding.symbol)
            value = (
                f"worth {_money(holding.quantity * Decimal(repr(close['close'])))} "
                f"at the {close['day']} close"
                if close is not None
                else "no price held"
            )
            print(
                f"  {holding.symbol:<6} {_plain(holding.quantity):>10} shares  "
                f"average cost {_money(holding.average_cost)}  "
                f"cost basis {_money(holding.cost_basis_average)}  {value}"
            )
        for balance in ledger.cash(account=account.name):
            pending = f" ({_money(balance.unsettled)} unsettled)" if balance.unsettled else ""
            print(f"  {'cash':<6} {_money(balance.total)}{pending}")
    return 0


def _money(amount: Decimal) -> str:
    return f"{amount:,.2f}"


def _plain(quantity: Decimal) -> str:
    return f"{quantity.normalize():f}"


async def make_demo(settings: ControlSettings) -> int:
    for line in await prepare_demo(settings.operator_dsn, settings.home.resolve()):
        print(line)
    return 0
