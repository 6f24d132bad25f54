"""Turns fetched tool results into a drafted answer (deterministic mode)."""

from __future__ import annotations

from typing import Any

from services.answerer.comparisons import compose_comparisons
from services.answerer.formatting import (
    compose_filings_answer,
    compose_metric_answer,
    compose_price_answer,
)
from services.answerer.metric_list import compose_metric_list
from shared.contracts import AnswerDrafted, ToolsCompleted
from shared.metric_catalog import METRICS_BY_ID, mid_sentence


def reading_note(entities: dict[str, Any]) -> str:
    """ "I read 'gross margn' as gross margin." for metrics only a fallback understood, so
    the user can see, and correct, what was assumed."""
    readings = [
        f"{r['phrase']!r} as {mid_sentence(METRICS_BY_ID[r['metric']].label)}"
        for r in entities.get("metric_resolutions", [])
        if r["metric"] in METRICS_BY_ID
    ]
    return f"I read {' and '.join(readings)}. " if readings else ""


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
    if route.intent == "list_metrics":
        listed = [metric for result in completed.results for metric in result.metrics]
        text, citations = compose_metric_list(listed, route.entities.get("category")), []
    elif route.intent == "price":
        text, citations = compose_price_answer(facts, sources, missing)
    elif route.intent == "filings":
        companies = route.entities.get("companies") or route.entities.get("symbols") or [""]
        text, citations = compose_filings_answer(companies[0], sources, missing)
    else:
        text, citations = compose_metric_answer(facts, sources, missing)
        if route.entities.get("comparison"):
            text = " ".join([text, *compose_comparisons(facts)])
        text = reading_note(route.entities) + text
    if errors and not facts:
        text = " ".join(f"That request could not be run: {error.message}." for error in errors)
    return AnswerDrafted(
        route=route,
        results=completed.results,
        answer=text,
        citations=citations,
        facts=facts,
    )
