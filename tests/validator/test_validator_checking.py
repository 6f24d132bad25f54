"""How the validator reads figures out of an answer and checks them against fetched facts."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from services.answerer.formatting import compose_metric_answer
from services.validator.checking import check_answer
from services.validator.numbers import extract_dates, extract_numbers, extract_years
from shared.contracts.answers import Citation, Validation
from shared.contracts.tool_results import Fact, FormulaInput, Source
from tests.helpers import make_fact

APPLE_2023_ACCESSION = "0000320193-23-000106"
APPLE_2024_ACCESSION = "0000320193-24-000123"


def fact(value: float, *, year: int, period_end: date, **fields: Any) -> Fact:
    return make_fact(value, year=year, period_end=period_end, **fields)


def source(source_id: str, accession: str, tag: str, filed: date) -> Source:
    return Source(
        source_id=source_id,
        label=source_id,
        form="10-K",
        accession=accession,
        xbrl_tag=tag,
        filed=filed,
        url=f"https://www.sec.gov/Archives/edgar/data/320193/{accession.replace('-', '')}/",
    )


REVENUE_TAG = "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"
APPLE_2023 = fact(383_285_000_000, year=2023, period_end=date(2023, 9, 30))
APPLE_2024 = fact(391_035_000_000, year=2024, period_end=date(2024, 9, 28))
APPLE_SOURCES = [
    source("sec:AAPL:revenue:2023", APPLE_2023_ACCESSION, REVENUE_TAG, date(2023, 11, 3)),
    source("sec:AAPL:revenue:2024", APPLE_2024_ACCESSION, REVENUE_TAG, date(2024, 11, 1)),
]
APPLE_FACTS = [APPLE_2023, APPLE_2024]


def check(answer: str, citations: list[Citation] | None = None) -> Validation:
    return check_answer(answer, APPLE_FACTS, citations or [], APPLE_SOURCES)


# --- reading numbers ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "kind"),
    [
        ("$383.3 billion", 383.3e9, "money"),
        ("$383.3B", 383.3e9, "money"),
        ("$1.2 trillion", 1.2e12, "money"),
        ("$1.2T", 1.2e12, "money"),
        ("383,285 million", 383_285e6, "plain"),
        ("$950.2 million", 950.2e6, "money"),
        ("$950.2M", 950.2e6, "money"),
        ("$6.13", 6.13, "per_share_or_plain"),
        ("44.1%", 44.1, "percent"),
        ("(1.2)", -1.2, "plain"),
        ("(1.2) billion", -1.2e9, "plain"),
        ("$(1.2) billion", -1.2e9, "money"),
        ("($1.2 billion)", -1.2e9, "money"),
        ("-$0.11", -0.11, "per_share_or_plain"),
        ("1,234", 1234, "plain"),
        ("12.5×", 12.5, "plain"),
    ],
)
def test_each_number_format_is_read_in_base_units(text: str, value: float, kind: str) -> None:
    [number] = extract_numbers(f"It was {text} that year.")

    assert number.text == text
    assert number.value == pytest.approx(value)
    assert number.kind == kind
    assert (number.start, number.end) == (7, 7 + len(text))


def test_shown_decimals_set_the_precision() -> None:
    [number] = extract_numbers("$383.3 billion")

    assert number.decimals == 1
    assert number.half_unit == pytest.approx(0.05e9)


@pytest.mark.parametrize(
    "text",
    [
        "ended 2023-09-30",
        f"accession {APPLE_2023_ACCESSION}",
        f"tagged {REVENUE_TAG}",
        "as filed[1]",
        "in its 10-K",
        "fiscal 2023",
        "FY2023",
        "FY 2023",
        "against the S&P 500",
        "the Russell 2000",
        "the Nasdaq-100",
    ],
)
def test_dates_accessions_tags_footnotes_forms_years_and_indexes_are_not_numbers(
    text: str,
) -> None:
    assert extract_numbers(text) == []


def test_years_are_found_with_their_offsets() -> None:
    text = "In fiscal 2023 and FY2024 and FY 2022."

    years = extract_years(text)

    assert [(y.year, text[y.start : y.end]) for y in years] == [
        (2023, "2023"),
        (2024, "FY2024"),
        (2022, "FY 2022"),
    ]


def test_a_dates_year_is_not_a_separate_year_mention() -> None:
    text = "The year ended 2023-09-30."

    assert [d.value for d in extract_dates(text)] == [date(2023, 9, 30)]
    assert extract_years(text) == []


# --- checking answers ---------------------------------------------------------------


def test_a_right_figure_in_its_year_passes() -> None:
    validation = check("Apple's revenue in fiscal 2023 was $383.3 billion.")

    assert validation.passed
    assert validation.severity == "none"
    assert validation.issues == []


def test_right_value_under_wrong_year_is_caught() -> None:
    validation = check("Apple's revenue in fiscal 2024 was $383.3 billion.")

    assert not validation.passed
    assert validation.severity == "high"
    [issue] = validation.issues
    assert issue.kind == "number"
    assert issue.text == "$383.3 billion"
    assert issue.message.startswith(
        "$383.3 billion does not match any fetched figure for Apple in fiscal 2024"
    )


def test_right_value_under_wrong_company_is_caught() -> None:
    nvidia = fact(
        60_922_000_000, year=2024, period_end=date(2024, 1, 28), company="NVIDIA", symbol="NVDA"
    )

    validation = check_answer(
        "NVIDIA's revenue in fiscal 2023 was $383.3 billion.",
        [*APPLE_FACTS, nvidia],
        [],
        APPLE_SOURCES,
    )

    assert not validation.passed
    assert validation.issues[0].kind == "number"


def test_a_figure_shown_to_whole_billions_must_still_be_within_half_a_billion() -> None:
    # $390 billion is 0.26% from 391.035 billion, but shown to whole billions it claims
    # 389.5-390.5 billion, which excludes the fact.
    assert not check("Apple's revenue in fiscal 2024 was $390 billion.").passed
    assert check("Apple's revenue in fiscal 2024 was $391 billion.").passed


def test_precision_is_never_looser_than_two_percent() -> None:
    # "$1 trillion" claims 0.5-1.5 trillion, but the figure it stands for is 3% away.
    trillion = fact(1_030_000_000_000, year=2023, period_end=date(2023, 9, 30))

    validation = check_answer("Revenue in fiscal 2023 was $1 trillion.", [trillion], [], [])

    assert not validation.passed


def test_the_same_value_in_another_notation_passes() -> None:
    assert check("Apple's revenue in FY2023 was 383,285 million.").passed
    assert check("Apple's FY2024 revenue: $391.0B.").passed


def test_a_figure_matching_no_fact_fails_high() -> None:
    validation = check("Apple's revenue in fiscal 2023 was $412.7 billion.")

    assert validation.severity == "high"
    assert not validation.passed


def test_a_fabricated_accession_fails_as_critical() -> None:
    validation = check(
        "Apple's revenue in fiscal 2023 was $383.3 billion (10-K, accession 0000320193-23-999999)."
    )

    assert validation.severity == "critical"
    assert not validation.passed
    assert [issue.kind for issue in validation.issues] == ["citation"]


def test_a_citation_of_an_unfetched_source_fails_as_critical() -> None:
    bogus = Citation(source_id="sec:made-up", label="Apple 10-K FY2023")

    validation = check("Apple's revenue in fiscal 2023 was $383.3 billion.", [bogus])

    assert validation.severity == "critical"
    assert validation.issues[0].text == "sec:made-up"


def test_an_unknown_year_fails_medium() -> None:
    validation = check("Apple has reported revenue since 1980.")

    assert not validation.passed
    assert validation.severity == "medium"
    [issue] = validation.issues
    assert (issue.kind, issue.text) == ("year", "1980")


def test_an_unknown_date_fails_medium() -> None:
    validation = check("Apple's fiscal 2023 ended 2023-10-31.")

    assert validation.severity == "medium"
    assert validation.issues[0].kind == "date"


def test_a_filing_date_is_a_known_date() -> None:
    assert check("Apple filed its fiscal 2023 10-K on 2023-11-03.").passed


def test_a_net_loss_may_be_stated_as_a_positive_amount() -> None:
    loss = fact(
        -1_200_000_000,
        year=2023,
        period_end=date(2023, 12, 31),
        company="Rivian",
        symbol="RIVN",
        metric="net_income",
    )

    assert check_answer(
        "Rivian had a net loss of $1.2 billion in fiscal 2023.", [loss], [], []
    ).passed
    assert not check_answer("Rivian earned $1.2 billion in fiscal 2023.", [loss], [], []).passed


def test_the_clarifying_text_passes() -> None:
    validation = check_answer("Which company do you mean, and for which fiscal year?", [], [], [])

    assert validation.passed
    assert validation.severity == "none"


def test_a_composed_answer_always_passes() -> None:
    nvidia_eps = fact(
        2.94,
        year=2024,
        period_end=date(2024, 1, 28),
        company="NVIDIA",
        symbol="NVDA",
        metric="eps_diluted",
        unit="USD/share",
    )
    intel_loss = fact(
        -16_661_000_000,
        year=2024,
        period_end=date(2024, 12, 28),
        company="Intel",
        symbol="INTC",
        metric="net_income",
    )
    intel_eps = fact(
        -3.88,
        year=2024,
        period_end=date(2024, 12, 28),
        company="Intel",
        symbol="INTC",
        metric="eps_diluted",
        unit="USD/share",
    )
    small = fact(1_240_000_000, year=2023, period_end=date(2023, 9, 30), metric="other_income")
    facts = [APPLE_2023, APPLE_2024, nvidia_eps, intel_loss, intel_eps, small]
    sources = [
        *APPLE_SOURCES,
        *(
            source(f.source_id, f"00000{i:05d}-24-00000{i}", "us-gaap:X", date(2024, 2, 21))
            for i, f in enumerate(facts[2:], start=1)
        ),
    ]
    missing = ["Tesla's revenue in fiscal 2031 (held: fiscal 2010 to 2024)"]

    text, citations = compose_metric_answer(facts, sources, missing)
    validation = check_answer(text, facts, citations, sources)

    assert "-$16.7 billion" in text and "-$3.88" in text and "$2.94" in text
    assert validation.passed, validation.issues
    assert validation.severity == "none"


def test_a_figure_rounded_exactly_at_the_half_unit_boundary_passes() -> None:
    ratio = fact(230.25, year=2023, period_end=date(2023, 9, 30), metric="pe_ratio", unit="x")

    assert check_answer("Apple traded at 230.2× in fiscal 2023.", [ratio], [], []).passed


def test_years_in_a_sentence_saying_a_figure_is_absent_are_not_claims() -> None:
    text = "No figure is held for Apple's revenue in fiscal 2031 (held: fiscal 2010 to 2024)."

    assert check(text).passed


# --- a derived figure's arithmetic -----------------------------------------------------------


def formula_input(name: str, label: str, value: float, year: int = 2023) -> FormulaInput:
    return FormulaInput(
        term=name,
        metric=name.split("[")[0],
        metric_label=label,
        value=value,
        unit="USD",
        period=f"FY{year}",
        fiscal_year=year,
    )


def derived(metric: str, value: float, formula: str, *inputs: FormulaInput) -> Fact:
    built = fact(value, year=2023, period_end=date(2023, 9, 30), metric=metric, unit="%")
    return built.model_copy(update={"formula": formula, "inputs": list(inputs)})


GROSS_MARGIN = derived(
    "gross_margin",
    44.13112957720756,
    "gross_profit / revenue * 100",
    formula_input("gross_profit", "Gross profit", 169_148_000_000),
    formula_input("revenue", "Revenue", 383_285_000_000),
)
RETURN_ON_EQUITY = derived(
    "return_on_equity",
    171.94951160275843,
    "net_income / ((stockholders_equity + stockholders_equity[-1]) / 2) * 100",
    formula_input("net_income", "Net income", 96_995_000_000),
    formula_input("stockholders_equity", "Stockholders' equity", 62_146_000_000),
    formula_input("stockholders_equity[-1]", "Stockholders' equity", 50_672_000_000, 2022),
)


def check_derived(answer: str, derived_fact: Fact) -> Validation:
    return check_answer(answer, [derived_fact], [], [])


def test_an_answer_showing_its_arithmetic_passes() -> None:
    answer, _ = compose_metric_answer([GROSS_MARGIN], [], [])
    assert "gross profit $169.1 billion / revenue $383.3 billion × 100 = 44.1%" in answer

    # Every figure shown was checked: the margin (twice), its two inputs and the "× 100".
    assert check_derived(answer, GROSS_MARGIN) == Validation(
        passed=True, severity="none", numbers_checked=5
    )


def test_a_tampered_input_in_the_arithmetic_fails() -> None:
    answer, _ = compose_metric_answer([GROSS_MARGIN], [], [])
    tampered = answer.replace("$169.1 billion", "$171.1 billion")

    validation = check_derived(tampered, GROSS_MARGIN)

    assert not validation.passed
    assert [(i.kind, i.text, i.severity) for i in validation.issues] == [
        ("number", "$171.1 billion", "high")
    ]


def test_an_opening_balance_is_grounded_in_its_own_earlier_year() -> None:
    answer, _ = compose_metric_answer([RETURN_ON_EQUITY], [], [])
    assert "$50.7 billion at the end of fiscal 2022" in answer

    assert check_derived(answer, RETURN_ON_EQUITY).passed
    tampered = answer.replace("$50.7 billion", "$55.7 billion")
    assert [i.text for i in check_derived(tampered, RETURN_ON_EQUITY).issues] == ["$55.7 billion"]


def test_inputs_ground_nothing_without_the_derived_fact_that_read_them() -> None:
    reported = GROSS_MARGIN.model_copy(update={"formula": None, "inputs": []})

    validation = check_derived("Apple's gross profit in fiscal 2023 was $169.1 billion.", reported)

    assert [i.text for i in validation.issues] == ["$169.1 billion"]


def test_a_formula_constant_is_grounded_only_as_the_bare_number_it_is() -> None:
    shown = "Apple's gross margin in fiscal 2023 was {}."

    assert check_derived(shown.format("44.1% (× 100)"), GROSS_MARGIN).passed
    for wrong in ("100%", "$100", "× 1000"):
        assert not check_derived(shown.format(wrong), GROSS_MARGIN).passed, wrong


def test_a_term_offset_is_not_a_constant_of_the_formula() -> None:
    # The 1 of `stockholders_equity[-1]` is a year offset; ROE's formula writes 2 and 100.
    assert check_derived("Apple's ROE in fiscal 2023 was 100.", RETURN_ON_EQUITY).passed
    assert not check_derived("Apple's ROE in fiscal 2023 was 1.", RETURN_ON_EQUITY).passed


def test_an_accounting_negative_with_a_scale_matches_a_loss() -> None:
    loss = make_fact(-1.2e9, metric="net_income")
    assert check_answer("Net income in fiscal 2023 was (1.2) billion.", [loss], [], []).passed
    assert check_answer("Net income in fiscal 2023 was $(1.2) billion.", [loss], [], []).passed
    assert not check_answer("Net income in fiscal 2023 was $1.2 billion.", [loss], [], []).passed
