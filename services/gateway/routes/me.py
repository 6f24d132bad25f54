"""The caller's account as a whole: everything finq holds of them, exported, and all of it
deleted with the account itself (shared/account_data.py, which `finq users delete` runs
too)."""

from __future__ import annotations

from fastapi import APIRouter

from services.gateway.dependencies import ApiError, Caller, Deps
from services.gateway.openapi import error_responses
from shared.account_data import AccountDeletion, AccountExport, delete_account, export_account

router = APIRouter()


@router.get(
    "/v1/me/export",
    response_model=AccountExport,
    responses=error_responses(401, 404, 429, 503),
)
async def export_me(deps: Deps, caller: Caller) -> AccountExport:
    """Everything finq holds of the caller, as JSON: the account and its keys (their
    prefixes and dates, never a key or its hash), the conversations with every turn and
    answer, the request logs, the uploads' metadata, and the portfolio (accounts, imports,
    trades, income, transfers)."""
    exported = await export_account(deps.pool, caller)
    if exported is None:
        # The key was checked a moment ago; only a deletion since then leaves no user.
        raise ApiError(404, "user_not_found", "there is no account of yours to export")
    return exported


@router.delete(
    "/v1/me",
    response_model=AccountDeletion,
    responses=error_responses(401, 429, 503),
)
async def delete_me(deps: Deps, caller: Caller) -> AccountDeletion:
    """Delete the caller's account: every row finq holds of them (conversations,
    questions, answers, request logs, uploads with all that was read from them, the
    portfolio) and the user with their API key, which is refused from the next request
    on. Says how many rows went from each table. Not undone."""
    return await delete_account(deps.pool, caller)
