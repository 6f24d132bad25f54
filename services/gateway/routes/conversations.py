"""The caller's conversations: listed newest first, read turn by turn, and deleted."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from services.gateway.conversations import list_conversations, read_conversation
from services.gateway.dependencies import ApiError, Caller, Deps, PathId
from services.gateway.http_models import ConversationDetail, ConversationList
from services.gateway.openapi import error_responses
from shared.account_data import delete_conversation
from shared.db import acting_as

router = APIRouter()


@router.get(
    "/v1/conversations",
    response_model=ConversationList,
    responses=error_responses(401, 422, 429, 503),
)
async def conversations(
    deps: Deps,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> ConversationList:
    listed = await list_conversations(acting_as(deps.pool, caller), caller, limit, offset)
    return ConversationList(conversations=listed, limit=limit, offset=offset)


@router.get(
    "/v1/conversations/{conversation_id}",
    response_model=ConversationDetail,
    responses=error_responses(401, 404, 422, 429, 503),
)
async def conversation(conversation_id: PathId, deps: Deps, caller: Caller) -> ConversationDetail:
    found = await read_conversation(acting_as(deps.pool, caller), conversation_id, caller)
    if found is None:
        raise ApiError(
            404, "conversation_not_found", f"no conversation {conversation_id!r} of yours"
        )
    return found


@router.delete(
    "/v1/conversations/{conversation_id}",
    status_code=204,
    response_class=Response,
    responses=error_responses(401, 404, 422, 429, 503),
)
async def forget_conversation(conversation_id: PathId, deps: Deps, caller: Caller) -> Response:
    """Delete one of the caller's conversations: its turns, its questions with their
    answers, and their request logs (GET /v1/requests/{id} no longer finds them). Another
    user's conversation is not found (404)."""
    if not await delete_conversation(deps.pool, caller, conversation_id):
        raise ApiError(
            404, "conversation_not_found", f"no conversation {conversation_id!r} of yours"
        )
    return Response(status_code=204)
