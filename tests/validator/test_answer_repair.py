"""The validator's repairs: a wrong figure in a template answer is patched with the fetched
value, what cannot be patched is withheld, and a "not held" claim is checked against the
database before it is shown. Never a figure that failed validation reaches the user."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import asyncpg
import pytest

from services.answerer.drafting import draft_answer
from services.validator.finalizing import (
    MAX_ANSWER_ATTEMPTS,
    Redo,
    decide,
    settle,
    validate_draft,
)
from services.validator.repairing import WITHHELD_NOTE, absence_claims, patch_numbers
from shared.contracts.answers import (
    AnswerDrafted,
    AnswerValidated,
    Citation,
    Generation,
    ToolsCompleted,
)
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import Fact, Source, ToolCall, ToolResult
from tests.conftest import Servers
from tests.helpers import make_fact, understanding

REVENUE_2023 = make_fact(383_285e6)
NET_INCOME_2023 = make_fact(96_995e6, metric="net_income")


def route(years: list[int] | None = None, metrics: tuple[str, ...] = ("revenue",)) -> RouteDecided:
    return RouteDecided(
        question="What was Apple's revenue in fiscal 2023?",
        intent="metric_lookup",
        tool_calls=[
            ToolCall(
                tool="get_financial_metrics",
                arguments={
                    "symbols": ["AAPL"],
                    "metrics": list(metrics),
                    "fiscal_years": years or [2023],
                },
            )
        ],
        understood=understanding(
            {"AAPL": "Apple"}, list(metrics), periods={"fiscal_years": years or [2023]}
        ),
    )


def completed(*facts: Fact, missing: tuple[str, ...] = ()) -> ToolsCompleted:
    metrics = tuple(dict.fromkeys(f.metric for f in facts)) or ("revenue",)
    sources = [Source(source_id=f.source_id, label="Apple 10-K", form="10-K") for f in facts]
    planned = route(metrics=metrics)
    result = ToolResult(
        tool="get_financial_metrics",
        arguments=planned.tool_calls[0].arguments,
        facts=list(facts),
        sources=sources,
        missing=list(missing),
    )
    return ToolsCompleted(route=planned, results=[result])


def drafted(text: str, *facts: Fact, llm: bool = False) -> AnswerDrafted:
    template = draft_answer(completed(*facts))
    if not llm:
        return template.model_copy(update={"answer": text})
    return template.model_copy(
        update={
            "answer": text,
            "generation": Generation(mode="llm", model="gpt-4o-mini"),
            "template_answer": template.answer,
            "template_citations": template.citations,
        }
    )


def shown(outcome: AnswerValidated | Redo) -> AnswerValidated:
    assert isinstance(outcome, AnswerValidated), outcome
    return outcome


def test_a_wrong_figure_in_a_template_answer_is_patched_with_the_fetched_value() -> None:
    answer = shown(
        decide(drafted("Apple's revenue in fiscal 2023 was $401.2 billion.", REVENUE_2023), 0)
    )

    assert answer.answer == "Apple's revenue in fiscal 2023 was $383.3 billion."
    assert answer.validation.passed and answer.validation.attempts == 1
    assert answer.validation.repairs == [
        "patched $401.2 billion to $383.3 billion (Apple's revenue for FY2023)"
    ]


def test_the_patch_takes_the_metric_its_sentence_names() -> None:
    text = "Apple's revenue in fiscal 2023 was $383.3 billion and its net income was $90.1 billion."
    patched, repairs = patch_numbers(text, [REVENUE_2023, NET_INCOME_2023])

    assert patched.endswith("its net income was $97.0 billion.")
    assert repairs == ["patched $90.1 billion to $97.0 billion (Apple's net income for FY2023)"]


def test_a_figure_written_without_a_dollar_sign_is_patched_in_the_same_shape() -> None:
    patched, _ = patch_numbers(
        "Apple's revenue in fiscal 2023 was 401,200 million.", [REVENUE_2023]
    )

    assert patched == "Apple's revenue in fiscal 2023 was 383.3 billion."
    assert validate_draft(drafted(patched, REVENUE_2023)).validation.passed


def test_a_wrong_figure_with_no_single_fact_behind_it_is_withheld_not_shown() -> None:
    text = (
        "Apple's revenue in fiscal 2023 was $383.3 billion. "
        "Apple also reported $12.5 billion that year."
    )
    answer = shown(decide(drafted(text, REVENUE_2023, NET_INCOME_2023), 0))

    assert "$12.5 billion" not in answer.answer
    assert answer.answer == f"Apple's revenue in fiscal 2023 was $383.3 billion. {WITHHELD_NOTE}"
    assert answer.validation.passed
    assert answer.validation.repairs == ["withheld: Apple also reported $12.5 billion that year."]


def test_a_made_up_citation_on_a_template_answer_is_withheld() -> None:
    draft = drafted("Apple's revenue in fiscal 2023 was $383.3 billion.", REVENUE_2023)
    draft = draft.model_copy(
        update={"citations": [*draft.citations, Citation(source_id="sec:made-up", label="x")]}
    )
    answer = shown(decide(draft, 0))

    assert [c.source_id for c in answer.citations] == [REVENUE_2023.source_id]
    assert answer.validation.passed
    assert answer.validation.repairs == ["withheld citation sec:made-up"]


def test_a_model_still_wrong_at_the_last_attempt_never_shows_its_figure() -> None:
    draft = drafted("Apple's revenue in fiscal 2023 was $401.2 billion.", REVENUE_2023, llm=True)
    # The template it falls back to is broken too: it is repaired, not shown as it is.
    draft = draft.model_copy(
        update={"template_answer": "Apple's revenue in fiscal 2023 was $1.0 billion."}
    )
    answer = shown(decide(draft, MAX_ANSWER_ATTEMPTS - 1))

    assert answer.answer == "Apple's revenue in fiscal 2023 was $383.3 billion."
    assert answer.validation.passed and answer.generation.mode == "deterministic"
    assert "$401.2 billion" in answer.generation.rejected[0]


def test_an_absence_claim_names_only_what_it_says_is_missing() -> None:
    text = (
        "No figure is held for Apple's revenue in fiscal 2031 (held: fiscal 2010 to 2024). "
        "Apple's revenue in fiscal 2023 was $383.3 billion; data for fiscal 2022 is not available, "
        "but fiscal 2021 is."
    )
    claims = absence_claims(text, route())

    assert [(c.symbols, c.metrics, c.years) for c in claims] == [
        (("AAPL",), ("revenue",), (2031,)),
        (("AAPL",), ("revenue",), (2022,)),
    ]


@pytest.fixture
async def bundled(servers: Servers) -> AsyncIterator[asyncpg.Connection]:
    """The session database, which holds the bundled dataset (read only here)."""
    connection = await asyncpg.connect(servers.postgres.dsn)
    try:
        yield connection
    finally:
        await connection.close()


async def test_a_true_absence_claim_is_shown_as_it_is(bundled: asyncpg.Connection) -> None:
    draft = draft_answer(
        completed(missing=("Apple's revenue in fiscal 2031 (held: fiscal 2010 to 2024)",))
    )
    answer = await settle(bundled, draft, 0)

    assert isinstance(answer, AnswerValidated)
    assert answer.answer == draft.answer and answer.validation.passed
    assert answer.validation.repairs == []


async def test_a_models_false_no_data_claim_sends_the_plan_back_for_the_held_year(
    bundled: asyncpg.Connection,
) -> None:
    text = (
        "Apple's revenue in fiscal 2023 was $383.3 billion. "
        "No data is available for Apple's revenue in fiscal 2022."
    )
    outcome = await settle(bundled, drafted(text, REVENUE_2023, llm=True), 0)

    assert isinstance(outcome, RouteDecided)
    assert outcome.tool_calls[0].arguments.fiscal_years == [2022, 2023]


async def test_a_false_no_data_claim_in_a_template_answer_is_withheld(
    bundled: asyncpg.Connection,
) -> None:
    text = (
        "Apple's revenue in fiscal 2023 was $383.3 billion. "
        "No figure is held for Apple's revenue in fiscal 2022 (held: fiscal 2010 to 2024)."
    )
    answer = await settle(bundled, drafted(text, REVENUE_2023), 0)

    assert isinstance(answer, AnswerValidated)
    assert "fiscal 2022" not in answer.answer
    assert answer.validation.passed
    assert answer.validation.repairs[0].startswith("withheld: No figure is held")


async def test_a_contradicted_claim_is_reported_with_what_is_held(
    bundled: asyncpg.Connection,
) -> None:
    text = "No data is available for Apple's revenue in fiscal 2022."
    draft = drafted(text, REVENUE_2023, llm=True)
    outcome = await settle(bundled, draft.model_copy(update={"route": route([2022])}), 0)

    assert isinstance(outcome, Redo)  # 2022 was in the plan: nothing to refetch, write again
    issues = outcome.completed.repair.issues  # type: ignore[union-attr]
    # The only figure fetched is of fiscal 2023, not the year asked: a finding of its own.
    assert {i.kind for i in issues} == {"absence", "period"}
    [issue] = [i for i in issues if i.kind == "absence"]
    assert issue.severity == "high"
    assert "finq holds Apple's revenue for fiscal 2022" in issue.message
    assert json.loads(outcome.completed.model_dump_json())["repair"]["attempt"] == 1
