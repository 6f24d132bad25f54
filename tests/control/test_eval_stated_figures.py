"""`finq eval` reads the figures an answer's text states: each number with its sign, scale and
unit, matching an expected value to the precision the text shows it, and nothing that is not
a figure (a year, a date, a quarter, a form, a citation mark)."""

from __future__ import annotations

import pytest

from services.control.stated_figures import stated_numbers, states
from shared.value_formatting import format_value

APPLE_REVENUE_2023 = 383285e6


def test_the_answerers_sentence_states_its_figure_rounded_to_a_tenth_of_a_billion() -> None:
    answer = (
        "Apple's revenue in fiscal 2023 (ended 2023-09-30) was $383.3 billion "
        "(10-K, accession 0000320193-23-000106)."
    )
    assert states(answer, APPLE_REVENUE_2023, "USD")
    assert [number.text for number in stated_numbers(answer)] == ["$383.3 billion"]


@pytest.mark.parametrize(
    "answer",
    [
        "Apple's revenue in fiscal 2023 was $383.3 billion.",
        "Apple's revenue in fiscal 2023 was $383.29 billion.",
        "Apple's revenue in fiscal 2023 was $383 billion.",
        "Apple's revenue in fiscal 2023 was $0.4 trillion.",
        "Apple's revenue in fiscal 2023 was $383,285 million.",
        "Apple's revenue in fiscal 2023 was 383,285 million dollars.",
        "Apple's revenue in fiscal 2023 was $383.3B.",
        "Apple's revenue in fiscal 2023 was US$383.3 bn.",
        "Apple's revenue in fiscal 2023 was USD 383.3 billion.",
        "Apple's revenue in fiscal 2023 was $383,285,000,000.",
    ],
)
def test_revenue_stated_in_any_common_way_at_any_precision_counts(answer: str) -> None:
    assert states(answer, APPLE_REVENUE_2023, "USD")


@pytest.mark.parametrize(
    "answer",
    [
        # Truncated, not rounded: 383.285 is 383.3 to one decimal.
        "Apple's revenue in fiscal 2023 was $383.2 billion.",
        "Apple's revenue in fiscal 2023 was $383.4 billion.",
        "Apple's revenue in fiscal 2023 was $383.27 billion.",
        # The right digits at the wrong scale.
        "Apple's revenue in fiscal 2023 was $383.3 million.",
        "Apple's revenue in fiscal 2023 was $383.3 trillion.",
        "Apple's revenue in fiscal 2023 was $383,285.",
        # The right value as a loss.
        "Apple's revenue in fiscal 2023 was -$383.3 billion.",
        # As a percentage it is not a dollar figure.
        "Apple's revenue in fiscal 2023 was 383.3 billion%.",
        # Said about the year before.
        "Apple's revenue in fiscal 2022 was $394.3 billion.",
    ],
)
def test_revenue_stated_wrong_does_not_count(answer: str) -> None:
    assert not states(answer, APPLE_REVENUE_2023, "USD")


def test_rounding_counts_whichever_way_a_tie_is_broken_and_no_further() -> None:
    assert states("The current ratio was 1.2×.", 1.25, "x")
    assert states("The current ratio was 1.3×.", 1.25, "x")
    assert not states("The current ratio was 1.1×.", 1.25, "x")
    assert not states("The current ratio was 1.4×.", 1.25, "x")


def test_the_year_2023_is_never_a_figure() -> None:
    answer = "In fiscal 2023 Apple filed its 10-K for Q4 2023 [2] on 2023-11-03."
    assert stated_numbers(answer) == []
    assert not states(answer, 2023.0)
    assert not states(answer, 2023.0, "USD")
    assert not states("Apple's FY2023 revenue grew.", 2023.0)


def test_dates_forms_quarters_and_accessions_are_not_figures() -> None:
    answer = (
        "Apple's 10-K for fiscal 2023 (period ended 2023-09-30, filed 2023-11-03), "
        "accession 0000320193-23-000106, covers Q1 to Q4 [1][2]."
    )
    assert stated_numbers(answer) == []
    assert not states(answer, 30.0) and not states(answer, -9.0) and not states(answer, 10.0)


def test_a_number_run_on_into_a_word_or_another_number_is_not_a_figure() -> None:
    assert stated_numbers("the 10th filing, version 1.2.3, item 2023a") == []


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Free cash flow was -$1.2 billion.", -1.2e9),
        ("Free cash flow was −$1.2 billion.", -1.2e9),
        ("Free cash flow was $-1.2 billion.", -1.2e9),
        ("Free cash flow was $(1.2) billion.", -1.2e9),
        ("Free cash flow was (1.2) in billions.", -1.2),
        ("Free cash flow fell by $1.2 billion from fiscal 2022.", -1.2e9),
        ("Free cash flow decreased $1.2 billion.", -1.2e9),
        ("Free cash flow showed a decline of $1.2 billion.", -1.2e9),
        ("Free cash flow was down 2.8% on the year.", -2.8),
        ("Free cash flow was negative $1.2 billion.", -1.2e9),
    ],
)
def test_a_negative_figure_is_read_from_its_minus_bracket_or_fall(
    answer: str, expected: float
) -> None:
    assert states(answer, expected)
    assert not states(answer, -expected)


def test_a_fall_to_a_level_is_the_level_not_a_negative() -> None:
    answer = "Revenue fell to $383.3 billion, and rose from $365.8 billion before that."
    assert states(answer, APPLE_REVENUE_2023, "USD")
    assert states(answer, 365.817e9, "USD")


def test_a_figure_in_brackets_as_an_aside_stays_positive() -> None:
    answer = "Apple's revenue ($383.3 billion) and its gross margin (44.1%) were the highest."
    assert states(answer, APPLE_REVENUE_2023, "USD")
    assert states(answer, 44.13, "%")


def test_the_answerers_subtraction_sign_is_not_a_minus() -> None:
    answer = (
        "Apple's gross profit was $169.1 billion: revenue $383.3 billion − cost of sales "
        "$214.1 billion = $169.1 billion."
    )
    assert states(answer, 214.137e9, "USD")
    assert not states(answer, -214.137e9, "USD")


def test_the_answerers_arithmetic_constants_are_not_figures() -> None:
    answer = "gross profit $169.1 billion / revenue $383.3 billion × 100 = 44.1%."
    assert [number.text for number in stated_numbers(answer)] == [
        "$169.1 billion",
        "$383.3 billion",
        "44.1%",
    ]
    assert not states(answer, 100.0, "x")


@pytest.mark.parametrize(
    ("answer", "expected", "unit"),
    [
        ("Apple's gross margin in fiscal 2023 was 44.1%.", 44.1311, "%"),
        ("Apple's gross margin in fiscal 2023 was 44.13 percent.", 44.1311, "%"),
        ("Its operating margin widened by 1.2 percentage points.", 1.23, "%"),
        ("Apple's diluted EPS in fiscal 2023 was $6.13.", 6.13, "USD/share"),
        ("Apple's diluted EPS in fiscal 2023 was $6.13 per share.", 6.13, "USD/share"),
        ("Apple's current ratio at the end of fiscal 2023 was 0.99×.", 0.988, "x"),
        ("Its interest coverage was 29.1x.", 29.06, "x"),
        ("Its interest coverage was 29.1 times.", 29.06, "x"),
        ("Apple had 15,550,061,000 shares outstanding.", 15550061000.0, "shares"),
        ("Apple had 15.6 billion shares outstanding.", 15550061000.0, "shares"),
        ("Its days sales outstanding were 58.1 days.", 58.06, "days"),
        ("NVIDIA's net income was $72,880 million.", 72880e6, "USD"),
        ("NVIDIA's revenue was $26.04 billion.", 26.044e9, "USD"),
        ("NVIDIA's revenue grew 125.9%.", 125.85, "%"),
        ("The ratio was 0.99.", 0.988, "x"),
    ],
)
def test_every_unit_finq_writes_is_read_in_its_own_kind(
    answer: str, expected: float, unit: str
) -> None:
    assert states(answer, expected, unit)


@pytest.mark.parametrize(
    ("answer", "expected", "unit"),
    [
        # The right digits as a percentage are not a per-share amount, and back.
        ("Apple's diluted EPS in fiscal 2023 grew 6.13%.", 6.13, "USD/share"),
        ("Apple's gross margin in fiscal 2023 was $44.1.", 44.1311, "%"),
        # A ratio is not a percentage.
        ("Apple's current ratio was 0.99%.", 0.988, "x"),
        # Shares are not dollars.
        ("Apple had $15.6 billion of buybacks.", 15550061000.0, "shares"),
        # A bare count without "shares" or a scale is an integer, which is never a figure.
        ("Apple had 15550061000 outstanding.", 15550061000.0, "shares"),
    ],
)
def test_the_right_digits_in_another_unit_do_not_count(
    answer: str, expected: float, unit: str
) -> None:
    assert not states(answer, expected, unit)


def test_without_a_known_unit_any_unit_of_the_right_value_counts() -> None:
    assert states("The two companies together earned $172.7 billion.", 172.683e9)
    assert states("The difference was 3.2%.", 3.2)


@pytest.mark.parametrize(
    ("value", "unit"),
    [
        (383285e6, "USD"),
        (-1_234_567_890.0, "USD"),
        (999.96e9, "USD"),
        (12_345.0, "USD"),
        (6.13, "USD/share"),
        (-0.11, "USD/share"),
        (44.1311, "%"),
        (1.24, "%"),
        (0.988, "x"),
        (15_550_061_000.0, "shares"),
        (58.06, "days"),
    ],
)
def test_every_value_as_finq_formats_it_states_that_value(value: float, unit: str) -> None:
    written = f"The figure was {format_value(value, unit)}."
    assert states(written, value, unit), written
