"""Figures asked of a filing come from that filing's own statements, each cell cited by
its page and shown as the statement writes it; where a statement and the XBRL data
disagree, the answer says both, and the validator holds each to its source."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from services.answerer.formatting import compose_metric_answer
from services.router.filing_reference import filing_named
from services.router.question_formula import question_formula
from services.tools.financial_metrics import with_statements
from services.tools.statement_facts import rounding_of, statement_facts, statement_records
from services.validator.checking import check_answer
from shared.contracts.tool_results import Fact, Source
from shared.metric_resolver import MetricResolver
from shared.tools import AsFiled, GetFinancialMetricsArgs
from shared.value_formatting import format_as_stated

APPLE_FY2016_10K = "11111111-1111-1111-1111-111111111111"
APPLE_FY2017_10K = "22222222-2222-2222-2222-222222222222"


def statement_row(
    document_id: str, document_year: int, fiscal_year: int, value: float, page: int
) -> dict[str, Any]:
    """A statement_figures row as STATEMENT_FIGURES_SQL returns it: Apple's operating cash
    flow for `fiscal_year`, as the 10-K for `document_year` states it on `page`."""
    return {
        "symbol": "AAPL",
        "metric": "operating_cash_flow",
        "statement": "cash_flow",
        "period_end": date(fiscal_year, 9, 24),
        "months": 12,
        "fiscal_year": fiscal_year,
        "value": value,
        "unit": "USD",
        "page": page,
        "document_id": document_id,
        "title": f"Apple 10-K FY{document_year}",
        "form": "10-K",
        "filed": date(document_year, 11, 1),
        "document_period_end": date(document_year, 9, 30),
        "document_fiscal_year": document_year,
        "document_fiscal_quarter": None,
        "company": "Apple",
    }


# Newest filing first, as the query orders them. The 2017 10-K states fiscal 2016 as the
# 2016 10-K did; the XBRL data holds a later restatement.
ROWS = [
    statement_row(APPLE_FY2017_10K, 2017, 2016, 65_824_000_000, 46),
    statement_row(APPLE_FY2016_10K, 2016, 2016, 65_824_000_000, 40),
]
XBRL_SOURCE = Source(
    source_id="sec:0000320193-18-000145:NetCashProvidedByUsedInOperatingActivities",
    label="Apple 10-K FY2018",
    form="10-K",
    accession="0000320193-18-000145",
)
XBRL_FACT = Fact(
    symbol="AAPL",
    company="Apple",
    metric="operating_cash_flow",
    metric_label="Operating cash flow",
    period="FY2016",
    fiscal_year=2016,
    period_end=date(2016, 9, 24),
    value=66_231_000_000,
    unit="USD",
    source_id=XBRL_SOURCE.source_id,
)
ASKED = {("AAPL", "operating_cash_flow", 2016)}


def arguments(as_filed: AsFiled | None) -> GetFinancialMetricsArgs:
    return GetFinancialMetricsArgs(
        symbols=["AAPL"], metrics=["operating_cash_flow"], fiscal_years=[2016], as_filed=as_filed
    )


def as_filed_in_2017(sources: dict[str, Source]) -> tuple[list[Fact], list[Fact]]:
    """Fiscal 2016's operating cash flow asked as Apple's 2017 10-K states it."""
    return with_statements(
        [XBRL_FACT.model_copy()],
        sources,
        ROWS,
        arguments(AsFiled(form="10-K", fiscal_year=2017)),
        ASKED,
    )


@pytest.mark.parametrize(
    ("question", "form", "year"),
    [
        (
            "Looking at Apple's fiscal 2017 10-K, what was operating cash flow in fiscal 2016?",
            "10-K",
            2017,
        ),
        ("In Amazon's 2017 annual report, what cost of sales is shown for 2016?", "10-K", 2017),
        ("msft accounts payable at june 30 2022 (FY22 10-K)", "10-K", 2022),
        ("Apple's revenue in the 10-K for fiscal 2019", "10-K", 2019),
        ("What was Apple's net income for fiscal 2015 according to its 10-K?", "10-K", None),
        ("Apple's revenue in its latest quarterly report", "10-Q", None),
        ("According to the filing, what was Amazon's accounts payable in 2019?", None, None),
        ("Amazon's inventories on its balance sheet at the end of 2017", None, None),
    ],
)
def test_a_question_names_the_filing_its_figures_come_from(
    question: str, form: str | None, year: int | None
) -> None:
    named = filing_named(question)
    assert named is not None
    assert (named.form, named.fiscal_year) == (form, year)


@pytest.mark.parametrize(
    "question",
    ["What was Apple's revenue in fiscal 2023?", "Apple's gross margin trend since 2019"],
)
def test_a_question_that_names_no_filing_has_none(question: str) -> None:
    assert filing_named(question) is None


def test_a_figure_asked_of_a_filing_is_that_filings_cell_with_its_page() -> None:
    sources: dict[str, Source] = {XBRL_SOURCE.source_id: XBRL_SOURCE}
    facts, taken = as_filed_in_2017(sources)
    [shown] = facts
    assert taken == [shown]
    assert shown.value == 65_824_000_000
    assert sources[shown.source_id].page == 46  # the 2017 10-K's page, not the 2016 one's
    assert shown.differs is not None and shown.differs.value == 66_231_000_000
    assert shown.differs.source_id == XBRL_SOURCE.source_id


def test_without_a_year_a_figure_as_filed_is_its_periods_own_filings() -> None:
    sources: dict[str, Source] = {}
    facts, _ = with_statements([], sources, ROWS, arguments(AsFiled(form="10-K")), ASKED)
    [shown] = facts
    assert sources[shown.source_id].page == 40
    assert shown.differs is None  # no XBRL figure to differ from


def test_without_a_filing_named_the_xbrl_figure_stands_and_carries_the_statements() -> None:
    sources: dict[str, Source] = {XBRL_SOURCE.source_id: XBRL_SOURCE}
    facts, taken = with_statements([XBRL_FACT.model_copy()], sources, ROWS, arguments(None), ASKED)
    [shown] = facts
    assert taken == []
    assert shown.source_id == XBRL_SOURCE.source_id
    assert shown.differs is not None and shown.differs.value == 65_824_000_000
    assert sources[shown.differs.source_id].page == 46


def test_figures_that_differ_only_by_the_statements_rounding_agree() -> None:
    rounded = [statement_row(APPLE_FY2017_10K, 2017, 2016, 66_231_000_000, 46)]
    precise = XBRL_FACT.model_copy(update={"value": 66_231_400_000})
    sources: dict[str, Source] = {}
    facts, taken = with_statements([precise], sources, rounded, arguments(None), ASKED)
    [shown] = facts
    assert shown.differs is None
    # Alike, the statement's cell is shown: the same figure, cited by its page.
    assert taken == [shown] and sources[shown.source_id].page == 46
    assert rounding_of(66_231_000_000, "USD") == 500_000
    assert rounding_of(23.01, "USD/share") == 0.005


def test_a_statement_figure_is_written_as_the_statement_writes_it() -> None:
    assert format_as_stated(16_047_000_000, "USD") == "$16,047 million"
    assert format_as_stated(-16_861_000_000, "USD") == "-$16,861 million"
    assert format_as_stated(5_250_000, "USD") == "$5,250 thousand"
    assert format_as_stated(23.01, "USD/share") == "$23.01"


def test_the_answer_says_both_figures_and_the_validator_holds_each_to_its_source() -> None:
    sources: dict[str, Source] = {XBRL_SOURCE.source_id: XBRL_SOURCE}
    facts, _ = as_filed_in_2017(sources)
    text, citations = compose_metric_answer(facts, list(sources.values()), [])
    assert "was $65.8 billion ($65,824 million as stated, 10-K, page 46)" in text
    assert "SEC's XBRL data gives $66.2 billion (10-K, accession 0000320193-18-000145)" in text
    assert {c.source_id for c in citations} == {facts[0].source_id, XBRL_SOURCE.source_id}
    assert check_answer(text, facts, citations, list(sources.values())).passed
    # A third figure stands in neither source.
    wrong = text.replace("$66.2 billion", "$61.2 billion")
    assert not check_answer(wrong, facts, citations, list(sources.values())).passed


def quarterly_report_row(
    metric: str, period_end: date, months: int | None, fiscal_year: int, value: float
) -> dict[str, Any]:
    """A row of Apple's 10-Q for the third quarter of fiscal 2023 (ended July 1, 2023)."""
    return {
        **statement_row(APPLE_FY2017_10K, 2023, fiscal_year, value, 4),
        "metric": metric,
        "period_end": period_end,
        "months": months,
        "form": "10-Q",
        "document_period_end": date(2023, 7, 1),
        "document_fiscal_quarter": 3,
    }


def test_a_quarterly_reports_columns_are_its_quarter_the_same_quarter_last_year_and_years() -> None:
    rows = [
        quarterly_report_row("revenue", date(2023, 7, 1), 3, 2023, 81_797_000_000),
        quarterly_report_row("revenue", date(2022, 6, 25), 3, 2022, 82_959_000_000),
        quarterly_report_row("revenue", date(2023, 7, 1), 9, 2023, 281_363_000_000),
        quarterly_report_row("inventory", date(2023, 7, 1), None, 2023, 7_351_000_000),
        quarterly_report_row("inventory", date(2022, 9, 24), None, 2022, 4_946_000_000),
    ]
    records, _ = statement_records(rows)
    periods = {(r.metric, r.period_type, r.fiscal_year, r.fiscal_quarter): r.value for r in records}
    assert periods == {
        ("revenue", "quarterly", 2023, 3): 81_797_000_000,
        ("revenue", "quarterly", 2022, 3): 82_959_000_000,
        # Nine months to date are no period finq keeps; the last year end's balance is that
        # fiscal year's, the quarter end's is the quarter's.
        ("inventory", "quarterly", 2023, 3): 7_351_000_000,
        ("inventory", "annual", 2022, 0): 4_946_000_000,
    }
    quarter = GetFinancialMetricsArgs(
        symbols=["AAPL"],
        metrics=["revenue"],
        period="quarterly",
        fiscal_years=[2023],
        fiscal_quarters=[3],
        as_filed=AsFiled(form="10-Q"),
    )
    [fact], _ = statement_facts(rows, quarter, {("AAPL", "revenue", 2023)})
    assert (fact.period, fact.fiscal_quarter, fact.value) == ("Q3 FY2023", 3, 81_797_000_000)


def amazon_row(metric: str, fiscal_year: int, value: float, page: int) -> dict[str, Any]:
    """A figure of Amazon's 10-K for 2017, as its statements state it."""
    return {
        **statement_row(APPLE_FY2017_10K, 2017, fiscal_year, value, page),
        "symbol": "AMZN",
        "metric": metric,
        "period_end": date(fiscal_year, 12, 31),
        "months": None if metric in ("accounts_payable", "inventory") else 12,
        "company": "Amazon",
    }


def test_a_figure_the_question_defines_is_computed_by_its_formula_from_the_cells() -> None:
    question = (
        "What is Amazon's FY2017 days payable outstanding (DPO)? DPO is defined as: 365 * "
        "(average accounts payable between FY2016 and FY2017) / (FY2017 COGS + change in "
        "inventory between FY2016 and FY2017). Round your answer to two decimal places."
    )
    defined = question_formula(question, MetricResolver.from_catalog())
    assert defined is not None
    assert defined.formula == (
        "365 * (avg(accounts_payable)) / (cost_of_revenue + (inventory - inventory[-1]))"
    )
    rows = [
        amazon_row("accounts_payable", 2017, 34_616_000_000, 40),
        amazon_row("accounts_payable", 2016, 25_309_000_000, 40),
        amazon_row("inventory", 2017, 16_047_000_000, 40),
        amazon_row("inventory", 2016, 11_461_000_000, 40),
        amazon_row("cost_of_revenue", 2017, 111_934_000_000, 38),
    ]
    args = GetFinancialMetricsArgs(
        symbols=["AMZN"],
        metrics=["days_payables_outstanding"],
        fiscal_years=[2017],
        formula=defined.formula,
    )
    [fact], sources = statement_facts(rows, args, {("AMZN", "days_payables_outstanding", 2017)})
    assert round(fact.value, 2) == 93.86  # FinanceBench's answer
    assert {item.term for item in fact.inputs} == {
        "accounts_payable",
        "accounts_payable[-1]",
        "cost_of_revenue",
        "inventory",
        "inventory[-1]",
    }
    assert {source.page for source in sources} == {38, 40}
    text, citations = compose_metric_answer([fact], sources, [])
    assert "93.9 days" in text and "$34,616 million" in text and "$111,934 million" in text
    assert check_answer(text, [fact], citations, sources).passed


def test_a_definition_with_a_term_finq_cannot_name_is_not_read() -> None:
    resolver = MetricResolver.from_catalog()
    assert question_formula("X is defined as: revenue / number of stores.", resolver) is None
    assert question_formula("What was Apple's revenue in 2023?", resolver) is None
