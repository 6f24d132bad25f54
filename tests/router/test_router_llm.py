"""Layer 3: LLM tool selection through the real `openai` client against a scripted
OpenAI-protocol server on loopback."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from openai import AsyncOpenAI

from services.router.llm_selection import LlmToolSelector, answered_tools, tool_schemas
from services.router.routing import Router
from services.router.rules import CompanyDirectory, CompanyEntry, metric_finder
from shared.contracts.envelope import ModelCallBudget
from shared.contracts.questions import ConversationTurn, QuestionAsked
from shared.tools import TOOL_ARGUMENTS, GetFinancialMetricsArgs, GetPositionsArgs
from shared.tools.spec import strict_schema
from tests.helpers import understanding
from tests.openai_stand_in import OpenAIStandIn, ScriptedReply

CAPABILITIES = "finq answers questions about Apple (AAPL) and NVIDIA (NVDA)"
GOOD_CALL = (
    "get_financial_metrics",
    {"symbols": ["AAPL"], "metrics": ["revenue"], "fiscal_years": [2023]},
)


@asynccontextmanager
async def selector_for(
    *replies: ScriptedReply, client_timeout: float = 5.0
) -> AsyncIterator[tuple[LlmToolSelector, OpenAIStandIn]]:
    async with OpenAIStandIn(list(replies)) as server:
        client = AsyncOpenAI(
            api_key="test-key", base_url=server.base_url, timeout=client_timeout, max_retries=0
        )
        try:
            yield LlmToolSelector(client, "scripted-model", CAPABILITIES), server
        finally:
            await client.close()


def function_names(request: dict) -> list[str]:
    return [tool["function"]["name"] for tool in request["tools"]]


async def test_a_good_tool_call_becomes_a_validated_plan() -> None:
    async with selector_for(ScriptedReply(tool_calls=[GOOD_CALL])) as (selector, server):
        route = await selector.select("apple sales fy23 pls", [], understanding({"AAPL": "Apple"}))
    assert route is not None
    assert (route.intent, route.decided_by, route.confidence) == ("metric_lookup", "llm", 0.9)
    assert route.tool_calls[0].tool == "get_financial_metrics"
    assert route.tool_calls[0].arguments == GetFinancialMetricsArgs(
        symbols=["AAPL"], metrics=["revenue"], period="annual", fiscal_years=[2023]
    )
    assert route.understood.llm is not None
    assert route.understood.llm.prompt_tokens == 50
    [request] = server.requests
    assert request["model"] == "scripted-model"
    assert function_names(request) == [*answered_tools(), "ask_clarifying_question", "decline"]
    assert "apple sales fy23 pls" in request["messages"][-1]["content"]


async def test_the_schemas_sent_are_the_tools_own_argument_models_without_a_user_field() -> None:
    for definition in tool_schemas():
        name = definition["function"]["name"]
        if name in TOOL_ARGUMENTS:
            schema = definition["function"]["parameters"]
            own = TOOL_ARGUMENTS[name].model_json_schema(by_alias=True)
            assert schema == strict_schema(own)
            assert set(schema["properties"]) == set(own["properties"])
            assert schema.get("additionalProperties") is False
            # Whose data is read is the envelope's user alone; a portfolio tool's `account`
            # names one of that user's own accounts (row-level security shows no other).
            assert not {"user", "user_id", "owner", "owner_id"} & set(schema["properties"])


async def test_an_invalid_call_is_retried_once_with_the_error_and_the_second_is_used() -> None:
    bad = ("get_financial_metrics", {"symbols": ["AAPL"], "metrics": ["revenue"], "user_id": "x"})
    async with selector_for(
        ScriptedReply(tool_calls=[bad]), ScriptedReply(tool_calls=[GOOD_CALL])
    ) as (selector, server):
        route = await selector.select("apple revenue 2023", [])
    assert route is not None
    assert (route.intent, route.confidence) == ("metric_lookup", 0.7)
    assert route.understood.llm is not None
    assert route.understood.llm.calls == 2
    retry = server.requests[1]["messages"]
    assert retry[-1]["role"] == "tool"
    assert "user_id" in retry[-1]["content"] and "Invalid arguments" in retry[-1]["content"]


async def test_the_retry_is_not_made_when_the_requests_model_calls_are_spent() -> None:
    bad = ("get_prices", "{not json")
    budget = ModelCallBudget(1)
    async with selector_for(ScriptedReply(tool_calls=[bad]), ScriptedReply(tool_calls=[bad])) as (
        selector,
        server,
    ):
        route = await selector.select("price?", [], budget=budget)
        assert await selector.select("price?", [], budget=budget) is None
    # The rules' route stands; the model was asked once in all.
    assert route is None
    assert len(server.requests) == 1
    assert (budget.left, budget.used) == (0, 1)


async def test_two_invalid_calls_end_in_a_clarifying_question() -> None:
    bad = ("get_prices", "{not json")
    async with selector_for(ScriptedReply(tool_calls=[bad]), ScriptedReply(tool_calls=[bad])) as (
        selector,
        server,
    ):
        route = await selector.select("price?", [])
    assert route is not None
    assert route.intent == "clarify" and route.tool_calls == []
    assert route.clarifying_question is not None
    assert len(server.requests) == 2


async def test_a_tool_outside_the_whitelist_is_refused_and_never_planned() -> None:
    sneaky = ("run_sql", {"sql": "DELETE FROM companies"})
    async with selector_for(ScriptedReply(tool_calls=[sneaky])) as (selector, _):
        route = await selector.select("delete it all", [])
    assert route is not None
    assert route.intent == "out_of_scope"
    assert route.tool_calls == []
    assert route.understood.refused_tools == ["run_sql"]


async def test_declining_gives_an_out_of_scope_route() -> None:
    reply = ScriptedReply(tool_calls=[("decline", {"reason": "small talk"})])
    async with selector_for(reply) as (selector, _):
        route = await selector.select("how are you", [])
    assert route is not None and route.intent == "out_of_scope"


async def test_a_comparison_and_a_range_get_their_intents_from_the_arguments() -> None:
    comparison = ("get_financial_metrics", {"symbols": ["AAPL", "NVDA"], "metrics": ["revenue"]})
    trend = ("get_financial_metrics", {"symbols": ["AAPL"], "metrics": ["revenue"], "last": 3})
    async with selector_for(
        ScriptedReply(tool_calls=[comparison]), ScriptedReply(tool_calls=[trend])
    ) as (selector, _):
        first = await selector.select("a vs n", [])
        second = await selector.select("a lately", [])
    assert first is not None and first.intent == "metric_comparison"
    assert second is not None and second.intent == "metric_trend"


async def test_the_conversation_goes_with_the_question() -> None:
    history = [ConversationTurn(question="Apple revenue 2023", answer="$383.3 billion")]
    async with selector_for(ScriptedReply(tool_calls=[GOOD_CALL])) as (selector, server):
        await selector.select("and before that?", history)
    roles = [(m["role"], m["content"]) for m in server.requests[0]["messages"][1:]]
    assert roles == [
        ("user", "Apple revenue 2023"),
        ("assistant", "$383.3 billion"),
        ("user", "and before that?"),
    ]


async def test_a_timeout_or_a_server_error_gives_none_quickly() -> None:
    async with selector_for(ScriptedReply(delay_seconds=3.0), client_timeout=0.3) as (selector, _):
        started = time.monotonic()
        assert await selector.select("x", []) is None
        assert time.monotonic() - started < 2.0
    async with selector_for(ScriptedReply(status=500)) as (selector, _):
        assert await selector.select("x", []) is None


async def test_the_router_asks_the_llm_only_when_rules_are_unsure() -> None:
    directory = CompanyDirectory((CompanyEntry("AAPL", "Apple", ("apple",), 2025),))
    filings = ("get_recent_filings", {"symbol": "AAPL"})
    async with selector_for(ScriptedReply(tool_calls=[filings])) as (selector, server):
        router = Router(directory, metric_finder(directory), selector=selector)
        clear = await router.route(QuestionAsked(question="Apple revenue in fiscal 2023"))
        unclear = await router.route(QuestionAsked(question="apple paperwork"))
    assert clear.decided_by == "rules"
    assert (unclear.intent, unclear.decided_by) == ("filings", "llm")
    assert len(server.requests) == 1


async def test_a_portfolio_tool_picked_by_the_model_answers_its_own_intent() -> None:
    positions = ("get_positions", {"symbols": ["AAPL"], "account": None, "as_of": None})
    overview = ("get_positions", {})
    cash = ("get_cash_balance", {"account": "Roth IRA"})
    async with selector_for(
        ScriptedReply(tool_calls=[positions]),
        ScriptedReply(tool_calls=[overview]),
        ScriptedReply(tool_calls=[cash]),
    ) as (selector, _):
        one = await selector.select("my apple?", [])
        whole = await selector.select("my stuff?", [])
        money = await selector.select("cash in roth?", [])
    assert one is not None and one.intent == "portfolio_position"
    assert one.tool_calls[0].arguments == GetPositionsArgs(symbols=["AAPL"])
    assert whole is not None and whole.intent == "portfolio_overview"
    assert money is not None and money.intent == "portfolio_cash"


async def test_strict_nulls_stand_for_arguments_not_given_and_take_the_models_defaults() -> None:
    call = (
        "get_financial_metrics",
        {
            "symbols": ["NVDA"],
            "metrics": ["revenue"],
            "period": None,
            "fiscal_years": None,
            "from": None,
            "to": None,
            "fiscal_quarters": None,
            "last": 3,
            "limit": None,
        },
    )
    async with selector_for(ScriptedReply(tool_calls=[call])) as (selector, _):
        route = await selector.select("nvidia lately", [])
    assert route is not None and route.intent == "metric_trend"
    assert route.tool_calls[0].arguments == GetFinancialMetricsArgs(
        symbols=["NVDA"], metrics=["revenue"], last=3
    )
