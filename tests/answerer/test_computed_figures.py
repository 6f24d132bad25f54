"""Figures finq does not store, computed from the figures it fetched with the arithmetic
shown: a nine-month total, a quarter's change on the same quarter a year earlier, a ratio
asked in words. The validator accepts them because every term is a fetched figure."""

from __future__ import annotations

from datetime import date

from services.answerer.drafting import draft_answer
from services.router.routing import route_question
from services.router.rules import CompanyDirectory, CompanyEntry
from services.validator.finalizing import validate_draft
from shared.contracts.answers import ToolsCompleted
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import Fact, Source, ToolCall, ToolResult
from shared.contracts.understanding import PeriodSelection, RatioAsked
from shared.tools import GetFinancialMetricsArgs
from tests.helpers import make_fact, understanding

# Apple's fiscal 2024 quarters as the bundled dataset holds them (revenue, USD).
Q1 = make_fact(119_575e6, year=2024, quarter=1, period_end=date(2023, 12, 30))
Q2 = make_fact(90_753e6, year=2024, quarter=2, period_end=date(2024, 3, 30))
Q3 = make_fact(85_777e6, year=2024, quarter=3, period_end=date(2024, 6, 29))
Q3_2023 = make_fact(81_797e6, year=2023, quarter=3, period_end=date(2023, 7, 1))


def apples(*metrics: str) -> GetFinancialMetricsArgs:
    """The plan's call: Apple's `metrics`, each figure's latest period held."""
    return GetFinancialMetricsArgs(symbols=["AAPL"], metrics=list(metrics))


def drafted(periods: PeriodSelection, *facts: Fact):  # type: ignore[no-untyped-def]
    route = RouteDecided(
        question="a question",
        intent="metric_lookup",
        tool_calls=[ToolCall.of(apples("revenue"))],
        understood=understanding({"AAPL": "Apple"}, ["revenue"], periods=periods),
    )
    result = ToolResult(
        tool="get_financial_metrics",
        arguments=apples("revenue"),
        facts=list(facts),
        sources=[Source(source_id=f.source_id, label="Apple 10-Q", form="10-Q") for f in facts],
    )
    return draft_answer(ToolsCompleted(route=route, results=[result]))


def test_nine_months_ended_is_the_sum_of_three_quarters_with_its_terms() -> None:
    periods = PeriodSelection(
        period_type="quarterly", fiscal_years=[2024], fiscal_quarters=[1, 2, 3], months_to_date=9
    )
    draft = drafted(periods, Q1, Q2, Q3)
    # The total asked for leads; the three quarters are a table, the sum's terms its working.
    assert draft.answer.startswith(
        "Apple's revenue for the nine months ended 2024-06-29 (Q1 to Q3 of fiscal 2024) "
        "was $296.1 billion."
    )
    assert draft.table is not None
    assert [row.cells for row in draft.table.rows] == [
        ["$119.6 billion"],
        ["$90.8 billion"],
        ["$85.8 billion"],
    ]
    [working] = draft.workings
    assert working.text == (
        "Q1 of fiscal 2024 revenue $119.6 billion + Q2 of fiscal 2024 revenue $90.8 billion "
        "+ Q3 of fiscal 2024 revenue $85.8 billion = $296.1 billion"
    )
    total = next(f for f in draft.facts if f.formula)
    assert total.value == 119_575e6 + 90_753e6 + 85_777e6
    validated = validate_draft(draft)
    assert validated.validation.passed, validated.validation.issues


def test_a_total_needs_every_quarter_of_its_span() -> None:
    periods = PeriodSelection(
        period_type="quarterly", fiscal_years=[2024], fiscal_quarters=[1, 2, 3], months_to_date=9
    )
    draft = drafted(periods, Q1, Q3)
    assert "nine months" not in draft.answer
    assert not any(f.formula for f in draft.facts)


def test_a_quarter_is_compared_with_the_same_quarter_a_year_earlier() -> None:
    periods = PeriodSelection(
        period_type="quarterly",
        fiscal_years=[2023, 2024],
        fiscal_quarters=[3],
        same_quarter_last_year=True,
    )
    draft = drafted(periods, Q3_2023, Q3)
    assert "changed by 4.9%: ($85.8 billion / $81.8 billion - 1) × 100." in draft.answer
    validated = validate_draft(draft)
    assert validated.validation.passed, validated.validation.issues


def test_a_ratio_the_catalog_lacks_is_computed_from_its_two_figures() -> None:
    cost = make_fact(214_137e6, metric="cost_of_revenue")
    revenue = make_fact(383_285e6)
    route = RouteDecided(
        question="What percentage of Apple's revenue was cost of sales in fiscal 2023?",
        intent="metric_lookup",
        tool_calls=[ToolCall.of(apples("revenue", "cost_of_revenue"))],
        understood=understanding(
            {"AAPL": "Apple"},
            ["revenue", "cost_of_revenue"],
            periods={"fiscal_years": [2023]},
            ratio=RatioAsked(
                numerator="cost_of_revenue", denominator="revenue", text="what percentage of"
            ),
        ),
    )
    result = ToolResult(
        tool="get_financial_metrics",
        arguments=apples("revenue", "cost_of_revenue"),
        facts=[cost, revenue],
        sources=[Source(source_id=f.source_id, label="Apple 10-K") for f in (cost, revenue)],
    )
    draft = draft_answer(ToolsCompleted(route=route, results=[result]))
    assert (
        "In fiscal 2023, Apple's cost of revenue was 55.9% of its revenue: "
        "$214.1 billion / $383.3 billion × 100."
    ) in draft.answer
    validated = validate_draft(draft)
    assert validated.validation.passed, validated.validation.issues


def test_the_router_reads_which_figure_is_the_whole() -> None:
    directory = CompanyDirectory((CompanyEntry("AAPL", "Apple", ("apple",), 2025),))
    route = route_question(
        "What percentage of Apple's revenue was cost of sales in fiscal 2023?", directory
    )
    assert route.understood.ratio == RatioAsked(
        numerator="cost_of_revenue", denominator="revenue", text="What percentage of"
    )
    assert route.understood.covered
    # A ratio the catalog holds is asked for by its name.
    held = route_question(
        "How much of each dollar of Apple's 2023 revenue ended up as net income?", directory
    )
    assert held.understood.ratio is None
    assert held.tool_calls[0].arguments.metrics == ["net_margin"]


def test_a_figure_asked_between_two_fiscal_years_has_its_change_computed_and_validated() -> None:
    periods = PeriodSelection(period_type="annual", fiscal_years=[2022, 2023])
    route = RouteDecided(
        question="How did Apple's revenue change between fiscal 2022 and fiscal 2023?",
        intent="metric_trend",
        tool_calls=[ToolCall.of(apples("revenue"))],
        understood=understanding({"AAPL": "Apple"}, ["revenue"], periods=periods),
    )
    route.understood.growth = True
    facts = [
        make_fact(394_328e6, year=2022, period_end=date(2022, 9, 24)),
        make_fact(383_285e6, year=2023, period_end=date(2023, 9, 30)),
    ]
    result = ToolResult(
        tool="get_financial_metrics",
        arguments=apples("revenue"),
        facts=facts,
        sources=[Source(source_id=f.source_id, label="Apple 10-K", form="10-K") for f in facts],
    )
    draft = draft_answer(ToolsCompleted(route=route, results=[result]))
    assert (
        "From fiscal 2022 to fiscal 2023, Apple's revenue changed by -2.8%: "
        "($383.3 billion / $394.3 billion - 1) × 100." in draft.answer
    )
    validated = validate_draft(draft)
    assert validated.validation.passed, validated.validation.issues
