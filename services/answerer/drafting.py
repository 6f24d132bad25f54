"""Turns fetched tool results into a drafted answer (deterministic mode)."""

from __future__ import annotations

from typing import Any

from services.answerer.comparisons import compose_comparisons
from services.answerer.extras import chart_spec, suggestions
from services.answerer.formatting import (
    compose_filings_answer,
    compose_metric_answer,
    compose_price_answer,
    compose_series_answer,
)
from services.answerer.intent_answers import (
    compose_definition,
    compose_not_yet,
    compose_refusal,
    compose_trend,
    compose_unavailable,
    compose_unknown_term,
)
from services.answerer.metric_list import compose_metric_list
from services.answerer.passages import compose_passages_answer, search_scope
from shared.contracts import AnswerDrafted, Citation, ToolsCompleted
from shared.metric_catalog import METRICS_BY_ID, mid_sentence


def reading_note(entities: dict[str, Any]) -> str:
    """ "I read 'gross margn' as gross margin." for metrics only a fallback understood, and
    misspelt company names, so the user can see, and correct, what was assumed."""
    readings = [
        f"{r['phrase']!r} as {mid_sentence(METRICS_BY_ID[r['metric']].label)}"
        for r in entities.get("metric_resolutions", [])
        if r["metric"] in METRICS_BY_ID
    ]
    companies = dict(zip(entities.get("symbols", []), entities.get("companies", []), strict=False))
    for written, name in entities.get("company_corrections", {}).items():
        display = next((c for c in companies.values() if c.lower() == name), name.title())
        readings.append(f"{written!r} as {display}")
    return f"I read {' and '.join(readings)}. " if readings else ""


def draft_answer(completed: ToolsCompleted) -> AnswerDrafted:
    route = completed.route
    entities = route.entities
    capabilities = entities.get("capabilities", "")
    if route.intent == "clarify":
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
    passages = [passage for result in completed.results for passage in result.passages]
    errors = [result.error for result in completed.results if result.error is not None]
    # A search this finq cannot run is said by the answer itself (document questions) or
    # does without it (a definition stands on the catalog); it is not an error to show.
    unavailable = [e for e in errors if e.code == "tool_unavailable"]
    errors = [e for e in errors if e.code != "tool_unavailable"]
    citations: list[Citation] = []
    if route.intent == "out_of_scope":
        text = compose_refusal(capabilities)
    elif route.intent in {"portfolio_overview", "portfolio_position"}:
        text = compose_not_yet(route.intent, capabilities)
    elif route.intent == "definition" and passages:
        # A term the catalog does not hold, explained from the glossary's own words.
        text, citations = compose_passages_answer(route.question, passages, sources)
    elif route.intent == "definition" and not any(r.metrics for r in completed.results):
        text = compose_unknown_term(entities.get("term", route.question), capabilities)
    elif route.intent == "definition":
        text = compose_definition([m for result in completed.results for m in result.metrics])
    elif route.intent == "document_search":
        if unavailable:
            text = compose_unavailable(unavailable, entities.get("companies", []))
        else:
            companies = dict(
                zip(entities.get("symbols", []), entities.get("companies", []), strict=False)
            )
            scope = search_scope(route.tool_calls[0].arguments, companies)
            text, citations = compose_passages_answer(route.question, passages, sources, scope)
    elif route.intent == "list_metrics":
        listed = [metric for result in completed.results for metric in result.metrics]
        text = compose_metric_list(listed, entities.get("category"))
    elif route.intent == "price":
        text, citations = compose_price_answer(facts, sources, missing)
    elif route.intent == "filings":
        companies = entities.get("companies") or entities.get("symbols") or [""]
        text, citations = compose_filings_answer(companies[0], sources, missing)
    elif route.intent == "metric_trend":
        text, citations = compose_series_answer(facts, sources, missing)
        text = " ".join([text, *compose_trend(facts)])
        text = reading_note(entities) + text
    else:
        text, citations = compose_metric_answer(facts, sources, missing)
        if entities.get("comparison"):
            text = " ".join([text, *compose_comparisons(facts)])
        text = reading_note(entities) + text
    if errors and not facts and not passages:
        text = " ".join(f"That request could not be run: {error.message}." for error in errors)
    return AnswerDrafted(
        route=route,
        results=completed.results,
        answer=text,
        citations=citations,
        facts=facts,
        chart=chart_spec(route, facts),
        suggestions=suggestions(route),
    )
