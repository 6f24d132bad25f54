"""The caller's conversations: listed newest first, and read turn by turn."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from services.gateway.conversations import list_conversations, read_conversation
from services.gateway.dependencies import ApiError, Caller, Deps, PathId
from services.gateway.http_models import ConversationDetail, ConversationList
from services.gateway.openapi import error_responses
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
