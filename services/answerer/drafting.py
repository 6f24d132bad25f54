"""Turns fetched tool results into a drafted answer (deterministic mode)."""

from __future__ import annotations

from services.answerer.formatting import (
    compose_filings_answer,
    compose_metric_answer,
    compose_price_answer,
)
from shared.contracts import AnswerDrafted, ToolsCompleted


def draft_answer(completed: ToolsCompleted) -> AnswerDrafted:
    route = completed.route
    if route.intent == "clarify" or not route.tool_calls:
        question = route.clarifying_question or "Could you rephrase the question?"
        return AnswerDrafted(
            route=route,
            results=completed.results,
            answer=question,
            needs_clarification=True,
            clarifying_question=question,
        )
    facts = [fact for result in completed.results for fact in result.facts]
    sources = [source for result in completed.results for source in result.sources]
    missing = [item for result in completed.results for item in result.missing]
    errors = [result.error for result in completed.results if result.error is not None]
    if route.intent == "price":
        text, citations = compose_price_answer(facts, sources, missing)
    elif route.intent == "filings":
        companies = route.entities.get("companies") or route.entities.get("symbols") or [""]
        text, citations = compose_filings_answer(companies[0], sources, missing)
    else:
        text, citations = compose_metric_answer(facts, sources, missing)
    if errors and not facts:
        text = " ".join(f"That request could not be run: {error.message}." for error in errors)
    return AnswerDrafted(
        route=route,
        results=completed.results,
        answer=text,
        citations=citations,
        facts=facts,
    )
