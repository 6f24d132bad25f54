"""GET /v1/admin/... and the dead letters' replay: how finq does for every user, for
operators only (everyone else gets 403)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Annotated

import asyncpg
from fastapi import APIRouter, Path, Query

from services.gateway.admin import (
    DeadLetters,
    MetricMisses,
    NotAnOperator,
    NotReplayable,
    OperatorQuestions,
    QuestionKind,
    ReplayedQuestion,
    dead_letters,
    metric_misses,
    operator_questions,
    replay_question,
)
from services.gateway.dependencies import ApiError, Caller, Deps
from services.gateway.openapi import error_responses
from shared.db import acting_as

router = APIRouter()


@contextlib.contextmanager
def operator_only() -> Iterator[None]:
    """A caller who is not an operator gets 403, whichever admin read refused them."""
    try:
        yield
    except (NotAnOperator, asyncpg.InsufficientPrivilegeError):
        raise ApiError(
            403, "forbidden", "this is for finq's operators (finq users add NAME --operator)"
        ) from None


@router.get(
    "/v1/admin/questions",
    response_model=OperatorQuestions,
    responses=error_responses(401, 403, 422, 429, 503),
)
async def admin_questions(
    deps: Deps,
    caller: Caller,
    kind: QuestionKind,
    days: Annotated[int, Query(ge=1, le=366)] = 7,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> OperatorQuestions:
    """Operators only: every user's questions of one kind over the last `days`:
    `failed` (validation did not pass), `unanswerable` (out of scope, or no data for
    what was asked), `slowest` (by the time from receipt to answer)."""
    with operator_only():
        return await operator_questions(acting_as(deps.pool, caller), kind, days, limit)


@router.get(
    "/v1/admin/metric-misses",
    response_model=MetricMisses,
    responses=error_responses(401, 403, 422, 429, 503),
)
async def admin_metric_misses(
    deps: Deps, caller: Caller, limit: Annotated[int, Query(ge=1, le=500)] = 50
) -> MetricMisses:
    """Operators only: the metric phrases the catalog did not know, most asked first."""
    with operator_only():
        return await metric_misses(acting_as(deps.pool, caller), limit)


@router.get(
    "/v1/admin/dead-letters",
    response_model=DeadLetters,
    responses=error_responses(401, 403, 422, 429, 503),
)
async def admin_dead_letters(
    deps: Deps, caller: Caller, limit: Annotated[int, Query(ge=1, le=500)] = 100
) -> DeadLetters:
    """Operators only: the dead letters, newest first (as `finq dead list`)."""
    with operator_only():
        return await dead_letters(acting_as(deps.pool, caller), deps.nc.jetstream(), limit)


@router.post(
    "/v1/admin/dead-letters/{seq}/replay",
    status_code=202,
    response_model=ReplayedQuestion,
    responses=error_responses(401, 403, 404, 409, 422, 429, 503),
)
async def admin_replay(
    seq: Annotated[int, Path(ge=1, le=2**63 - 1)], deps: Deps, caller: Caller
) -> ReplayedQuestion:
    """Operators only: ask a dead letter's question again (from the start of the
    pipeline, as its user, with a fresh deadline), then remove the dead letter. The
    answer appears in the user's conversation."""
    with operator_only():
        try:
            return await replay_question(
                acting_as(deps.pool, caller),
                deps.pool,
                deps.nc.jetstream(),
                deps.publisher,
                seq,
                deps.settings.gateway_deadline_seconds,
                deps.settings.gateway_history_turns,
            )
        except LookupError as error:
            raise ApiError(404, "dead_letter_not_found", str(error)) from None
        except NotReplayable as refusal:
            raise ApiError(409, refusal.code, refusal.message) from None
