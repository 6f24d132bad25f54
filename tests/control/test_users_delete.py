"""`finq users delete NAME` deletes a user the way DELETE /v1/me does (shared/account_data.py):
every row of theirs and the user with their key. It asks first, and anything but yes deletes
nothing; --yes does not ask; an unknown name is refused. Another user's rows stay."""

from __future__ import annotations

import asyncio
import os
import sys

import asyncpg

from shared.identity import add_user, user_for_key
from tests.helpers import REPO_ROOT


async def finq_users_delete(database: str, *args: str, answer: str = "") -> tuple[int, str, str]:
    """Run `finq users delete ...` against `database`, typing `answer` at its question."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.control.cli",
        "users",
        "delete",
        *args,
        cwd=REPO_ROOT,
        env={**os.environ, "FINQ_DATABASE_URL": database},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate(answer.encode())
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def someone_with_a_conversation(owner: asyncpg.Connection, name: str) -> str:
    """A user holding a conversation with one question; their API key."""
    user, key = await add_user(owner, name)
    await owner.execute(
        "INSERT INTO conversations (id, user_id, title) VALUES ($1, $2, 'q')", f"c-{name}", user.id
    )
    await owner.execute(
        "INSERT INTO questions (request_id, conversation_id, user_id, question, deadline) "
        "VALUES ($1, $2, $3, 'q', now() + interval '1 minute')",
        f"r-{name}",
        f"c-{name}",
        user.id,
    )
    return key


async def conversations_of(owner: asyncpg.Connection, name: str) -> int:
    return int(
        await owner.fetchval("SELECT count(*) FROM conversations WHERE id = $1", f"c-{name}")
    )


async def test_finq_users_delete_asks_first_and_then_deletes_the_user_and_their_rows(
    database: str,
) -> None:
    owner = await asyncpg.connect(database)
    try:
        anna = await someone_with_a_conversation(owner, "anna")
        ben = await someone_with_a_conversation(owner, "ben")

        code, out, err = await finq_users_delete(database, "anna", answer="n\n")
        assert code == 2 and "not deleted" in err, (out, err)
        assert "Delete user anna" in out and "cannot be undone" in out
        assert await conversations_of(owner, "anna") == 1
        assert await user_for_key(owner, anna) is not None

        code, out, err = await finq_users_delete(database, "anna", answer="yes\n")
        assert code == 0, (out, err)
        assert "conversations 1" in out and "questions 1" in out
        assert "user anna deleted, their key with them" in out
        assert await conversations_of(owner, "anna") == 0
        assert await user_for_key(owner, anna) is None
        assert await owner.fetchval("SELECT count(*) FROM users WHERE name = 'anna'") == 0
        # Ben's are untouched.
        assert await conversations_of(owner, "ben") == 1
        assert await user_for_key(owner, ben) is not None
    finally:
        await owner.close()


async def test_finq_users_delete_yes_does_not_ask_and_an_unknown_name_is_refused(
    database: str,
) -> None:
    owner = await asyncpg.connect(database)
    try:
        ben = await someone_with_a_conversation(owner, "ben")
        code, out, err = await finq_users_delete(database, "ben", "--yes")
        assert code == 0 and "[y/N]" not in out, (out, err)
        assert await user_for_key(owner, ben) is None
        assert await conversations_of(owner, "ben") == 0

        code, out, err = await finq_users_delete(database, "nobody", "--yes")
        assert code == 2 and "no user named 'nobody'" in err, (out, err)
    finally:
        await owner.close()
