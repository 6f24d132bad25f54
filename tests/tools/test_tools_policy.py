"""The tools service refuses what the policy allows not, and the contract refuses calls the
argument schemas do not allow: such a call cannot even be built or decoded."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from services.tools.runner import run_route
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import ToolCall
from shared.tools import GetFinancialMetricsArgs


class NoDatabase:
    """Refused calls must never reach SQL; this fails the test if one does."""

    async def fetch(self, query: str, *args: Any) -> list[Any]:
        raise AssertionError("a refused tool call reached the database")


async def test_a_tool_outside_the_intents_whitelist_is_refused_with_a_typed_error() -> None:
    route = RouteDecided(
        question="drop everything",
        intent="clarify",
        tool_calls=[ToolCall.of(GetFinancialMetricsArgs(symbols=["AAPL"], metrics=["revenue"]))],
    )
    completed = await run_route(NoDatabase(), route)
    error = completed.results[0].error
    assert error is not None and error.code == "tool_not_allowed"


UNKNOWN_TOOL = {"tool": "run_sql", "arguments": {"sql": "DELETE FROM companies"}}


def test_a_call_of_an_unknown_tool_cannot_be_built() -> None:
    with pytest.raises(ValidationError) as refused:
        ToolCall(**UNKNOWN_TOOL)  # type: ignore[arg-type]
    assert any(error["loc"] == ("tool",) for error in refused.value.errors())


def test_a_route_naming_an_unknown_tool_fails_to_decode() -> None:
    payload = {"question": "x", "intent": "metric_lookup", "tool_calls": [UNKNOWN_TOOL]}
    with pytest.raises(ValidationError) as refused:
        RouteDecided.model_validate(payload)
    assert any(error["loc"] == ("tool_calls", 0, "tool") for error in refused.value.errors())
    # As the tools stage reads it off the bus.
    with pytest.raises(ValidationError):
        RouteDecided.model_validate_json(json.dumps(payload))


INVALID_ARGUMENTS = {
    "symbols": ["AAPL'; DROP TABLE companies; --"],
    "metrics": ["not_a_metric"],
    "fiscal_years": [1066],
}


def test_arguments_that_fail_the_schema_are_refused_before_sql() -> None:
    with pytest.raises(ValidationError) as refused:
        ToolCall(tool="get_financial_metrics", arguments=INVALID_ARGUMENTS)
    message = str(refused.value)
    assert "symbols" in message
    assert "not_a_metric" in message
    assert "fiscal_years" in message
    payload = {
        "question": "x",
        "intent": "metric_lookup",
        "tool_calls": [{"tool": "get_financial_metrics", "arguments": INVALID_ARGUMENTS}],
    }
    with pytest.raises(ValidationError) as refused:
        RouteDecided.model_validate(payload)
    message = str(refused.value)
    assert "symbols" in message and "not_a_metric" in message and "fiscal_years" in message
