"""The router's rules: companies, metrics and fiscal years found in plain questions."""

from __future__ import annotations

import pytest

from services.router.periods import find_fiscal_years
from services.router.routing import route_question
from services.router.rules import (
    EXAMPLE_QUESTION,
    METRIC_INTENTS,
    CompanyDirectory,
    CompanyEntry,
    find_metrics,
)
from shared.tools import (
    ALLOWED_TOOLS,
    GET_FINANCIAL_METRICS,
    GetFinancialMetricsArgs,
    ListMetricsArgs,
)

DIRECTORY = CompanyDirectory(
    (
        CompanyEntry("AAPL", "Apple", ("apple",)),
        CompanyEntry("NVDA", "NVIDIA", ("nvidia",)),
        CompanyEntry("GOOGL", "Alphabet", ("alphabet", "google")),
        CompanyEntry("TSLA", "Tesla", ("tesla", "tesla motors")),
        CompanyEntry("A", "Agilent", ("agilent",)),
    )
)


def plan(question: str) -> dict:
    """The arguments of the figures call the rules plan, as the wire carries them."""
    route = route_question(question, DIRECTORY)
    assert route.intent in METRIC_INTENTS, route.clarifying_question
    assert [call.tool for call in route.tool_calls] == [GET_FINANCIAL_METRICS]
    assert isinstance(route.tool_calls[0].arguments, GetFinancialMetricsArgs)
    return route.tool_calls[0].arguments.model_dump(mode="json")


@pytest.mark.parametrize(
    ("question", "symbols", "metrics", "years"),
    [
        ("What was Apple's revenue in fiscal 2023?", ["AAPL"], ["revenue"], [2023]),
        ("NVDA net income FY2024", ["NVDA"], ["net_income"], [2024]),
        ("Alphabet total assets 2023", ["GOOGL"], ["total_assets"], [2023]),
        ("$tsla top line fy23", ["TSLA"], ["revenue"], [2023]),
        ("google R&D in FY 2022", ["GOOGL"], ["research_and_development"], [2022]),
        ("aapl capex 2024", ["AAPL"], ["capital_expenditures"], [2024]),
        ("Tesla Motors diluted EPS 2021", ["TSLA"], ["eps_diluted"], [2021]),
        (
            "Apple revenue and net income 2022 and 2023",
            ["AAPL"],
            ["revenue", "net_income"],
            [2022, 2023],
        ),
        (
            "Compare NVIDIA and Apple operating cash flow in 2024",
            ["NVDA", "AAPL"],
            ["operating_cash_flow"],
            [2024],
        ),
    ],
)
def test_metric_questions_become_a_validated_plan(
    question: str, symbols: list[str], metrics: list[str], years: list[int]
) -> None:
    arguments = plan(question)
    assert arguments == {
        "symbols": symbols,
        "metrics": metrics,
        "period": "annual",
        "fiscal_years": years,
    }
    GetFinancialMetricsArgs.model_validate(arguments)


def test_a_question_without_a_year_asks_for_the_latest_year_held() -> None:
    assert plan("What is Apple's net income?") == {
        "symbols": ["AAPL"],
        "metrics": ["net_income"],
        "period": "annual",
    }


def test_longer_metric_phrases_win_over_the_words_inside_them() -> None:
    assert find_metrics("operating cash flow") == ["operating_cash_flow"]
    assert find_metrics("cash and cash equivalents") == ["cash_and_equivalents"]
    assert find_metrics("gross profit") == ["gross_profit"]


def test_a_one_letter_ticker_counts_only_in_capitals_or_with_a_dollar_sign() -> None:
    assert DIRECTORY.find("is a revenue figure there for apple") == ["AAPL"]
    assert DIRECTORY.find("A revenue 2023") == ["A"]
    assert DIRECTORY.find("$a revenue 2023") == ["A"]


@pytest.mark.parametrize(
    ("text", "years"),
    [
        ("fiscal 2023", [2023]),
        ("FY2024", [2024]),
        ("FY 2021", [2021]),
        ("FY23", [2023]),
        ("in 2019 and 2020", [2019, 2020]),
        ("revenue of 383285 million", []),
    ],
)
def test_fiscal_years_are_read_in_their_common_forms(text: str, years: list[int]) -> None:
    assert find_fiscal_years(text) == years


def test_an_unrelated_question_is_refused_naming_what_finq_holds() -> None:
    route = route_question("Tell me a joke about cats", DIRECTORY)
    assert route.intent == "out_of_scope"
    assert route.tool_calls == []
    assert "Apple (AAPL)" in (route.capabilities or "")
    assert EXAMPLE_QUESTION in (route.capabilities or "")


def test_a_metric_without_a_company_asks_which_company() -> None:
    route = route_question("net income in 2023?", DIRECTORY)
    assert route.intent == "clarify"
    assert route.clarifying_question is not None
    assert route.clarifying_question.startswith("Which company's net income")


def test_a_company_without_a_metric_asks_which_figure() -> None:
    route = route_question("Tell me about Tesla", DIRECTORY)
    assert route.intent == "clarify"
    assert route.clarifying_question is not None
    assert "Which figure of Tesla" in route.clarifying_question


def test_every_planned_tool_is_allowed_for_its_intent() -> None:
    route = route_question("Apple revenue 2023", DIRECTORY)
    for call in route.tool_calls:
        assert call.tool in ALLOWED_TOOLS[route.intent]


def test_a_year_outside_the_schema_gets_a_clarifying_answer_not_a_failure() -> None:
    route = route_question("Apple revenue FY1850", DIRECTORY)
    assert route.intent == "clarify"
    assert route.clarifying_question is not None
    assert "could not look that up" in route.clarifying_question


@pytest.mark.parametrize(
    ("question", "arguments"),
    [
        (
            "AAPL stock price in 2023",
            {"symbol": "AAPL", "start": "2023-01-01", "end": "2023-12-31"},
        ),
        (
            "How did Apple's share price change from 2020 to 2022?",
            {"symbol": "AAPL", "start": "2020-01-01", "end": "2022-12-31"},
        ),
        (
            "What did NVDA close at on 2024-03-01?",
            {"symbol": "NVDA", "start": "2024-03-01", "end": "2024-03-01"},
        ),
        ("Google stock price", {"symbol": "GOOGL"}),
    ],
)
def test_price_questions_plan_a_price_lookup_over_their_window(
    question: str, arguments: dict
) -> None:
    route = route_question(question, DIRECTORY)
    assert route.intent == "price", route.clarifying_question
    assert [call.tool for call in route.tool_calls] == ["get_prices"]
    assert route.tool_calls[0].arguments.model_dump(mode="json") == arguments


@pytest.mark.parametrize(
    ("question", "arguments"),
    [
        (
            "When did Apple file its fiscal 2023 10-K?",
            {"symbol": "AAPL", "forms": ["10-K"], "fiscal_year": 2023, "limit": 10},
        ),
        ("NVIDIA's recent filings", {"symbol": "NVDA", "limit": 10}),
        ("Tesla quarterly reports", {"symbol": "TSLA", "forms": ["10-Q"], "limit": 10}),
    ],
)
def test_filing_questions_plan_a_filings_lookup(question: str, arguments: dict) -> None:
    route = route_question(question, DIRECTORY)
    assert route.intent == "filings", route.clarifying_question
    assert [call.tool for call in route.tool_calls] == ["get_recent_filings"]
    assert route.tool_calls[0].arguments.model_dump(mode="json") == arguments


def test_a_metric_question_with_a_year_is_not_taken_for_a_price_question() -> None:
    assert route_question("Apple revenue 2023", DIRECTORY).intent == "metric_lookup"
    assert route_question("Apple net income in FY2023", DIRECTORY).intent == "metric_lookup"


@pytest.mark.parametrize(
    ("question", "periods"),
    [
        (
            "Apple revenue Q1 FY2025",
            {"period": "quarterly", "fiscal_quarters": [1], "fiscal_years": [2025]},
        ),
        (
            "NVIDIA third quarter of 2024 net income",
            {"period": "quarterly", "fiscal_quarters": [3], "fiscal_years": [2024]},
        ),
        ("Alphabet fourth-quarter revenue", {"period": "quarterly", "fiscal_quarters": [4]}),
        ("Apple revenue 2019 through 2023", {"fiscal_years": [2019, 2020, 2021, 2022, 2023]}),
        ("Tesla net income from FY2018 to FY2020", {"fiscal_years": [2018, 2019, 2020]}),
        ("Apple revenue over the last three fiscal years", {"last": 3}),
        ("NVDA quarterly revenue", {"period": "quarterly", "last": 4}),
        ("NVDA revenue over the past 6 quarters", {"period": "quarterly", "last": 6}),
        ("Apple TTM revenue", {"period": "ttm"}),
        ("Apple revenue trailing twelve months", {"period": "ttm"}),
    ],
)
def test_metric_questions_name_their_periods(question: str, periods: dict) -> None:
    arguments = plan(question)
    GetFinancialMetricsArgs.model_validate(arguments)
    del arguments["symbols"], arguments["metrics"]
    assert arguments == {"period": "annual", **periods}


@pytest.mark.parametrize(
    ("question", "metrics", "slips"),
    [
        ("What was Apple's reveune in fiscal 2023?", ["revenue"], {"reveune": "revenue"}),
        ("Apple gross margn 2023", ["gross_margin"], {"margn": "margin"}),
        (
            "Apple opearting margins and R&D in 2022",
            ["operating_margin", "research_and_development"],
            {"opearting": "operating"},
        ),
    ],
)
def test_misspelt_metric_words_are_put_right_and_the_reading_is_kept(
    question: str, metrics: list[str], slips: dict[str, str]
) -> None:
    route = route_question(question, DIRECTORY)
    assert plan(question)["metrics"] == metrics
    # The reading keeps the user's own words, for the answer to say what it assumed.
    assert route.understood.slips == slips


@pytest.mark.parametrize(
    ("question", "metrics", "periods"),
    [
        ("How much did Apple's sales grow in 2023?", ["revenue_growth"], {"fiscal_years": [2023]}),
        ("Apple year-over-year net income change FY2024", ["net_income_growth"], {}),
        (
            "How did NVIDIA's net income change from 2021 to 2024?",
            ["net_income", "net_income_growth"],
            {"fiscal_years": [2021, 2022, 2023, 2024]},
        ),
        ("Apple revenue CAGR over the last 5 years", ["revenue_cagr_5y"], {"last": 1}),
        ("Tesla EPS compound annual growth, last three years", ["eps_cagr_3y"], {"last": 1}),
        ("Apple total assets growth 2023", ["total_assets_growth"], {"fiscal_years": [2023]}),
    ],
)
def test_growth_questions_ask_for_the_growth_metric(
    question: str, metrics: list[str], periods: dict
) -> None:
    arguments = plan(question)
    assert arguments["metrics"] == metrics
    for key, value in periods.items():
        assert arguments[key] == value


def test_a_comparison_asks_for_every_company_in_one_call_and_says_it_compares() -> None:
    question = "Who had more revenue in fiscal 2023, Apple or NVIDIA?"
    route = route_question(question, DIRECTORY)
    assert plan(question)["symbols"] == ["AAPL", "NVDA"]
    assert route.understood.comparison is True
    assert route_question("Apple revenue 2023", DIRECTORY).understood.comparison is False


def test_a_company_with_a_figure_the_catalog_does_not_name_searches_its_filings() -> None:
    route = route_question("What was Apple's ceo salary in 2023?", DIRECTORY)
    assert route.intent == "document_search"
    assert route.understood.unknown_metric_phrases == ["ceo salary"]
    [call] = route.tool_calls
    assert call.tool == "search_documents"
    assert call.arguments.symbols == ["AAPL"]
    assert call.arguments.fiscal_year == 2023


@pytest.mark.parametrize(
    ("question", "category"),
    [
        ("What metrics do you have?", None),
        ("Which valuation ratios can I ask about?", "valuation"),
        ("list metrics", None),
        ("What can I ask?", None),
        ("Show me the liquidity metrics", "liquidity"),
        ("Which per-share figures do you know?", "per_share"),
    ],
)
def test_questions_about_the_catalog_list_metrics(question: str, category: str | None) -> None:
    route = route_question(question, DIRECTORY)
    assert route.intent == "list_metrics"
    assert [call.tool for call in route.tool_calls] == ["list_metrics"]
    assert route.tool_calls[0].arguments == ListMetricsArgs(category=category)
    assert route.tool_calls[0].arguments.model_dump(mode="json") == (
        {"category": category} if category else {}
    )


def test_a_figure_question_naming_metrics_is_not_a_catalog_question() -> None:
    assert route_question("Which figures show Apple revenue 2023?", DIRECTORY).intent == (
        "metric_lookup"
    )


def test_tool_arguments_resolve_metric_names_and_refuse_unknown_ones_naming_the_closest() -> None:
    args = GetFinancialMetricsArgs(
        symbols=["AAPL"], metrics=["P/E", "gross margn", "revenue", "Revenue"]
    )
    assert args.metrics == ["pe_ratio", "gross_margin", "revenue"]
    with pytest.raises(ValueError, match="'ceo salary' is not a metric finq knows; the closest"):
        GetFinancialMetricsArgs(symbols=["AAPL"], metrics=["ceo salary"])


@pytest.mark.parametrize(
    ("question", "years", "as_filed"),
    [
        # The year beside the filing's name is the filing's; the period asked is the other.
        (
            "Looking at Apple's fiscal 2017 10-K, how much cash did operating activities "
            "generate in fiscal 2016?",
            [2016],
            {"form": "10-K", "fiscal_year": 2017},
        ),
        # Alone, the filing's year is also the period asked.
        (
            "What was Apple's revenue in its 2023 annual report?",
            [2023],
            {"form": "10-K", "fiscal_year": 2023},
        ),
        ("Alphabet's goodwill on its balance sheet at the end of 2023", [2023], {}),
        ("What was Apple's revenue in fiscal 2023?", [2023], None),
    ],
)
def test_a_figure_asked_of_a_filing_is_asked_as_that_filing_states_it(
    question: str, years: list[int], as_filed: dict | None
) -> None:
    arguments = plan(question)
    assert arguments["fiscal_years"] == years
    assert arguments.get("as_filed") == as_filed


def test_one_figure_minus_another_that_the_catalog_subtracts_is_that_figure() -> None:
    arguments = plan("What is Apple's operating cash flow minus capex for fiscal 2024?")
    assert arguments["metrics"] == ["free_cash_flow"]


def test_a_year_earlier_beside_a_year_asks_both_years() -> None:
    arguments = plan(
        "Were Apple's inventories higher at the end of fiscal 2022 than a year earlier?"
    )
    assert arguments["fiscal_years"] == [2021, 2022]


@pytest.mark.parametrize(
    "question",
    [
        "How much revenue did LinkedIn bring Tesla in fiscal 2021?",
        "What were Apple's net sales in Germany for fiscal 2023?",
    ],
)
def test_a_name_nothing_reads_narrows_the_figure_to_a_search_of_the_filings(question: str) -> None:
    assert route_question(question, DIRECTORY).intent == "document_search"
