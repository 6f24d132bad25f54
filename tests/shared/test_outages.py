"""Which failures are outages (waited out, 503 at the gateway) and which are the work's own
(failed fast, a 500 or a dead letter with the reason)."""

from __future__ import annotations

import asyncpg
import nats.errors
import pytest

from shared.outages import TransientError, is_transient


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.CannotConnectNowError("the database system is starting up"),
        asyncpg.AdminShutdownError("terminating connection due to administrator command"),
        asyncpg.QueryCanceledError("canceling statement due to statement timeout"),
        asyncpg.InterfaceError("connection is closed"),
        ConnectionRefusedError(111, "Connection refused"),
        TimeoutError(),
        nats.errors.NoServersError(),
        TransientError("blip"),
        ExceptionGroup("both", [TimeoutError(), ConnectionResetError()]),
    ],
)
def test_an_unreachable_dependency_is_an_outage(error: BaseException) -> None:
    assert is_transient(error)


@pytest.mark.parametrize(
    "error",
    [
        ValueError("a bug"),
        KeyError("missing"),
        asyncpg.DataError("invalid input for query argument"),
        asyncpg.UniqueViolationError("duplicate key"),
        asyncpg.UndefinedColumnError("column does not exist"),
        ExceptionGroup("mixed", [TimeoutError(), ValueError("a bug")]),
    ],
)
def test_a_failure_of_the_work_is_not_an_outage(error: BaseException) -> None:
    assert not is_transient(error)
