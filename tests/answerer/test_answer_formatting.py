"""How the answerer words figures and cites their sources."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from services.answerer.formatting import arithmetic, compose_metric_answer
from shared.contracts.tool_results import Fact, FormulaInput, Source
from shared.english import possessive
from shared.value_formatting import format_money, format_per_share, format_value
from tests.helpers import make_fact

APPLE_ACCESSION = "0000320193-23-000106"
APPLE_TAG = "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"


def fact(value: float, *, source_id: str = "sec:apple-fy2023-revenue", **fields: Any) -> Fact:
    return make_fact(value, source_id=source_id, **fields)


def source(
    source_id: str = "sec:apple-fy2023-revenue",
    accession: str | None = APPLE_ACCESSION,
    tag: str | None = APPLE_TAG,
    form: str | None = "10-K",
) -> Source:
    return Source(
        source_id=source_id,
        label="Apple 10-K FY2023",
        form=form,
        accession=accession,
        xbrl_tag=tag,
        filed=date(2023, 11, 3),
        url="https://www.sec.gov/Archives/edgar/data/320193/000032019323000106/",
    )


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (383_285_000_000, "$383.3 billion"),
        (1_200_000_000_000, "$1.2 trillion"),
        (950_200_000, "$950.2 million"),
        (12_345, "$12,345"),
        (-1_200_000_000, "-$1.2 billion"),
        (999_960_000_000, "$1.0 trillion"),
    ],
)
def test_money_reads_in_words_at_one_decimal(value: float, shown: str) -> None:
    assert format_money(value) == shown


def test_money_takes_a_second_decimal_when_one_would_round_off_more_than_a_percent() -> None:
    # "$1.2 billion" for 1.24 billion is 3% off, past the validator's 2% cap.
    assert format_money(1_240_000_000) == "$1.24 billion"


@pytest.mark.parametrize(("value", "shown"), [(6.13, "$6.13"), (-0.11, "-$0.11"), (2.0, "$2.00")])
def test_per_share_amounts_show_cents(value: float, shown: str) -> None:
    assert format_per_share(value) == shown


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        (383_285_000_000, "USD", "$383.3 billion"),
        (6.13, "USD/share", "$6.13"),
        (44.1, "%", "44.1%"),
        (15_550_061_000, "shares", "15,550,061,000 shares"),
        (1.8, "x", "1.8×"),
    ],
)
def test_values_are_formatted_by_their_unit(value: float, unit: str, shown: str) -> None:
    assert format_value(value, unit) == shown


@pytest.mark.parametrize(
    ("name", "shown"), [("Apple", "Apple's"), ("NVIDIA", "NVIDIA's"), ("Walgreens", "Walgreens'")]
)
def test_possessives_follow_the_final_letter(name: str, shown: str) -> None:
    assert possessive(name) == shown


def test_a_fact_becomes_one_cited_sentence() -> None:
    text, citations = compose_metric_answer([fact(383_285_000_000)], [source()], [])

    assert text == (
        "Apple's revenue in fiscal 2023 (ended 2023-09-30) was $383.3 billion "
        "(10-K, accession 0000320193-23-000106)."
    )
    assert len(citations) == 1
    citation = citations[0]
    assert citation.label == f"Apple 10-K FY2023, accession {APPLE_ACCESSION} ({APPLE_TAG})"
    assert citation.source_id == "sec:apple-fy2023-revenue"
    assert citation.form == "10-K"
    assert citation.accession == APPLE_ACCESSION
    assert citation.url is not None


def test_sentences_keep_the_order_given_and_each_source_is_cited_once() -> None:
    facts = [
        fact(60_922_000_000, company="NVIDIA", symbol="NVDA", year=2024, source_id="n"),
        fact(383_285_000_000),
        fact(26_974_000_000, company="NVIDIA", symbol="NVDA", year=2023, source_id="n"),
    ]
    sources = [source(), source("n", accession="0001045810-24-000029")]

    text, citations = compose_metric_answer(facts, sources, [])

    assert text.index("NVIDIA's revenue in fiscal 2024") < text.index("Apple's revenue")
    assert text.index("Apple's revenue") < text.index("NVIDIA's revenue in fiscal 2023")
    assert [c.source_id for c in citations] == ["n", "sec:apple-fy2023-revenue"]


def test_missing_items_are_said_plainly_after_the_figures() -> None:
    text, _ = compose_metric_answer(
        [fact(383_285_000_000)], [source()], ["Tesla's revenue in fiscal 2031"]
    )

    assert text.endswith(" No figure is held for Tesla's revenue in fiscal 2031.")


def test_a_derived_figure_cites_its_source_label_without_a_filing_in_the_prose() -> None:
    derived = source("derived:AAPL:fcf:FY2023", accession=None, tag=None, form=None)

    text, citations = compose_metric_answer(
        [fact(99_584_000_000, metric="free_cash_flow", source_id=derived.source_id)],
        [derived],
        [],
    )

    assert text.endswith("was $99.6 billion.")
    assert citations[0].label == derived.label


def test_a_fact_whose_source_was_not_fetched_is_stated_but_not_cited() -> None:
    text, citations = compose_metric_answer([fact(383_285_000_000)], [], [])

    assert text.endswith("was $383.3 billion.")
    assert citations == []


def test_nothing_found_and_nothing_missing_says_so() -> None:
    text, citations = compose_metric_answer([], [], [])

    assert text == "No figures were found for this question."
    assert citations == []


def test_tiny_amounts_keep_enough_digits_to_stay_accurate() -> None:
    assert format_per_share(0.0042) == "$0.0042"
    assert format_value(0.012, "%") == "0.012%"


# --- derived figures show their arithmetic ---------------------------------------------------


def term(
    name: str, label: str, value: float, unit: str = "USD", *, year: int = 2023
) -> FormulaInput:
    """An input as the metrics tool sends it; `name` is the term ("revenue[-1]")."""
    return FormulaInput(
        term=name,
        metric=name.split("[")[0],
        metric_label=label,
        value=value,
        unit=unit,
        period=f"FY{year}",
        fiscal_year=year,
    )


def derived(
    metric: str, label: str, value: float, unit: str, formula: str, *inputs: FormulaInput
) -> Fact:
    built = make_fact(value, metric=metric, unit=unit, source_id=f"derived:AAPL:{metric}:FY2023")
    return built.model_copy(
        update={"metric_label": label, "formula": formula, "inputs": list(inputs)}
    )


GROSS_MARGIN = derived(
    "gross_margin",
    "Gross margin",
    44.13112957720756,
    "%",
    "gross_profit / revenue * 100",
    term("gross_profit", "Gross profit", 169_148_000_000),
    term("revenue", "Revenue", 383_285_000_000),
)


def test_a_derived_figure_is_followed_by_its_arithmetic() -> None:
    text, _ = compose_metric_answer([GROSS_MARGIN], [], [])

    assert text == (
        "Apple's gross margin in fiscal 2023 (ended 2023-09-30) was 44.1%: "
        "gross profit $169.1 billion / revenue $383.3 billion × 100 = 44.1%."
    )


def test_the_arithmetic_keeps_the_derived_figures_citation() -> None:
    cited = source(GROSS_MARGIN.source_id, accession=None, tag=None, form=None)

    _, citations = compose_metric_answer([GROSS_MARGIN], [cited], [])

    assert [c.source_id for c in citations] == [GROSS_MARGIN.source_id]


def test_an_average_names_both_balances_and_the_years_they_close() -> None:
    roe = derived(
        "return_on_equity",
        "Return on equity",
        171.94951160275843,
        "%",
        "net_income / ((stockholders_equity + stockholders_equity[-1]) / 2) * 100",
        term("net_income", "Net income", 96_995_000_000),
        term("stockholders_equity", "Stockholders' equity", 62_146_000_000),
        term("stockholders_equity[-1]", "Stockholders' equity", 50_672_000_000, year=2022),
    )

    assert arithmetic(roe) == (
        "net income $97.0 billion / average stockholders' equity ($62.1 billion at the end of "
        "fiscal 2023 and $50.7 billion at the end of fiscal 2022) × 100 = 171.9%"
    )


def test_growth_brackets_what_it_must_and_names_the_earlier_year() -> None:
    growth = derived(
        "revenue_growth",
        "Revenue growth",
        -2.800460530319939,
        "%",
        "(revenue / revenue[-1] - 1) * 100",
        term("revenue", "Revenue", 383_285_000_000),
        term("revenue[-1]", "Revenue", 394_328_000_000, year=2022),
    )
    cagr = derived(
        "revenue_cagr_5y",
        "Revenue CAGR (five years)",
        7.6,
        "%",
        "((revenue / revenue[-5]) ** (1 / 5) - 1) * 100",
        term("revenue", "Revenue", 383_285_000_000),
        term("revenue[-5]", "Revenue", 265_595_000_000, year=2018),
    )

    assert arithmetic(growth) == (
        "(revenue $383.3 billion / fiscal 2022 revenue $394.3 billion − 1) × 100 = -2.8%"
    )
    assert arithmetic(cagr) == (
        "((revenue $383.3 billion / fiscal 2018 revenue $265.6 billion) ^ (1 / 5) − 1) × 100 = 7.6%"
    )


def test_per_share_ratio_and_share_count_inputs_show_their_units() -> None:
    pe = derived(
        "pe_ratio",
        "P/E ratio",
        24.62,
        "x",
        "period_end_price / eps_diluted",
        term("period_end_price", "Share price at period end", 150.43, "USD/share"),
        term("eps_diluted", "Diluted EPS", 6.11, "USD/share"),
    )
    peg = derived(
        "peg_ratio",
        "PEG ratio",
        -9.3,
        "x",
        "pe_ratio / eps_growth",
        term("pe_ratio", "P/E ratio", 24.62, "x"),
        term("eps_growth", "EPS growth", -2.65, "%"),
    )

    assert arithmetic(pe) == "share price at period end $150.43 / diluted EPS $6.11 = 24.6×"
    assert arithmetic(peg) == "P/E ratio 24.6× / EPS growth -2.65% = -9.3×"


def test_a_stock_split_factor_is_bracketed_with_its_figure_and_says_what_it_is() -> None:
    market_cap = derived(
        "market_cap",
        "Market capitalization",
        1_918_034_000_000,
        "USD",
        "period_end_price * (shares_outstanding / 20)",
        term("period_end_price", "Share price at period end", 2_897.04, "USD/share"),
        term("shares_outstanding", "Shares outstanding", 13_242_000_000, "shares"),
    )
    book = derived(
        "book_value_per_share",
        "Book value per share",
        0.9,
        "USD/share",
        "stockholders_equity / (shares_outstanding * 28)",
        term("stockholders_equity", "Stockholders' equity", 22_297_000_000),
        term("shares_outstanding", "Shares outstanding", 888_325_973, "shares"),
    )

    assert arithmetic(market_cap) == (
        "share price at period end $2,897.04 × (shares outstanding 13.2 billion / 20 for stock "
        "splits) = $1.9 trillion"
    )
    assert arithmetic(book) == (
        "stockholders' equity $22.3 billion / (shares outstanding 888.3 million × 28 for stock "
        "splits) = $0.90"
    )


def test_a_formula_reduced_to_one_term_shows_it_without_repeating_the_result() -> None:
    cash = derived(
        "cash_and_short_term_investments",
        "Cash and short-term investments",
        9_352_000_000,
        "USD",
        "cash_and_equivalents",
        term("cash_and_equivalents", "Cash and cash equivalents", 9_352_000_000),
    )

    assert arithmetic(cash) == "cash and cash equivalents $9.4 billion"


def test_no_arithmetic_without_inputs_or_with_a_term_not_among_them() -> None:
    assert arithmetic(fact(383_285_000_000)) is None
    partial = GROSS_MARGIN.model_copy(update={"inputs": GROSS_MARGIN.inputs[:1]})

    text, _ = compose_metric_answer([partial], [], [])

    # Half an arithmetic would mislead; the figure alone is still right.
    assert text == "Apple's gross margin in fiscal 2023 (ended 2023-09-30) was 44.1%."
