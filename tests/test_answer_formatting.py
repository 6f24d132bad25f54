"""How the answerer words figures and cites their sources."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from services.answerer.formatting import (
    compose_metric_answer,
    format_money,
    format_per_share,
    format_value,
    possessive,
)
from shared.contracts import Fact, Source
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
