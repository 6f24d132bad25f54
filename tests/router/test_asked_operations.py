"""Arithmetic asked in words is read, computed and said first: a figure's change between two
years (in dollars, in percent, or both), and across companies their sum, the first less the
second, or the first as a multiple of the second; each result passes the validator because
its terms are fetched figures. Words that only say how a figure is asked are no reason to
refuse it; words that change the figure always are."""

from __future__ import annotations

from datetime import date

import pytest

from services.answerer.drafting import draft_answer
from services.router.operations import read_operation
from services.router.routing import route_question
from services.router.rules import CompanyDirectory, CompanyEntry
from services.validator.finalizing import validate_draft
from shared.contracts.answers import ToolsCompleted
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import Fact, Source, ToolCall, ToolResult
from shared.contracts.understanding import AskedOperation, PeriodSelection
from shared.tools import GetFinancialMetricsArgs
from tests.helpers import make_fact, understanding

DIRECTORY = CompanyDirectory(
    (
        CompanyEntry("AAPL", "Apple", ("apple",), 2025),
        CompanyEntry("GOOGL", "Alphabet", ("alphabet", "google"), 2025),
        CompanyEntry("TSLA", "Tesla", ("tesla",), 2021),
    )
)

APPLE_2022 = make_fact(394_328e6, year=2022, period_end=date(2022, 9, 24))
APPLE_2023 = make_fact(383_285e6, year=2023, period_end=date(2023, 9, 30))
ALPHABET_2023 = make_fact(
    307_394e6, year=2023, period_end=date(2023, 12, 31), company="Alphabet", symbol="GOOGL"
)


@pytest.mark.parametrize(
    ("question", "companies", "periods", "expected"),
    [
        ("the two of them combined", 2, 1, ("sum", False, False)),
        ("how many times bigger is the first", 2, 1, ("multiple", False, False)),
        ("what is the gap between them", 2, 1, ("difference", False, False)),
        ("by what percent did it go up", 1, 2, ("change", True, False)),
        ("how many more dollars than before", 1, 2, ("change", False, True)),
        ("how did it change", 1, 2, ("change", True, True)),
        ("how did it grow", 1, 2, ("change", True, False)),
        ("by how much did it grow", 1, 2, ("change", True, True)),
        ("was it lower in the second year than in the first?", 1, 2, ("change", True, True)),
        (
            "by how much did it rise? subtract the first from the second",
            1,
            2,
            ("change", False, True),
        ),
    ],
)
def test_the_arithmetic_asked_is_read_from_its_words_and_the_reading(
    question: str, companies: int, periods: int, expected: tuple[str, bool, bool]
) -> None:
    operation, spans = read_operation(question, companies, periods, metrics=1)
    assert operation is not None and spans
    assert (operation.kind, operation.as_percent, operation.in_units) == expected


def test_arithmetic_words_without_what_they_need_read_as_no_operation() -> None:
    # One company and one year: nothing to add up or to change between.
    assert read_operation("the combined total", 1, 1, metrics=1) == (None, [])
    assert read_operation("how much did it grow", 1, 1, metrics=1) == (None, [])
    # Two figures: which one would be added up is not said.
    assert read_operation("combined", 2, 1, metrics=2) == (None, [])


def answered(question: str, periods: PeriodSelection, operation: AskedOperation, *facts):  # type: ignore[no-untyped-def]
    symbols = list(dict.fromkeys(fact.symbol for fact in facts))
    names = {fact.symbol: fact.company for fact in facts}
    arguments = GetFinancialMetricsArgs(symbols=symbols, metrics=["revenue"])
    route = RouteDecided(
        question=question,
        intent="metric_comparison" if len(symbols) > 1 else "metric_trend",
        tool_calls=[ToolCall.of(arguments)],
        understood=understanding(names, ["revenue"], periods=periods, operation=operation),
    )
    route.understood.growth = operation.kind == "change"
    result = ToolResult(
        tool="get_financial_metrics",
        arguments=arguments,
        facts=list(facts),
        sources=[Source(source_id=f.source_id, label="10-K", form="10-K") for f in facts],
    )
    return draft_answer(ToolsCompleted(route=route, results=[result]))


def test_a_change_in_dollars_and_percent_is_the_answers_first_sentence_and_validates() -> None:
    draft = answered(
        "How did Apple's revenue change between fiscal 2022 and fiscal 2023?",
        PeriodSelection(period_type="annual", fiscal_years=[2022, 2023]),
        AskedOperation(kind="change", text="change", as_percent=True, in_units=True),
        APPLE_2022,
        APPLE_2023,
    )
    assert draft.answer.startswith(
        "From fiscal 2022 to fiscal 2023, Apple's revenue changed by -$11.0 billion"
    )
    assert "changed by -2.8%" in draft.answer
    # Between consecutive years the percent is the catalog's own revenue growth.
    growth = [fact for fact in draft.facts if fact.metric == "revenue_growth"]
    assert [round(fact.value, 2) for fact in growth] == [-2.8]
    validated = validate_draft(draft)
    assert validated.validation.passed, validated.validation.issues
    assert not validated.validation.repairs


@pytest.mark.parametrize(
    ("operation", "said"),
    [
        ("sum", "Together, Apple and Alphabet had revenue of $690.7 billion in fiscal 2023"),
        ("difference", "Apple's revenue in fiscal 2023 less Alphabet's was $75.9 billion"),
        ("multiple", "Apple's revenue in fiscal 2023 was 1.25× Alphabet's"),
    ],
)
def test_a_figure_across_companies_is_computed_said_first_and_validates(
    operation: str, said: str
) -> None:
    draft = answered(
        "a question across companies",
        PeriodSelection(period_type="annual", fiscal_years=[2023]),
        AskedOperation(kind=operation, text=operation),  # type: ignore[arg-type]
        APPLE_2023,
        ALPHABET_2023,
    )
    assert draft.answer.startswith(said), draft.answer
    validated = validate_draft(draft)
    assert validated.validation.passed, validated.validation.issues
    assert not validated.validation.repairs


def test_an_operation_that_cannot_be_computed_is_said_not_dropped() -> None:
    draft = answered(
        "Apple and Alphabet revenue combined in 2023",
        PeriodSelection(period_type="annual", fiscal_years=[2023]),
        AskedOperation(kind="sum", text="combined"),
        APPLE_2023,  # Alphabet's figure is not held
    )
    assert draft.answer.startswith("The total asked for could not be computed")


@pytest.mark.parametrize(
    "question",
    [
        "Calculate Alphabet's ROE for 2023 and show the working.",
        "how much money did google actually keep as profit in 2023",
        "Apple's revenue in fiscal 2023 pls",
    ],
)
def test_words_that_only_say_how_a_figure_is_asked_do_not_stop_its_answer(
    question: str,
) -> None:
    route = route_question(question, DIRECTORY)
    assert route.intent == "metric_lookup", route.understood.not_understood
    assert route.understood.not_understood == []


@pytest.mark.parametrize(
    ("question", "unread"),
    [
        ("Apple Azure revenue 2023", "Azure"),  # narrows the figure, against its name
        ("Apple revenue per employee 2023", "employee"),  # attached by a preposition
        ("Apple revenue and headcount 2023", "headcount"),  # another thing asked
        ("Apple revenue, net of credits, in 2023", "credits"),  # a basis
        ("alphabet R and D spend, twenty twenty-two", "twenty twenty"),  # a number in words
        ("How much is left under Apple's share repurchase authorization?", "authorization"),
    ],
)
def test_words_that_change_the_figure_send_it_to_the_filings(question: str, unread: str) -> None:
    route = route_question(question, DIRECTORY)
    assert route.intent == "document_search"
    assert unread in [span.text for span in route.understood.not_understood]
    assert route.understood.uncovered_figure


def test_a_quantifier_before_a_figure_says_how_much_of_it_not_which_part() -> None:
    route = route_question("does Tesla hold enough cash to cover its debt in 2021", DIRECTORY)
    assert route.intent == "metric_lookup", route.understood.not_understood
    assert route.understood.not_understood == []


@pytest.mark.parametrize(
    "question",
    [
        "Tesla long-term debt plus current debt in 2021",
        "tesla current and long-term debt added up, 2021",
        "tesla debt: current + long-term, 2021",
        "Tesla's total debt in 2021, including its long-term debt",
    ],
)
def test_parts_added_up_are_the_catalog_figure_that_adds_them(question: str) -> None:
    route = route_question(question, DIRECTORY)
    assert route.intent == "metric_lookup", route.understood.not_understood
    assert [m.id for m in route.understood.metrics] == ["total_debt"]


def test_two_figures_asked_side_by_side_are_not_added() -> None:
    route = route_question("Tesla current debt and long-term debt in 2021", DIRECTORY)
    assert [m.id for m in route.understood.metrics] == ["current_debt", "long_term_debt"]


def test_a_shared_head_noun_is_read_for_each_of_its_modifiers() -> None:
    route = route_question("tesla short and long term debt 2021", DIRECTORY)
    assert [m.id for m in route.understood.metrics] == ["short_term_debt", "long_term_debt"]


def test_a_quarter_against_the_same_quarter_of_a_named_year_before_is_its_growth() -> None:
    question = "Tesla Q2 2021 revenue growth against the same quarter of 2020"
    route = route_question(question, DIRECTORY)
    periods = route.understood.periods
    assert route.understood.not_understood == []
    assert periods.fiscal_quarters == [2] and periods.fiscal_years == [2020, 2021]


def test_the_same_quarter_of_another_year_fetches_the_two_quarters_named() -> None:
    route = route_question("Tesla Q2 2021 revenue vs the same quarter of 2018", DIRECTORY)
    periods = route.understood.periods
    assert not periods.same_quarter_last_year
    assert periods.fiscal_quarters == [2] and periods.fiscal_years == [2018, 2021]


def test_an_overall_change_over_a_span_of_years_is_first_year_to_last() -> None:
    operation, _ = read_operation("the overall % increase from 2019 to 2023", 1, 5, metrics=1)
    assert operation is not None and operation.kind == "change" and operation.as_percent
    # Without a word of the whole span, a span of years is a trend, each year's change.
    assert read_operation("the % increase from 2019 to 2023", 1, 5, metrics=1) == (None, [])
    apple_2021 = make_fact(365_817e6, year=2021, period_end=date(2021, 9, 25))
    draft = answered(
        "overall percent change in Apple's revenue from fiscal 2021 to fiscal 2023",
        PeriodSelection(period_type="annual", fiscal_years=[2021, 2022, 2023]),
        AskedOperation(kind="change", text="overall change", as_percent=True, in_units=False),
        apple_2021,
        APPLE_2022,
        APPLE_2023,
    )
    assert draft.answer.startswith("From fiscal 2021 to fiscal 2023, Apple's revenue"), draft.answer
    assert "4.8%" in draft.answer
    validated = validate_draft(draft)
    assert validated.validation.passed, validated.validation.issues


@pytest.mark.parametrize(
    "question",
    [
        "Apple revenue FY2023, round your answer to one decimal place",
        "Apple revenue growth from FY2022 to FY2023, in units of percents",
        "Please state the answer in USD millions: Apple's FY2023 revenue",
    ],
)
def test_how_the_answer_is_to_be_given_is_no_reason_to_refuse(question: str) -> None:
    route = route_question(question, DIRECTORY)
    assert route.intent in {"metric_lookup", "metric_trend"}, route.understood.not_understood
    assert route.understood.covered


def test_a_change_asked_as_yes_or_no_is_answered_yes_or_no_with_the_change_behind_it() -> None:
    operation, _ = read_operation("Has Apple's revenue increased from 2022 to 2023?", 1, 2, 1)
    assert operation is not None and operation.yes_no_direction == "up"
    assert operation.as_percent and operation.in_units
    draft = answered(
        "Has Apple's revenue increased from fiscal 2022 to fiscal 2023?",
        PeriodSelection(period_type="annual", fiscal_years=[2022, 2023]),
        operation,
        APPLE_2022,
        APPLE_2023,
    )
    assert draft.answer.startswith("No: Apple's revenue fell from fiscal 2022 to fiscal 2023."), (
        draft.answer
    )
    assert "changed by -$11.0 billion" in draft.answer
    validated = validate_draft(draft)
    assert validated.validation.passed, validated.validation.issues


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("R&D and SG&A combined", "sum"),
        ("research and development plus selling expense", "sum"),
        ("the sum of the two", "sum"),
        ("the difference between gross profit and operating income", "difference"),
        ("gross profit minus operating income", "difference"),
    ],
)
def test_figures_of_one_company_added_or_subtracted_are_an_operation_across_them(
    question: str, kind: str
) -> None:
    operation, spans = read_operation(question, companies=1, periods=1, metrics=2)
    assert operation is not None and spans
    assert operation.kind == kind


def test_two_figures_named_under_the_total_are_two_figures_not_a_sum() -> None:
    assert read_operation("the total revenue and net income", 1, 1, metrics=2) == (None, [])
    # Across years, "how much more" asks how each figure changed, not their difference.
    assert read_operation("how much more R&D and SG&A than in 2022", 1, 2, metrics=2) == (None, [])


def _metrics_answered(question: str, operation: AskedOperation, *facts):  # type: ignore[no-untyped-def]
    metrics = list(dict.fromkeys(fact.metric for fact in facts))
    arguments = GetFinancialMetricsArgs(symbols=["AAPL"], metrics=metrics)
    route = RouteDecided(
        question=question,
        intent="metric_lookup",
        tool_calls=[ToolCall.of(arguments)],
        understood=understanding(
            {"AAPL": "Apple"},
            metrics,
            periods=PeriodSelection(period_type="annual", fiscal_years=[2015]),
            operation=operation,
        ),
    )
    result = ToolResult(
        tool="get_financial_metrics",
        arguments=arguments,
        facts=list(facts),
        sources=[Source(source_id=f.source_id, label="10-K", form="10-K", page=42) for f in facts],
    )
    return draft_answer(ToolsCompleted(route=route, results=[result]))


def _cell(value: float, metric: str) -> Fact:
    # A figure read from the 10-K's income statement: cited by its page.
    return make_fact(
        value, year=2015, period_end=date(2015, 9, 26), metric=metric, source_id="doc:d1:p42"
    )


def test_figures_added_are_computed_said_first_in_the_statements_scale_and_validate() -> None:
    draft = _metrics_answered(
        "In fiscal 2015, what did Apple spend on R&D and SG&A combined?",
        AskedOperation(kind="sum", text="combined"),
        _cell(8_067e6, "research_and_development"),
        _cell(14_329e6, "selling_general_and_administrative"),
    )
    assert draft.answer.startswith(
        "Apple's research and development and selling general and administrative combined in "
        "fiscal 2015"
    ), draft.answer
    first = draft.answer.split(". ")[0]
    assert "$22.4 billion, or $22,396 million" in first
    assert "$8,067 million" in first and "$14,329 million" in first
    validated = validate_draft(draft)
    assert validated.validation.passed, validated.validation.issues
    assert not validated.validation.repairs


def test_one_figure_less_another_is_computed_in_the_order_named_and_validates() -> None:
    draft = _metrics_answered(
        "gross profit less operating income in fiscal 2015",
        AskedOperation(kind="difference", text="less"),
        make_fact(93_626e6, year=2015, metric="gross_profit"),
        make_fact(71_230e6, year=2015, metric="operating_income"),
    )
    assert draft.answer.startswith(
        "Apple's gross profit less operating income in fiscal 2015 came to $22.4 billion"
    ), draft.answer
    validated = validate_draft(draft)
    assert validated.validation.passed, validated.validation.issues


@pytest.mark.parametrize(
    "question",
    [
        "Did Apple's long-term debt increase in fiscal 2023?",
        "Did Apple's long-term debt double in fiscal 2023?",
    ],
)
def test_a_balance_moving_in_a_year_is_that_years_end_against_the_year_befores(
    question: str,
) -> None:
    route = route_question(question, DIRECTORY)

    (call,) = route.tool_calls
    assert call.arguments.fiscal_years == [2022, 2023]  # type: ignore[union-attr]
    assert route.understood.operation is not None
    assert route.understood.operation.kind == "change"


@pytest.mark.parametrize(
    "question",
    [
        "Apple free cash flow for 2023: operating cash flow minus capital expenditures",
        "Work out Apple's 2023 free cash flow as operating cash flow less capex, in millions",
    ],
)
def test_a_figure_explained_by_its_own_inputs_is_that_figure(question: str) -> None:
    route = route_question(question, DIRECTORY)

    assert route.intent == "metric_lookup"
    (call,) = route.tool_calls
    assert call.arguments.metrics == ["free_cash_flow"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "question",
    [
        "Apple 2023: add share repurchases and dividends paid - the total cash returned?",
        "total cash returned by Apple in 2023, i.e. buybacks plus dividends paid",
    ],
)
def test_parts_named_beside_their_whole_are_the_whole_and_a_dash_is_no_subtraction(
    question: str,
) -> None:
    route = route_question(question, DIRECTORY)

    (call,) = route.tool_calls
    assert call.arguments.metrics == ["capital_returned"]  # type: ignore[union-attr]
    assert route.understood.operation is None
