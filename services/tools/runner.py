"""Runs a route's tool calls: only whitelisted tools, only validated arguments."""

from __future__ import annotations

from pydantic import ValidationError

from services.tools.financial_metrics import Fetcher, get_financial_metrics
from shared.contracts import RouteDecided, ToolCall, ToolError, ToolResult, ToolsCompleted
from shared.tool_schemas import GET_FINANCIAL_METRICS, GetFinancialMetricsArgs

# Which tools each intent may call; a plan naming anything else is refused.
ALLOWED_TOOLS: dict[str, frozenset[str]] = {
    "metric_lookup": frozenset({GET_FINANCIAL_METRICS}),
    "clarify": frozenset(),
}


async def run_tool_call(db: Fetcher, intent: str, call: ToolCall) -> ToolResult:
    if call.tool not in ALLOWED_TOOLS.get(intent, frozenset()):
        return ToolResult(
            tool=call.tool,
            arguments=call.arguments,
            error=ToolError(
                code="tool_not_allowed",
                message=f"the tool {call.tool!r} is not allowed for a {intent} question",
            ),
        )
    try:
        args = GetFinancialMetricsArgs.model_validate(call.arguments)
    except ValidationError as error:
        return ToolResult(
            tool=call.tool,
            arguments=call.arguments,
            error=ToolError(
                code="invalid_arguments",
                message="; ".join(
                    f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()
                ),
            ),
        )
    return await get_financial_metrics(db, args)


async def run_route(db: Fetcher, route: RouteDecided) -> ToolsCompleted:
    results = [await run_tool_call(db, route.intent, call) for call in route.tool_calls]
    return ToolsCompleted(route=route, results=results)
