"""Answers at a glance: several years or figures are one short lead over a table, one scale
per column, with each computed figure's working apart from the prose; a figure or two is
still a sentence. With a model, the model writes the lead and the table stays the
template's, checked with it."""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

from openai import AsyncOpenAI

from services.answerer.answer_tables import LEAD_CHARACTERS, figure_glance, glance_lead
from services.answerer.drafting import draft_answer
from services.answerer.llm_writing import LlmAnswerWriter
from services.validator.finalizing import decide, validate_draft
from shared.contracts.answers import AnswerDrafted, AnswerValidated, ToolsCompleted
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import Fact, Source, ToolCall, ToolResult
from shared.tools import GetFinancialMetricsArgs
from tests.answerer.glance_facts import nvidia_completed
from tests.helpers import make_fact, understanding
from tests.openai_stand_in import OpenAIStandIn, ScriptedReply

NVIDIA_LEAD = (
    "NVIDIA's revenue rose from $16.7 billion in fiscal 2021 to $130.5 billion in fiscal 2025, "
    "and its net income from $4.3 billion to $72.9 billion; revenue growth peaked at 125.9% "
    "and net income growth at 581.3%, both in fiscal 2024."
)


def test_five_years_of_two_figures_are_a_short_lead_over_a_table() -> None:
    drafted = draft_answer(nvidia_completed())
    assert drafted.answer == NVIDIA_LEAD
    assert len(drafted.answer) <= LEAD_CHARACTERS
    table = drafted.table
    assert table is not None
    assert table.caption == "NVIDIA, fiscal 2021–2025"
    assert table.columns == [
        "Fiscal year",
        "Revenue",
        "Revenue growth",
        "Net income",
        "Net income growth",
    ]
    assert [(row.label, row.cells) for row in table.rows] == [
        ("FY2021", ["$16.7 billion", "52.7%", "$4.3 billion", "54.9%"]),
        ("FY2022", ["$26.9 billion", "61.4%", "$9.8 billion", "125.1%"]),
        ("FY2023", ["$27.0 billion", "0.223%", "$4.4 billion", "-55.2%"]),
        ("FY2024", ["$60.9 billion", "125.9%", "$29.8 billion", "581.3%"]),
        ("FY2025", ["$130.5 billion", "114.2%", "$72.9 billion", "144.9%"]),
    ]
    # Every citation of the figures shown is kept, though the prose names no filing.
    assert len(drafted.citations) == 10
    validated = validate_draft(drafted)
    assert validated.validation.passed, validated.validation.issues
    assert validated.table == table and validated.workings == drafted.workings


def test_each_growth_is_worked_out_in_the_workings_not_in_the_prose() -> None:
    drafted = draft_answer(nvidia_completed())
    assert "×" not in drafted.answer and "/" not in drafted.answer
    by_figure = {working.figure: working for working in drafted.workings}
    assert len(by_figure) == 10
    working = by_figure["NVIDIA's revenue growth, fiscal 2022"]
    assert working.text == (
        "(revenue $26.9 billion / fiscal 2021 revenue $16.7 billion − 1) × 100 = 61.4%"
    )
    assert working.source_id == "derived:NVDA:revenue_growth:FY2022"
    # A figure's series together: the revenue growths, then the net income growths.
    assert [w.figure for w in drafted.workings][:2] == [
        "NVIDIA's revenue growth, fiscal 2021",
        "NVIDIA's revenue growth, fiscal 2022",
    ]


def test_a_column_keeps_one_scale_however_small_a_figure_is_beside_the_largest() -> None:
    facts = [
        make_fact(value, year=year, period_end=date(year, 12, 31), symbol="TSLA", company="Tesla")
        for year, value in ((2019, 862e6), (2020, 721e6), (2021, 5_519e6))
    ]
    glance = figure_glance(facts)
    assert glance is not None
    assert [row.cells for row in glance.table.rows] == [
        ["$0.86 billion"],
        ["$0.72 billion"],
        ["$5.5 billion"],
    ]
    # The lead writes its figures as their column does.
    assert glance_lead(glance) == (
        "Tesla's revenue rose from $0.86 billion in fiscal 2019 to $5.5 billion in fiscal 2021."
    )


def completed_with(
    facts: list[Fact], question: str, intent: str, symbols: dict[str, str]
) -> ToolsCompleted:
    metrics = list(dict.fromkeys(fact.metric for fact in facts))
    arguments = GetFinancialMetricsArgs(symbols=list(symbols), metrics=metrics)
    route = RouteDecided(
        question=question,
        intent=intent,
        tool_calls=[ToolCall.of(arguments)],
        understood=understanding(symbols, metrics, comparison=len(symbols) > 1),
    )
    sources = [Source(source_id=fact.source_id, label="10-K", form="10-K") for fact in facts]
    result = ToolResult(
        tool="get_financial_metrics", arguments=arguments, facts=facts, sources=sources
    )
    return ToolsCompleted(route=route, results=[result])


def test_several_companies_figures_for_one_year_lead_with_who_was_highest() -> None:
    facts = [
        make_fact(value, metric="net_margin", unit="%", symbol=symbol, company=name, period_end=end)
        for symbol, name, value, end in (
            ("NVDA", "NVIDIA", 16.19, date(2023, 1, 29)),
            ("AAPL", "Apple", 25.31, date(2023, 9, 30)),
            ("GOOGL", "Alphabet", 24.01, date(2023, 12, 31)),
        )
    ]
    symbols = {"NVDA": "NVIDIA", "AAPL": "Apple", "GOOGL": "Alphabet"}
    drafted = draft_answer(
        completed_with(facts, "rank them by net margin", "metric_comparison", symbols)
    )
    assert drafted.answer == (
        "In fiscal 2023, Apple had the highest net margin, 25.3%, and NVIDIA the lowest, 16.2%."
    )
    assert drafted.table is not None
    # Their fiscal years end on different dates: each row says when its year ended.
    assert drafted.table.columns == ["Company", "net margin", "Year ended"]
    assert drafted.table.rows[1].cells == ["25.3%", "2023-09-30"]
    assert validate_draft(drafted).validation.passed


def test_a_figure_or_two_is_still_said_in_a_sentence() -> None:
    facts = [make_fact(383_285e6), make_fact(96_995e6, metric="net_income")]
    question = "Apple revenue and net income 2023"
    drafted = draft_answer(completed_with(facts, question, "metric_lookup", {"AAPL": "Apple"}))
    assert drafted.table is None and drafted.workings == []
    assert "$383.3 billion" in drafted.answer and "$97.0 billion" in drafted.answer


# --- with a model ---------------------------------------------------------------------


def model_reply(answer: str, citations: list[str]) -> ScriptedReply:
    content = json.dumps({"answer": answer, "citations": citations})
    return ScriptedReply(content=content, prompt_tokens=900, completion_tokens=60)


async def written_by_model(
    *replies: ScriptedReply,
) -> tuple[AnswerDrafted, list[dict[str, Any]]]:
    tools = nvidia_completed()
    async with OpenAIStandIn(list(replies)) as server:
        client = AsyncOpenAI(api_key="test", base_url=server.base_url, max_retries=0)
        try:
            writer = LlmAnswerWriter(client, "gpt-4o-mini")
            drafted = await writer.write(tools, draft_answer(tools))
        finally:
            await client.close()
        return drafted, server.requests


async def test_a_model_writes_the_lead_and_the_table_and_workings_stay_the_templates() -> None:
    lead = (
        "NVIDIA's revenue grew from $16.7 billion in fiscal 2021 to $130.5 billion in fiscal "
        "2025, while net income rose from $4.3 billion to $72.9 billion."
    )
    drafted, requests = await written_by_model(
        model_reply(lead, ["sec:0001045810-25-000023:revenue"])
    )
    template = draft_answer(nvidia_completed())
    assert drafted.answer == lead
    assert drafted.generation.mode == "llm"
    assert drafted.table == template.table
    assert drafted.workings == template.workings
    # The model is told of the table and given each figure as its column writes it.
    [request] = requests
    assert "table" in request["messages"][0]["content"]
    context = json.loads(request["messages"][1]["content"])
    assert context["table"]["columns"][1] == "Revenue"
    assert "$4.3 billion" in [fact["value"] for fact in context["facts"]]
    validated = validate_draft(drafted)
    assert validated.validation.passed, validated.validation.issues


async def test_a_wrong_figure_in_the_models_lead_is_caught_beside_the_table() -> None:
    drafted, _ = await written_by_model(
        model_reply("NVIDIA's revenue reached $131.9 billion in fiscal 2025.", [])
    )
    outcome = decide(drafted, attempt=2)
    # The last attempt: the template's lead is shown, over the same table.
    assert isinstance(outcome, AnswerValidated)
    assert outcome.answer == NVIDIA_LEAD and outcome.table is not None
    assert outcome.validation.passed
    assert any(re.search(r"\$131\.9 billion", r) for r in outcome.generation.rejected)


def test_a_clause_leaves_out_only_what_the_clause_before_it_said() -> None:
    facts = [
        make_fact(value, year=year, metric=metric, symbol=symbol, company=name)
        for symbol, name, metric, values in (
            ("AAPL", "Apple", "revenue", (394_328e6, 391_035e6)),
            ("AAPL", "Apple", "net_income", (99_803e6, 93_736e6)),
            ("NVDA", "NVIDIA", "revenue", (26_914e6, 60_922e6)),
            ("NVDA", "NVIDIA", "net_income", (9_752e6, 29_760e6)),
        )
        for year, value in zip((2022, 2024), values, strict=True)
    ]
    glance = figure_glance(facts)
    assert glance is not None
    assert glance.table.columns == [
        "Fiscal year",
        "Apple revenue",
        "Apple net income",
        "NVIDIA revenue",
        "NVIDIA net income",
    ]
    # NVIDIA's figure after Apple's net income is named again: "NVIDIA's" alone would be
    # read as its net income.
    assert glance_lead(glance) == (
        "Apple's revenue fell from $394.3 billion in fiscal 2022 to $391.0 billion in fiscal "
        "2024, its net income from $99.8 billion to $93.7 billion, NVIDIA's revenue rose from "
        "$26.9 billion to $60.9 billion, and its net income from $9.8 billion to $29.8 billion."
    )
