"""The tools service refuses what the policy and the argument schemas do not allow."""

from __future__ import annotations

from typing import Any

from services.tools.runner import run_route
from shared.contracts import RouteDecided, ToolCall


class NoDatabase:
    """Refused calls must never reach SQL; this fails the test if one does."""

    async def fetch(self, query: str, *args: Any) -> list[Any]:
        raise AssertionError("a refused tool call reached the database")


async def test_a_tool_outside_the_intents_whitelist_is_refused_with_a_typed_error() -> None:
    route = RouteDecided(
        question="drop everything",
        intent="clarify",
        tool_calls=[ToolCall(tool="get_financial_metrics", arguments={"symbols": ["AAPL"]})],
    )
    completed = await run_route(NoDatabase(), route)
    error = completed.results[0].error
    assert error is not None and error.code == "tool_not_allowed"


async def test_an_unknown_tool_is_refused() -> None:
    route = RouteDecided(
        question="x",
        intent="metric_lookup",
        tool_calls=[ToolCall(tool="run_sql", arguments={"sql": "DELETE FROM companies"})],
    )
    completed = await run_route(NoDatabase(), route)
    error = completed.results[0].error
    assert error is not None and error.code == "tool_not_allowed"


async def test_arguments_that_fail_the_schema_are_refused_before_sql() -> None:
    route = RouteDecided(
        question="x",
        intent="metric_lookup",
        tool_calls=[
            ToolCall(
                tool="get_financial_metrics",
                arguments={
                    "symbols": ["AAPL'; DROP TABLE companies; --"],
                    "metrics": ["not_a_metric"],
                    "fiscal_years": [1066],
                },
            )
        ],
    )
    completed = await run_route(NoDatabase(), route)
    error = completed.results[0].error
    assert error is not None and error.code == "invalid_arguments"
    assert "symbols" in error.message
    assert "not_a_metric" in error.message
    assert "fiscal_years" in error.message
