"""The demo user `finq up` makes, with its history imported, and the key it keeps for
`finq ask --demo` (FINQ_HOME/demo.key). `finq portfolio demo` and the evaluations' own
pipelines make it too."""

from __future__ import annotations

import asyncio
from pathlib import Path

from services.control.commands.named_users import UnknownUser, owner_pool, user_id_of

# Where `finq up` keeps the demo user's API key, in its home folder (mode 0600).
DEMO_KEY_FILE = "demo.key"


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
    pool = await owner_pool(dsn)
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
