"""Answers for definitions, refusals, an account asked back, unavailable tools and
trends: plain sentences that pass the validator, with no number it cannot ground."""

from __future__ import annotations

from datetime import date

from services.answerer.drafting import draft_answer
from services.answerer.intent_answers import compose_trend
from services.tools.metric_listing import metric_info
from services.validator.finalizing import validate_draft
from shared.contracts.answers import ToolsCompleted
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import Fact, ToolCall, ToolError, ToolResult
from shared.formula_words import formula_in_words
from shared.metric_catalog import METRICS_BY_ID
from tests.helpers import understanding

CAPABILITIES = "finq answers questions about companies' financial figures for Apple (AAPL)."


def answer(route: RouteDecided, *results: ToolResult) -> tuple[str, bool]:
    validated = validate_draft(draft_answer(ToolsCompleted(route=route, results=list(results))))
    return validated.answer, validated.validation.passed


def test_formulas_are_said_in_words_without_digits() -> None:
    assert formula_in_words("gross_profit / revenue * 100") == "gross profit ÷ revenue, in percent"
    assert formula_in_words("(revenue / revenue[-1] - 1) * 100") == (
        "(revenue ÷ the previous year's revenue) − one, in percent"
    )


def test_a_definition_gives_the_description_and_formula_and_passes_validation() -> None:
    route = RouteDecided(
        question="What is days sales outstanding?",
        intent="definition",
        tool_calls=[
            ToolCall(tool="list_metrics", arguments={"metrics": ["days_sales_outstanding"]})
        ],
    )
    text, passed = answer(
        route,
        ToolResult(
            tool="list_metrics",
            arguments={},
            metrics=[metric_info(METRICS_BY_ID["days_sales_outstanding"])],
        ),
    )
    assert text.startswith("Days sales outstanding: Average accounts receivable")
    assert "three hundred and sixty-five" in text
    assert not any(ch.isdigit() for ch in text)
    assert passed


def test_an_out_of_scope_question_is_refused_saying_what_finq_answers() -> None:
    route = RouteDecided(
        question="Tell me a joke",
        intent="out_of_scope",
        capabilities=CAPABILITIES,
    )
    text, passed = answer(route)
    assert text == f"That is outside what finq answers. {CAPABILITIES}"
    assert passed


def test_an_account_two_of_the_users_fit_is_asked_back() -> None:
    route = RouteDecided(
        question="how much cash is in my IRA",
        intent="portfolio_cash",
        tool_calls=[ToolCall(tool="get_cash_balance", arguments={"account": "IRA"})],
    )
    error = ToolError(code="ambiguous_account", message="Which account: IRA 1 or IRA 2?")
    result = ToolResult(tool="get_cash_balance", arguments={"account": "IRA"}, error=error)
    drafted = draft_answer(ToolsCompleted(route=route, results=[result]))
    assert drafted.answer == "Which account: IRA 1 or IRA 2?"
    assert drafted.needs_clarification and drafted.facts == []


def test_a_document_search_before_the_index_exists_says_so_and_points_to_filings() -> None:
    route = RouteDecided(
        question="What did Apple say about risk?",
        intent="document_search",
        tool_calls=[ToolCall(tool="search_documents", arguments={"query": "risk"})],
        understood=understanding({"AAPL": "Apple"}),
    )
    error = ToolError(code="tool_unavailable", message="not available")
    result = ToolResult(tool="search_documents", arguments={"query": "risk"}, error=error)
    text, passed = answer(route, result)
    assert text.startswith("Searching what filings say is not available")
    assert "Apple's latest annual report" in text
    assert passed


def fact(year: int, value: float) -> Fact:
    return Fact(
        symbol="AAPL",
        company="Apple",
        metric="revenue",
        metric_label="Revenue",
        period=f"FY{year}",
        fiscal_year=year,
        period_end=date(year, 9, 30),
        value=value,
        unit="USD",
        source_id=f"s{year}",
    )


def test_a_trend_names_its_first_last_and_highest_figures() -> None:
    facts = [fact(2021, 365.8e9), fact(2022, 394.3e9), fact(2023, 383.3e9)]
    assert compose_trend(facts) == [
        "From fiscal 2021 to fiscal 2023, Apple's revenue rose from $365.8 billion to "
        "$383.3 billion; its highest was $394.3 billion in fiscal 2022."
    ]
