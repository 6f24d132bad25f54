"""Comparison sentences, the metric list and reading notes: worded in code, and passing the
validator with nothing but the fetched figures."""

from __future__ import annotations

from datetime import date

import pytest

from services.answerer.comparisons import compose_comparisons
from services.answerer.drafting import reading_note
from services.answerer.metric_list import compose_metric_list
from services.tools.metric_listing import list_metrics
from services.validator.checking import check_answer
from shared.contracts.understanding import MetricRef, Understood
from shared.metric_catalog import CATALOG, CATEGORIES
from shared.tools import ListMetricsArgs
from tests.helpers import make_fact

APPLE = make_fact(383.285e9, metric="revenue")
ALPHABET = make_fact(307.394e9, company="Alphabet", symbol="GOOGL", period_end=date(2023, 12, 31))
NVIDIA = make_fact(60.922e9, company="NVIDIA", symbol="NVDA", period_end=date(2024, 1, 28))


def test_two_companies_are_compared_with_both_figures_and_their_period_ends() -> None:
    [sentence] = compose_comparisons([ALPHABET, APPLE])
    assert sentence.startswith(
        "In fiscal 2023, Apple's revenue was higher than Alphabet's: "
        "$383.3 billion against $307.4 billion."
    )
    assert "Apple 2023-09-30, Alphabet 2023-12-31" in sentence
    validation = check_answer(sentence, [APPLE, ALPHABET], [], [])
    assert validation.passed, validation.issues


def test_three_companies_are_ranked_from_highest_to_lowest() -> None:
    [sentence] = compose_comparisons([NVIDIA, APPLE, ALPHABET])
    assert (
        "from highest to lowest revenue: Apple at $383.3 billion, Alphabet at $307.4 billion, "
        "NVIDIA at $60.9 billion." in sentence
    )
    assert check_answer(sentence, [APPLE, ALPHABET, NVIDIA], [], []).passed


def test_one_company_or_different_periods_give_no_comparison() -> None:
    assert compose_comparisons([APPLE]) == []
    earlier = make_fact(394.328e9, year=2022, company="Alphabet", symbol="GOOGL")
    assert compose_comparisons([APPLE, earlier]) == []


async def test_list_metrics_returns_one_category_or_the_whole_catalog() -> None:
    valuation = await list_metrics(None, ListMetricsArgs(category="valuation"))  # type: ignore[arg-type]
    assert {metric.category for metric in valuation.metrics} == {"valuation"}
    assert "pe_ratio" in {metric.id for metric in valuation.metrics}
    everything = await list_metrics(None, ListMetricsArgs())  # type: ignore[arg-type]
    assert len(everything.metrics) == len(CATALOG)


@pytest.mark.parametrize("category", [None, *CATEGORIES])
async def test_the_metric_list_names_metrics_and_passes_validation(category: str | None) -> None:
    result = await list_metrics(None, ListMetricsArgs(category=category))  # type: ignore[arg-type]
    text = compose_metric_list(result.metrics, category)
    assert result.metrics[0].label in text
    validation = check_answer(text, [], [], [])
    assert validation.passed, (text, validation.issues)


def test_a_fallback_reading_is_said_before_the_answer() -> None:
    understood = Understood(
        metrics=[MetricRef(id="gross_margin", text="gross margn", method="fuzzy", confidence=0.9)]
    )
    assert reading_note(understood) == "I read 'gross margn' as gross margin. "
    assert reading_note(Understood()) == ""
