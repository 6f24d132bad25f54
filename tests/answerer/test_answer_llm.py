"""The answerer's LLM mode through the real `openai` client against a scripted
OpenAI-protocol server on loopback, and the validator's verdict on what the model wrote."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import date

from openai import AsyncOpenAI

from services.answerer.drafting import draft_answer
from services.answerer.llm_writing import LlmAnswerWriter
from services.validator.finalizing import (
    MAX_ANSWER_ATTEMPTS,
    Redo,
    decide,
    refetch_route,
    validate_draft,
)
from shared.contracts.answers import AnswerDrafted, AnswerValidated, ToolsCompleted
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import Fact, Passage, Source, ToolCall, ToolResult
from shared.tools import GetFinancialMetricsArgs
from tests.helpers import understanding
from tests.openai_stand_in import OpenAIStandIn, ScriptedReply

SOURCE = "sec:0000320193-23-000106:Revenues"
REVENUE = GetFinancialMetricsArgs(symbols=["AAPL"], metrics=["revenue"])


def completed() -> ToolsCompleted:
    route = RouteDecided(
        question="What was Apple's revenue in fiscal 2023?",
        intent="metric_lookup",
        tool_calls=[ToolCall.of(REVENUE)],
        understood=understanding({"AAPL": "Apple"}, ["revenue"], periods={"fiscal_years": [2023]}),
    )
    facts = [
        Fact(
            symbol="AAPL", company="Apple", metric="revenue", metric_label="Revenue",
            period=f"FY{year}", fiscal_year=year, period_end=date(year, 9, 30),
            value=value, unit="USD", source_id=f"{SOURCE}:{year}",
        )
        for year, value in ((2023, 383285e6), (2024, 391035e6))
    ]  # fmt: skip
    sources = [
        Source(source_id=f"{SOURCE}:{year}", label=f"Apple 10-K FY{year}", form="10-K")
        for year in (2023, 2024)
    ]
    result = ToolResult(
        tool="get_financial_metrics", arguments=REVENUE, facts=facts, sources=sources
    )
    return ToolsCompleted(route=route, results=[result])


def reply(answer: str, citations: list[str], **options: object) -> ScriptedReply:
    content = json.dumps({"answer": answer, "citations": citations})
    return ScriptedReply(content=content, prompt_tokens=400, completion_tokens=60, **options)  # type: ignore[arg-type]


@asynccontextmanager
async def writer_for(
    *replies: ScriptedReply, client_timeout: float = 5.0
) -> AsyncIterator[tuple[LlmAnswerWriter, OpenAIStandIn]]:
    async with OpenAIStandIn(list(replies)) as server:
        client = AsyncOpenAI(
            api_key="test", base_url=server.base_url, timeout=client_timeout, max_retries=0
        )
        try:
            yield LlmAnswerWriter(client, "gpt-4o-mini", {"gpt-4o-mini": (0.15, 0.60)}), server
        finally:
            await client.close()


async def write(*replies: ScriptedReply, client_timeout: float = 5.0) -> AnswerDrafted:
    tools = completed()
    async with writer_for(*replies, client_timeout=client_timeout) as (writer, _):
        return await writer.write(tools, draft_answer(tools))


async def test_a_right_answer_is_used_with_its_citations_tokens_and_cost() -> None:
    drafted = await write(
        reply("Apple's revenue in fiscal 2023 was $383.3 billion.", [f"{SOURCE}:2023"])
    )
    assert drafted.answer == "Apple's revenue in fiscal 2023 was $383.3 billion."
    assert [c.source_id for c in drafted.citations] == [f"{SOURCE}:2023"]
    generation = drafted.generation
    assert (generation.mode, generation.prompt_tokens, generation.completion_tokens) == (
        "llm",
        400,
        60,
    )
    assert generation.cost_usd == 0.000096  # 400 × 0.15 + 60 × 0.60 per million
    assert validate_draft(drafted).validation.passed


async def test_the_prompt_holds_only_the_fetched_facts_and_asks_for_json() -> None:
    tools = completed()
    async with writer_for(reply("ok", [])) as (writer, server):
        await writer.write(tools, draft_answer(tools))
    [request] = server.requests
    assert request["response_format"]["type"] == "json_schema"
    context = json.loads(request["messages"][1]["content"])
    assert [f["value"] for f in context["facts"]] == ["$383.3 billion", "$391.0 billion"]
    assert "ONLY" in request["messages"][0]["content"]


async def test_a_wrong_figure_from_the_model_is_caught_by_the_validator() -> None:
    drafted = await write(reply("Apple's revenue in fiscal 2023 was $401.2 billion.", []))
    validation = validate_draft(drafted).validation
    assert not validation.passed and validation.severity == "high"


async def test_a_right_figure_under_the_wrong_year_is_caught() -> None:
    drafted = await write(reply("Apple's revenue in fiscal 2024 was $383.3 billion.", []))
    validation = validate_draft(drafted).validation
    assert not validation.passed
    assert "fiscal 2024" in validation.issues[0].message


async def test_a_fabricated_citation_is_rejected_as_critical() -> None:
    drafted = await write(
        reply("Apple's revenue in fiscal 2023 was $383.3 billion.", ["sec:made-up"])
    )
    validation = validate_draft(drafted).validation
    assert not validation.passed and validation.severity == "critical"


async def test_a_timeout_falls_back_to_the_deterministic_answer_and_says_so() -> None:
    drafted = await write(reply("late", [], delay_seconds=2.0), client_timeout=0.3)
    assert drafted.answer == draft_answer(completed()).answer
    assert (drafted.generation.mode, drafted.generation.fallback_reason) == (
        "deterministic",
        "timeout",
    )
    assert validate_draft(drafted).validation.passed


async def test_an_error_or_invalid_output_falls_back_too() -> None:
    failed = await write(ScriptedReply(status=500))
    assert failed.generation.fallback_reason == "error: InternalServerError"
    garbled = await write(ScriptedReply(content="not json at all"))
    assert garbled.generation.fallback_reason == "invalid output"
    assert garbled.generation.prompt_tokens == 50  # what was spent is still recorded
    assert garbled.answer == draft_answer(completed()).answer


async def test_a_wrong_answer_is_sent_back_with_the_findings_and_regenerated_right() -> None:
    tools = completed()
    async with writer_for(
        reply("Apple's revenue in fiscal 2023 was $401.2 billion.", []),
        reply("Apple's revenue in fiscal 2023 was $383.3 billion.", [f"{SOURCE}:2023"]),
    ) as (writer, server):
        first = await writer.write(tools, draft_answer(tools))
        redo = decide(first, attempt=0)
        assert isinstance(redo, Redo)
        assert redo.completed.repair is not None and redo.completed.repair.attempt == 1
        second = await writer.write(redo.completed, draft_answer(redo.completed))
    shown = decide(second, attempt=1)
    assert isinstance(shown, AnswerValidated)
    assert shown.answer == "Apple's revenue in fiscal 2023 was $383.3 billion."
    assert (shown.validation.passed, shown.validation.attempts) == (True, 2)
    retry_prompt = server.requests[1]["messages"]
    assert retry_prompt[-2]["content"] == "Apple's revenue in fiscal 2023 was $401.2 billion."
    assert "$401.2 billion" in retry_prompt[-1]["content"]


async def test_an_answer_still_wrong_after_the_last_attempt_gives_way_to_the_template() -> None:
    drafted = await write(reply("Apple's revenue in fiscal 2024 was $383.3 billion.", []))
    shown = decide(drafted, attempt=MAX_ANSWER_ATTEMPTS - 1)
    assert isinstance(shown, AnswerValidated)
    assert shown.answer == draft_answer(completed()).answer
    assert shown.validation.passed and shown.validation.attempts == MAX_ANSWER_ATTEMPTS
    assert shown.generation.mode == "deterministic"
    assert shown.generation.fallback_reason == "the model's answer failed validation 3 times"
    assert "fiscal 2024" in shown.generation.rejected[0]


def test_a_template_answer_is_never_sent_back() -> None:
    shown = decide(draft_answer(completed()), attempt=0)
    assert isinstance(shown, AnswerValidated) and shown.validation.attempts == 1


def test_a_refetch_adds_the_held_years_to_an_annual_plan_only() -> None:
    route = completed().route.model_copy(
        update={
            "tool_calls": [
                ToolCall(
                    tool="get_financial_metrics",
                    arguments={"symbols": ["AAPL"], "metrics": ["revenue"], "last": 1},
                )
            ]
        }
    )
    refetched = refetch_route(route, [2022])
    assert refetched is not None
    assert refetched.tool_calls[0].tool == "get_financial_metrics"
    assert refetched.tool_calls[0].arguments == GetFinancialMetricsArgs(
        symbols=["AAPL"], metrics=["revenue"], fiscal_years=[2022]
    )
    assert refetch_route(refetched, [2022]) is None
    assert refetch_route(route, []) is None


def passages_completed() -> ToolsCompleted:
    passage = Passage(
        source_id="doc:d1:4",
        document_id="d1",
        title="Apple 10-K FY2022",
        collection="filings",
        symbol="AAPL",
        company="Apple",
        form="10-K",
        fiscal_year=2022,
        period="FY2022",
        page=8,
        chunk_index=4,
        text="As of September 24, 2022, the Company had approximately 164,000 full-time "
        "equivalent employees.",
        score=0.03,
    )
    route = RouteDecided(
        question="How many employees did Apple have in its fiscal 2022 10-K?",
        intent="document_search",
        tool_calls=[ToolCall(tool="search_documents", arguments={"query": "employees"})],
    )
    source = Source(
        source_id="doc:d1:4", label="Apple's 10-K for FY2022, page 8", fiscal_year=2022, page=8
    )
    result = ToolResult(
        tool="search_documents",
        arguments={"query": "employees"},
        passages=[passage],
        sources=[source],
    )
    return ToolsCompleted(route=route, results=[result])


async def test_a_model_answers_from_numbered_passages_and_its_quotes_are_checked() -> None:
    tools = passages_completed()
    async with writer_for(
        reply("Apple had about 164,000 full-time equivalent employees [1].", []),
        reply("Apple had about 170,000 employees [1][2].", []),
    ) as (writer, server):
        right = await writer.write(tools, draft_answer(tools))
        wrong = await writer.write(tools, draft_answer(tools))
    context = json.loads(server.requests[0]["messages"][1]["content"])
    assert context["passages"][0]["n"] == 1 and context["passages"][0]["page"] == 8
    assert "facts" not in context
    assert [c.source_id for c in right.citations] == ["doc:d1:4"]
    assert validate_draft(right).validation.passed
    issues = {issue.text for issue in validate_draft(wrong).validation.issues}
    assert issues == {"170,000", "[2]"}  # not in the passage; no second passage
