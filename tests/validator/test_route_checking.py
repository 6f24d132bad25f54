"""The validator holds an answer to the question as the router understood it: a right figure
of another company, metric, period or scope than the one asked never passes, whether a
template or a model wrote it."""

from __future__ import annotations

from datetime import date

import pytest

from services.answerer.drafting import draft_answer
from services.validator.finalizing import Redo, decide, validate_draft
from shared.contracts.answers import AnswerDrafted, Generation, ToolsCompleted
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import Fact, Source, ToolCall, ToolResult
from shared.contracts.understanding import MetricScope, PeriodRef, TextSpan, Understood
from shared.tools import GetFinancialMetricsArgs
from tests.helpers import make_fact, understanding

REVENUE_2023 = make_fact(383_285e6)
REVENUE_2024 = make_fact(391_035e6, year=2024, period_end=date(2024, 9, 28))
APPLE_REVENUE = GetFinancialMetricsArgs(symbols=["AAPL"], metrics=["revenue"])


def route_for(understood: Understood) -> RouteDecided:
    return RouteDecided(
        question="a question",
        intent="metric_lookup",
        tool_calls=[ToolCall.of(APPLE_REVENUE)],
        understood=understood,
    )


def answered(understood: Understood, *facts: Fact, llm: bool = False) -> AnswerDrafted:
    """The template answer drafted from `facts` under the route `understood` describes."""
    result = ToolResult(
        tool="get_financial_metrics",
        arguments=APPLE_REVENUE,
        facts=list(facts),
        sources=[Source(source_id=f.source_id, label="Apple 10-K", form="10-K") for f in facts],
    )
    draft = draft_answer(ToolsCompleted(route=route_for(understood), results=[result]))
    if llm:
        draft = draft.model_copy(
            update={
                "generation": Generation(mode="llm", model="m"),
                "template_answer": draft.answer,
                "template_citations": draft.citations,
            }
        )
    return draft


APPLE_REVENUE_2023 = understanding({"AAPL": "Apple"}, ["revenue"], periods={"fiscal_years": [2023]})

MISMATCHES = {
    "another period": (
        understanding({"AAPL": "Apple"}, ["revenue"], periods={"fiscal_years": [2022]}),
        "period",
    ),
    "another quarter": (
        understanding(
            {"AAPL": "Apple"},
            ["revenue"],
            periods={"period_type": "quarterly", "fiscal_years": [2023], "fiscal_quarters": [2]},
        ),
        "period",
    ),
    "another company": (
        understanding({"NVDA": "NVIDIA"}, ["revenue"], periods={"fiscal_years": [2023]}),
        "company",
    ),
    "another metric": (
        understanding({"AAPL": "Apple"}, ["net_income"], periods={"fiscal_years": [2023]}),
        "metric",
    ),
    "a wider scope than asked": (
        Understood.model_validate(
            {
                **APPLE_REVENUE_2023.model_dump(),
                "metrics": [
                    {"id": "revenue", "scope": [MetricScope(kind="product", text="iPhone")]}
                ],
            }
        ),
        "scope",
    ),
    "words nothing read": (
        APPLE_REVENUE_2023.model_copy(
            update={"not_understood": [TextSpan(text="Services", start=8, end=16)]}
        ),
        "scope",
    ),
}


@pytest.mark.parametrize("mismatch", MISMATCHES, ids=list(MISMATCHES))
def test_a_right_figure_for_a_different_question_fails_as_high(mismatch: str) -> None:
    understood, kind = MISMATCHES[mismatch]
    fact = make_fact(94_836e6, quarter=3) if "quarter" in mismatch else REVENUE_2023
    validated = validate_draft(answered(understood, fact))
    assert not validated.validation.passed
    assert validated.validation.severity == "high"
    assert kind in {issue.kind for issue in validated.validation.issues}


def test_the_figure_asked_for_passes() -> None:
    validated = validate_draft(answered(APPLE_REVENUE_2023, REVENUE_2023))
    assert validated.validation.passed, validated.validation.issues


def test_a_period_asked_as_a_date_must_be_the_period_fetched() -> None:
    # The route read "as of September 28, 2024" but fetched fiscal 2023 all the same.
    understood = APPLE_REVENUE_2023.model_copy(
        update={
            "periods": APPLE_REVENUE_2023.periods.model_copy(
                update={
                    "asked": [
                        PeriodRef(
                            kind="instant",
                            text="as of September 28, 2024",
                            day=date(2024, 9, 28),
                            fiscal_year=2024,
                        )
                    ]
                }
            )
        }
    )
    validated = validate_draft(answered(understood, REVENUE_2023))
    assert not validated.validation.passed
    assert {issue.kind for issue in validated.validation.issues} >= {"period"}


@pytest.mark.parametrize("mismatch", MISMATCHES, ids=list(MISMATCHES))
def test_a_template_answer_to_a_different_question_is_never_shown_as_passed(
    mismatch: str,
) -> None:
    understood, _ = MISMATCHES[mismatch]
    fact = make_fact(94_836e6, quarter=3) if "quarter" in mismatch else REVENUE_2023
    shown = decide(answered(understood, fact), attempt=0)
    assert not isinstance(shown, Redo)
    assert not shown.validation.passed
    # The figure of the other question is withheld with its sentence.
    assert "383.3" not in shown.answer
    assert "94.8" not in shown.answer


def test_a_model_answer_to_a_different_question_is_sent_back_with_the_finding() -> None:
    understood, _ = MISMATCHES["another period"]
    outcome = decide(answered(understood, REVENUE_2023, llm=True), attempt=0)
    assert isinstance(outcome, Redo)
    repair = outcome.completed.repair
    assert repair is not None
    assert any(issue.kind == "period" for issue in repair.issues)


def test_a_growth_may_show_the_year_it_compares_with() -> None:
    understood = APPLE_REVENUE_2023.model_copy(
        update={
            "growth": True,
            "periods": APPLE_REVENUE_2023.periods.model_copy(update={"fiscal_years": [2024]}),
        }
    )
    validated = validate_draft(answered(understood, REVENUE_2023, REVENUE_2024))
    assert validated.validation.passed, validated.validation.issues
