"""Which failures mean "a dependency is not reachable just now" rather than "this work is
wrong": the database or the broker restarting, connections killed under a pool, a query
cancelled by its timeout. Such work is tried again, patiently, with backoff; anything else
fails fast (shared/bus.py), and at the gateway it is a 503 with Retry-After
(services/gateway/failures.py) instead of a 500."""

from __future__ import annotations

import asyncpg
import nats.errors
import nats.js.errors


class TransientError(Exception):
    """A failure a stage knows is worth retrying later (a dependency hiccup, a timeout)."""


TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    TransientError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    asyncpg.CannotConnectNowError,
    asyncpg.TooManyConnectionsError,
    asyncpg.AdminShutdownError,
    asyncpg.QueryCanceledError,  # statement_timeout or lock_timeout: an overloaded database
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.NoServersError,
    nats.errors.NoRespondersError,
    nats.errors.TimeoutError,
    nats.js.errors.ServiceUnavailableError,
    nats.js.errors.NoStreamResponseError,
    ConnectionError,
    TimeoutError,
    OSError,
)


# JetStream's answer to a publish into a full stream (max_bytes or max_msgs with the "new"
# discard policy): the stream drains as consumers ack, so later the publish goes through.
STREAM_FULL_CODES = frozenset({10077, 10078, 10047})


# Interface errors that say the request is wrong, not that the connection is gone.
_NOT_OUTAGES: tuple[type[BaseException], ...] = (
    asyncpg.exceptions._base.DataError,
    asyncpg.exceptions._base.ClientConfigurationError,
    asyncpg.exceptions._base.UnsupportedClientFeatureError,
    asyncpg.exceptions._base.UnsupportedServerFeatureError,
    asyncpg.DataError,
)


def is_transient(error: BaseException) -> bool:
    """Whether `error` says a dependency is unreachable now (retry later), not that the
    work itself is wrong. An exception group is transient when all it holds is."""
    if isinstance(error, BaseExceptionGroup):
        return all(is_transient(inner) for inner in error.exceptions)
    if isinstance(error, _NOT_OUTAGES):
        return False
    if isinstance(error, nats.js.errors.APIError) and (
        error.code == 503 or error.err_code in STREAM_FULL_CODES
    ):
        return True
    cause = error.__cause__
    return isinstance(error, TRANSIENT_ERRORS) or (
        cause is not None and isinstance(cause, TRANSIENT_ERRORS)
    )
