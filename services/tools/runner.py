"""Runs a route's tool calls: only whitelisted tools, only validated arguments."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from services.tools.document_search import DocumentSearch
from services.tools.filings import get_recent_filings
from services.tools.financial_metrics import get_financial_metrics
from services.tools.metric_listing import list_metrics
from services.tools.metric_values import MetricValueCache
from services.tools.portfolio import UserBook, largest_holdings, run_portfolio_tool
from services.tools.prices import get_prices
from services.tools.sql import Fetcher
from shared.contracts import RouteDecided, ToolCall, ToolError, ToolResult, ToolsCompleted
from shared.identity import LOCAL_USER
from shared.intents import tool_allowed
from shared.tool_schemas import (
    GET_FINANCIAL_METRICS,
    GET_PRICES,
    GET_RECENT_FILINGS,
    LIST_METRICS,
    PORTFOLIO_TOOLS,
    SEARCH_DOCUMENTS,
    SEARCH_HOLDINGS_DOCUMENTS,
    TOOL_ARGUMENTS,
    GetFinancialMetricsArgs,
    SearchDocumentsArgs,
    SearchHoldingsDocumentsArgs,
)

ToolFunction = Callable[[Fetcher, Any], Awaitable[ToolResult]]

TOOLS: dict[str, ToolFunction] = {
    GET_FINANCIAL_METRICS: get_financial_metrics,
    GET_PRICES: get_prices,
    GET_RECENT_FILINGS: get_recent_filings,
    LIST_METRICS: list_metrics,
}


def _refusal(call: ToolCall, code: str, message: str) -> ToolResult:
    return ToolResult(
        tool=call.tool, arguments=call.arguments, error=ToolError(code=code, message=message)
    )


async def run_tool_call(
    db: Fetcher,
    intent: str,
    call: ToolCall,
    documents: DocumentSearch | None = None,
    user_id: str = LOCAL_USER,
    user_book: UserBook | None = None,
    metric_values: MetricValueCache | None = None,
) -> ToolResult:
    if not tool_allowed(intent, call.tool):
        return _refusal(
            call,
            "tool_not_allowed",
            f"the tool {call.tool!r} is not allowed for a {intent} question",
        )
    try:
        args: BaseModel = TOOL_ARGUMENTS[call.tool].model_validate(call.arguments)
    except ValidationError as error:
        return _refusal(
            call,
            "invalid_arguments",
            "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()),
        )
    if call.tool == SEARCH_DOCUMENTS and documents is not None:
        return await documents.search(db, args, user_id)
    if call.tool in PORTFOLIO_TOOLS:
        # The user's own rows: read in transactions acting for the envelope's user.
        user_book = user_book or UserBook(db, user_id)  # type: ignore[arg-type]
        if call.tool != SEARCH_HOLDINGS_DOCUMENTS:
            return await run_portfolio_tool(user_book, call.tool, args)
        if documents is not None:
            assert isinstance(args, SearchHoldingsDocumentsArgs)
            return await search_holdings_documents(db, args, documents, user_book)
    if call.tool == GET_FINANCIAL_METRICS and metric_values is not None:
        assert isinstance(args, GetFinancialMetricsArgs)
        return await get_financial_metrics(db, args, metric_values)
    tool = TOOLS.get(call.tool)
    if tool is None:
        return _refusal(
            call,
            "tool_unavailable",
            f"{call.tool} is planned but not available in this version of finq",
        )
    return await tool(db, args)


async def search_holdings_documents(
    db: Fetcher, args: SearchHoldingsDocumentsArgs, documents: DocumentSearch, user_book: UserBook
) -> ToolResult:
    """What the filings of the user's largest holdings say: the holdings from their own rows,
    then one search of each company's filings, the passages gathered in one result."""
    user_id = user_book.user_id
    symbols, facts, sources = await largest_holdings(user_book, args)
    arguments = args.model_dump(mode="json", exclude_none=True)
    result = ToolResult(
        tool=SEARCH_HOLDINGS_DOCUMENTS, arguments=arguments, facts=facts, sources=sources
    )
    if not symbols:
        result.missing.append("you hold no priced positions to look up")
    for symbol in symbols:
        search = SearchDocumentsArgs(
            query=args.query,
            symbols=[symbol],
            forms=args.forms,
            fiscal_year=args.fiscal_year,
            limit=args.limit,
        )
        found = await documents.search(db, search, user_id)
        result.passages.extend(found.passages)
        result.sources.extend(found.sources)
        result.missing.extend(found.missing)
        if found.error is not None and result.error is None:
            result.error = found.error
    return result


async def run_route(
    db: Fetcher,
    route: RouteDecided,
    documents: DocumentSearch | None = None,
    user_id: str = LOCAL_USER,
    metric_values: MetricValueCache | None = None,
) -> ToolsCompleted:
    """The route's tool calls, run for `user_id` (from the envelope the gateway stamped):
    a user's uploads are searched for that user only."""
    user_book = UserBook(db, user_id)  # type: ignore[arg-type]
    results = [
        await run_tool_call(db, route.intent, call, documents, user_id, user_book, metric_values)
        for call in route.tool_calls
    ]
    return ToolsCompleted(route=route, results=results)
