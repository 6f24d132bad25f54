"""The asked thing read out of the sentence that answers it, by the kind of answer asked: a
count with what it counts, a figure, a date, a name; the one nearest the words asked."""

from __future__ import annotations

import pytest

from shared.answer_spans import answer_span, asked_thing, squarely_answered
from shared.filing_text import asks, terms

# Sentences written for these tests, shaped like a filing's.
STORES = "As of June 30, 2031, Northwind had 212 retail stores, 64 of them outside the U.S."
BUYBACK = (
    "In May 2031, the Board raised the share repurchase authorization from $40 billion to "
    "$55 billion of common stock."
)
EXCHANGE = "Northwind's common stock trades on the Nasdaq Global Select Market as NWND."
AUDITOR = "Harbor & Lane LLP, an independent registered public accounting firm, audited it."
TENURE = "We have served as Northwind Inc.'s auditor since 2004."
SPLIT = "On August 14, 2030, the Company effected a three-for-one stock split."
STAFF = "We employed approximately 88,000 full-time and part-time employees at year end."


@pytest.mark.parametrize(
    ("question", "kind", "sentence", "expected"),
    [
        ("How many retail stores did Northwind run?", "count", STORES, "212 retail stores"),
        ("How many full-time and part-time employees?", "count", STAFF, None),
        ("To what amount was the buyback authorization raised?", "figure", BUYBACK, None),
        ("Which exchange lists the stock?", "name", EXCHANGE, "Nasdaq Global Select Market"),
        ("Which accounting firm audits Northwind?", "name", AUDITOR, "Harbor & Lane LLP"),
        ("Since what year has it audited Northwind?", "date", TENURE, "since 2004"),
        ("On what date did Northwind split its stock?", "date", SPLIT, "August 14, 2030"),
    ],
)
def test_the_span_of_the_kind_asked_nearest_the_words_asked_is_the_answer(
    question: str, kind: str, sentence: str, expected: str | None
) -> None:
    assert kind in asks(question)
    expected = (
        expected
        or {
            STAFF: "approximately 88,000 full-time and part-time employees",
            BUYBACK: "from $40 billion to $55 billion",
        }[sentence]
    )
    assert answer_span(sentence, kind, terms(question), terms("Northwind")) == expected


def test_the_filers_own_name_is_never_the_name_asked() -> None:
    assert answer_span(TENURE, "name", terms("Who audits Northwind?"), terms("Northwind")) is None


def test_a_day_or_a_year_is_not_a_count() -> None:
    assert answer_span(SPLIT, "count", terms("How many splits?"), set()) is None


def test_a_name_holding_the_word_asked_or_labelling_a_number_is_no_answer() -> None:
    sentence = "Shares may be bought under plans that follow Rule 10b5-1 of the Exchange Act."
    asked = terms("On which stock exchange does Northwind's stock trade?")

    assert answer_span(sentence, "name", asked, terms("Northwind")) is None


def test_a_number_a_word_labels_or_a_hyphen_joins_is_no_count() -> None:
    sentence = "Note 15 - Employee Retirement Plans cover employees who took 2-day leave."
    asked = terms("How many employees?")

    assert answer_span(sentence, "count", asked, set()) is None


def test_a_common_ask_is_answered_squarely_only_in_the_filings_wording_of_it() -> None:
    asked = asked_thing("How many holders of record did Northwind's common stock have?", set())
    assert asked is not None

    shares = "As of August 1, 2031, 1,204,000,000 shares of common stock were outstanding."
    holders = "As of August 1, 2031, there were 12,345 shareholders of record."
    assert not squarely_answered(asked, shares, {})
    assert squarely_answered(asked, holders, {})
