"""Slips of the keyboard are put right before a question is read, and only slips: a word
either English or finq's own vocabulary knows is left as written."""

from __future__ import annotations

import pytest

from services.router.spelling import catalog_speller


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("earnigns", "earnings"),
        ("recieved", "received"),
        ("liabilites", "liabilities"),
        ("depreciaton", "depreciation"),
        ("divdends", "dividends"),
        ("stockholdrs", "stockholders"),
    ],
)
def test_a_slip_one_or_two_edits_from_a_word_finq_reads_is_put_right(
    written: str, meant: str
) -> None:
    assert catalog_speller().suggestion(written) == meant


@pytest.mark.parametrize(
    "word",
    [
        # English words one edit from a catalog word.
        "costly", "sells", "lease",
        # Forms of known words neither list holds: an ending or a prefix away.
        "dilutive", "accruing", "deferral", "unvested", "restated", "unadjusted",
        # Acronyms and tickers, in capitals.
        "EBITDAR", "GOOGL",
        # Names nobody misspelt.
        "gigafactory",
    ],
)  # fmt: skip
def test_a_word_spelt_as_meant_is_left_alone(word: str) -> None:
    assert catalog_speller().suggestion(word) is None


def test_words_kept_aside_are_never_corrected_and_each_correction_is_reported() -> None:
    text, slips = catalog_speller().correct(
        "apple diluted earnigns per share, appel's too", keep=frozenset({"appel"})
    )
    assert text == "apple diluted earnings per share, appel's too"
    assert slips == {"earnigns": "earnings"}


def test_a_word_two_vocabulary_words_are_equally_near_is_left_as_written() -> None:
    # "costx" is one edit from "cost" and from "costs": which was meant is not guessed.
    assert catalog_speller().suggestion("costx") is None
    assert catalog_speller().suggestion("assex") == "asset"
