"""`finq portfolio import --user NAME FILE.csv`, `finq portfolio show --user NAME` and
`finq portfolio demo`; the demo user `finq up` makes, and the key `finq ask --demo` sends.

The commands connect as the database's owner (the operator's DSN) and act for the user
they name (`shared.db.acting_as`): every row is written as that user's and every read
shows that user's only.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from services.control.settings import ControlSettings

if TYPE_CHECKING:
    import asyncpg

    from shared.portfolio.store import ImportOutcome

# Where `finq up` keeps the demo user's API key, in its home folder (mode 0600).
DEMO_KEY_FILE = "demo.key"
# Exit codes: a file or user refused, as `finq users` does.
REFUSED = 2


class UnknownUser(LookupError):
    pass


def add_portfolio_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`finq portfolio …`, added to the `finq` command's subcommands."""
    portfolio = commands.add_parser("portfolio", help="a user's own accounts and activity")
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
    show = actions.add_parser("show", help="a user's accounts, with positions and cash")
    for action in (imported, show):
        action.add_argument("--user", required=True, metavar="NAME", help="the user's name")
    actions.add_parser(
        "demo", help="make the demo user (key in FINQ_HOME/demo.key) and its history"
    )
    portfolio.set_defaults(run=command_portfolio)


def add_ask_identity(ask: argparse.ArgumentParser) -> None:
    """`finq ask --key KEY` or `--demo`: ask as a user with a key (the demo user's, which
    `finq up` keeps), instead of as the local user."""
    who = ask.add_mutually_exclusive_group()
    who.add_argument("--key", default=None, help="ask as the user of this API key")
    who.add_argument(
        "--demo", action="store_true", help="ask as the demo user (its key from FINQ_HOME)"
    )


def ask_headers(args: argparse.Namespace, settings: ControlSettings) -> dict[str, str]:
    """The Authorization header `finq ask` sends, if any; SystemExit with a reason when
    --demo finds no key."""
    key: str | None = args.key
    if args.demo:
        path = settings.home.resolve() / DEMO_KEY_FILE
        if not path.exists():
            sys.exit(f"no demo key at {path}: `finq up` (or `finq portfolio demo`) makes it")
        key = path.read_text().strip()
    return {"Authorization": f"Bearer {key}"} if key else {}


def command_portfolio(args: argparse.Namespace, settings: ControlSettings) -> int:
    from shared.portfolio.demo import DemoUnavailable

    commands: dict[str, Callable[[argparse.Namespace, ControlSettings], Awaitable[int]]] = {
        "import": _import,
        "show": _show,
        "demo": _demo,
    }
    try:
        return asyncio.run(commands[args.portfolio_command](args, settings))
    except (UnknownUser, DemoUnavailable) as error:
        print(f"finq portfolio: {error}", file=sys.stderr)
        return REFUSED


async def _owner_pool(dsn: str) -> asyncpg.Pool:
    from shared.db import create_pool

    return await create_pool(dsn, min_size=1, max_size=2)


async def user_id_of(pool: asyncpg.Pool, name: str) -> str:
    """The id of the user named `name` (the owner reads the users table)."""
    user_id = await pool.fetchval("SELECT id FROM users WHERE name = $1", name)
    if user_id is None:
        raise UnknownUser(f"no user named {name!r} (finq users list)")
    return str(user_id)


async def _import(args: argparse.Namespace, settings: ControlSettings) -> int:
    from shared.portfolio.store import import_activity

    path = Path(args.file)
    try:
        data = await asyncio.to_thread(path.read_bytes)
    except OSError as error:
        print(f"finq portfolio import: cannot read {path}: {error.strerror}", file=sys.stderr)
        return REFUSED
    pool = await _owner_pool(settings.operator_dsn)
    try:
        user_id = await user_id_of(pool, args.user)
        outcome = await import_activity(pool, user_id, path.name, data)
    finally:
        await pool.close()
    return report_import(outcome, args.user)


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


async def _show(args: argparse.Namespace, settings: ControlSettings) -> int:
    from shared.db import acting_as
    from shared.portfolio.ledger import Ledger
    from shared.portfolio.store import list_accounts, load_activities

    pool = await _owner_pool(settings.operator_dsn)
    try:
        scope = acting_as(pool, await user_id_of(pool, args.user))
        accounts = await list_accounts(scope)
        activities = await load_activities(scope)
        symbols = sorted({a.symbol for a in activities if a.symbol})
        closes = {row["symbol"]: row for row in await pool.fetch(LATEST_CLOSES_SQL, symbols)}
    finally:
        await pool.close()
    if not accounts:
        print(f"{args.user} has no accounts yet: finq portfolio import --user {args.user} FILE")
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


async def _demo(_: argparse.Namespace, settings: ControlSettings) -> int:
    for line in await prepare_demo(settings.operator_dsn, settings.home.resolve()):
        print(line)
    return 0


def demo_at_start(dsn: str, home: Path) -> str:
    """prepare_demo for `finq up`, which starts with or without it: what happened, or why
    there is no demo."""
    from shared.portfolio.demo import DemoUnavailable

    try:
        return "\n".join(asyncio.run(prepare_demo(dsn, home)))
    except DemoUnavailable as error:
        return f"no demo portfolio: {error}"


async def prepare_demo(dsn: str, home: Path) -> list[str]:
    """Make the demo user if there is none (its key saved to `home`/demo.key, mode 0600) and
    import its history once. What was done, in lines to print."""
    from services.control.servers import write_private
    from shared.identity import add_user
    from shared.portfolio.demo import DEMO_USER, DemoUnavailable, import_demo_history

    lines: list[str] = []
    pool = await _owner_pool(dsn)
    try:
        key_file = home / DEMO_KEY_FILE
        try:
            user_id = await user_id_of(pool, DEMO_USER)
            if not key_file.exists():
                # A key is shown once, when it is made: one made elsewhere is not ours to keep.
                lines.append(f"the demo user was made without finq up: no key in {key_file}")
        except UnknownUser:
            user, key = await add_user(pool, DEMO_USER)
            user_id = user.id
            await asyncio.to_thread(write_private, key_file, key + "\n")
            lines.append(f"made the demo user; its key is in {key_file}")
        outcome = await import_demo_history(pool, user_id)
    finally:
        await pool.close()
    if outcome.duplicate_of is not None:
        lines.append(f"the demo history is held (imported {outcome.duplicate_of.imported_at:%F})")
    elif outcome.errors:
        # The history is made to pass: a failure is finq's own bug, said in full.
        problems = "; ".join(f"row {e.row} {e.field}: {e.message}" for e in outcome.errors)
        raise DemoUnavailable(f"the demo history did not import: {problems}")
    else:
        lines.append(
            f"imported the demo history: {outcome.rows} rows in {', '.join(outcome.accounts)} "
            '(try: finq ask --demo "how is my AAPL position doing?")'
        )
    return lines
