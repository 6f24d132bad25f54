"""Runs a route's tool calls: only whitelisted tools, through the runner each tool's spec
names (`shared.tools`), with the dependencies the spec says it needs."""

from __future__ import annotations

import importlib

from services.tools.document_search import DocumentSearch
from services.tools.metric_values import MetricValueCache
from services.tools.portfolio import UserBook
from services.tools.sql import Fetcher
from services.tools.tool_deps import Runner, ToolDeps
from shared.contracts.answers import ToolsCompleted
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import ToolCall, ToolError, ToolResult
from shared.identity import LOCAL_USER
from shared.tools import TOOL_SPECS, TOOL_SPECS_BY_NAME, tool_allowed


def _import_runner(path: str) -> Runner:
    module, _, name = path.partition(":")
    runner = getattr(importlib.import_module(module), name)
    if not callable(runner):
        raise TypeError(f"{path} is not a tool runner")
    return runner  # type: ignore[no-any-return]


# Every spec's runner, imported with this module: a spec naming a runner that does not
# exist fails at the stage's start, not at the first question that calls it.
RUNNERS: dict[str, Runner] = {spec.name: _import_runner(spec.runner) for spec in TOOL_SPECS}


def _refusal(call: ToolCall, code: str, message: str) -> ToolResult:
    return ToolResult(
        tool=call.tool, arguments=call.arguments, error=ToolError(code=code, message=message)
    )


async def run_tool_call(intent: str, call: ToolCall, deps: ToolDeps) -> ToolResult:
    """One call, when its tool serves the route's intent and this stage has what its runner
    needs. Its arguments were validated when the route was decoded."""
    if not tool_allowed(intent, call.tool):
        return _refusal(
            call,
            "tool_not_allowed",
            f"the tool {call.tool!r} is not allowed for a {intent} question",
        )
    lacking = deps.lacking(TOOL_SPECS_BY_NAME[call.tool].needs)
    if lacking:
        return _refusal(
            call,
            "tool_unavailable",
            f"{call.tool} needs {', '.join(lacking)}, which this finq does not hold yet",
        )
    return await RUNNERS[call.tool](call.arguments, deps)


async def run_route(
    db: Fetcher,
    route: RouteDecided,
    documents: DocumentSearch | None = None,
    user_id: str = LOCAL_USER,
    metric_values: MetricValueCache | None = None,
) -> ToolsCompleted:
    """The route's tool calls, run for `user_id` (from the envelope the gateway stamped):
    a user's uploads are searched for that user only, and a route's portfolio calls read
    the user's book once."""
    deps = ToolDeps(
        db=db,
        user_id=user_id,
        user_book=UserBook(db, user_id),  # type: ignore[arg-type]
        documents=documents,
        metric_values=metric_values,
    )
    results = [await run_tool_call(route.intent, call, deps) for call in route.tool_calls]
    return ToolsCompleted(route=route, results=results)
