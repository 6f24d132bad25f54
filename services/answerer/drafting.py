"""Turns fetched tool results into a drafted answer (deterministic mode)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from services.answerer.comparisons import compose_comparisons
from services.answerer.computed_figures import computed
from services.answerer.extras import chart_spec, suggestions
from services.answerer.formatting import (
    compose_filings_answer,
    compose_metric_answer,
    compose_price_answer,
    compose_series_answer,
)
from services.answerer.intent_answers import (
    compose_definition,
    compose_refusal,
    compose_trend,
    compose_unavailable,
    compose_uncovered,
    compose_unknown_term,
)
from services.answerer.metric_list import compose_metric_list
from services.answerer.passages import compose_passages_answer, search_scope
from services.answerer.portfolio_answers import draft_portfolio as compose_portfolio
from shared.contracts import (
    AnswerDrafted,
    Citation,
    Fact,
    MetricInfo,
    Passage,
    RouteDecided,
    Source,
    ToolError,
    ToolResult,
    ToolsCompleted,
    Understood,
)
from shared.intents import INTENTS_BY_NAME, DrafterKind
from shared.metric_catalog import METRICS_BY_ID, mid_sentence


def reading_note(understood: Understood) -> str:
    """ "I read 'gross margn' as gross margin." for metrics only a fallback understood, and
    misspelt company names and words, so the user can see, and correct, what was assumed."""
    readings = [
        f"{m.text!r} as {mid_sentence(METRICS_BY_ID[m.id].label)}"
        for m in understood.metrics
        if m.by_fallback and m.id in METRICS_BY_ID
    ]
    readings.extend(
        f"{c.corrected_from!r} as {c.name}" for c in understood.companies if c.corrected_from
    )
    readings.extend(f"{written!r} as {read!r}" for written, read in understood.slips.items())
    return f"I read {' and '.join(readings)}. " if readings else ""


@dataclass(frozen=True)
class Fetched:
    """What the tools returned for one route, gathered across its calls."""

    facts: list[Fact]
    sources: list[Source]
    missing: list[str]
    passages: list[Passage]
    metrics: list[MetricInfo]
    # A search this finq cannot run is said by the answer itself (document questions) or
    # done without (a definition stands on the catalog); it is not an error to show.
    unavailable: list[ToolError]
    errors: list[ToolError]
    # Figures the question asks for computed from the fetched ones (a nine-month total, a
    # ratio in words) with the sentences that show their arithmetic; they join the
    # answer's facts for the validator.
    computed: list[Fact]
    computed_sentences: list[str]
    # Whether the arithmetic the question asked for in words could be computed.
    operation_answered: bool

    @classmethod
    def of(cls, results: list[ToolResult], understood: Understood) -> Fetched:
        errors = [result.error for result in results if result.error is not None]
        facts = [fact for result in results for fact in result.facts]
        arithmetic = computed(facts, understood)
        return cls(
            facts=facts,
            sources=[source for result in results for source in result.sources],
            missing=[item for result in results for item in result.missing],
            passages=[passage for result in results for passage in result.passages],
            metrics=[metric for result in results for metric in result.metrics],
            unavailable=[e for e in errors if e.code == "tool_unavailable"],
            errors=[e for e in errors if e.code != "tool_unavailable"],
            computed=arithmetic.facts,
            computed_sentences=arithmetic.sentences,
            operation_answered=arithmetic.operation_answered,
        )


Drafted = tuple[str, list[Citation]]
Drafter = Callable[[RouteDecided, Fetched], Drafted]


def draft_refusal(route: RouteDecided, fetched: Fetched) -> Drafted:
    return compose_refusal(route.capabilities or ""), []


def draft_definition(route: RouteDecided, fetched: Fetched) -> Drafted:
    if fetched.passages:
        # A term the catalog does not hold, explained from the glossary's own words.
        return compose_passages_answer(route.question, fetched.passages, fetched.sources)
    if not fetched.metrics:
        term = route.understood.term or route.question
        return compose_unknown_term(term, route.capabilities or ""), []
    return compose_definition(fetched.metrics), []


def draft_from_documents(route: RouteDecided, fetched: Fetched) -> Drafted:
    """What the filings say, quoted; when nothing held answers it, what finq can answer
    instead (a scoped figure it holds only as the company's total, say)."""
    understood = route.understood
    companies = {c.symbol: c.name for c in understood.companies}
    if fetched.unavailable:
        return compose_unavailable(fetched.unavailable, list(companies.values())), []
    scope = search_scope(route.tool_calls[0].arguments, companies) if route.tool_calls else ""
    text, citations = compose_passages_answer(
        route.question, fetched.passages, fetched.sources, scope, understood.documents.topic
    )
    if not fetched.passages and understood.uncovered_figure:
        text = f"{compose_uncovered(understood)} {text}"
    return text, citations


def draft_metric_list(route: RouteDecided, fetched: Fetched) -> Drafted:
    return compose_metric_list(fetched.metrics, route.understood.category), []


def draft_prices(route: RouteDecided, fetched: Fetched) -> Drafted:
    return compose_price_answer(fetched.facts, fetched.sources, fetched.missing)


def draft_filings_index(route: RouteDecided, fetched: Fetched) -> Drafted:
    companies = [c.name for c in route.understood.companies] or [""]
    return compose_filings_answer(companies[0], fetched.sources, fetched.missing)


def draft_series(route: RouteDecided, fetched: Fetched) -> Drafted:
    text, citations = compose_series_answer(fetched.facts, fetched.sources, fetched.missing)
    text = with_computed(route, fetched, " ".join([text, *compose_trend(fetched.facts)]))
    return reading_note(route.understood) + text, citations


def draft_figures(route: RouteDecided, fetched: Fetched) -> Drafted:
    text, citations = compose_metric_answer(fetched.facts, fetched.sources, fetched.missing)
    if route.understood.comparison:
        text = " ".join([text, *compose_comparisons(fetched.facts)])
    return reading_note(route.understood) + with_computed(route, fetched, text), citations


def with_computed(route: RouteDecided, fetched: Fetched, text: str) -> str:
    """The figures' text with what was computed from them. Arithmetic the question asked for
    in words is the answer, so it comes first; when it could not be computed (a figure it
    needs is not held), the answer says so before the figures it does hold."""
    operation = route.understood.operation
    if operation is None:
        return " ".join([text, *fetched.computed_sentences])
    if not fetched.operation_answered:
        missing = (
            f"The {OPERATION_WORDS[operation.kind]} asked for could not be computed: finq does "
            "not hold every figure it needs."
        )
        return " ".join([missing, text, *fetched.computed_sentences])
    return " ".join([*fetched.computed_sentences, text])


OPERATION_WORDS = {
    "change": "change",
    "sum": "total",
    "difference": "difference",
    "multiple": "multiple",
}


def draft_portfolio(route: RouteDecided, fetched: Fetched) -> Drafted:
    return compose_portfolio(
        route,
        fetched.facts,
        fetched.sources,
        fetched.missing,
        fetched.passages,
        fetched.errors,
    )


def draft_clarification(route: RouteDecided, fetched: Fetched) -> Drafted:
    return route.clarifying_question or "Could you rephrase the question?", []


# One drafter per kind (`shared.intents.DrafterKind`); an intent names the kind that drafts
# its answers, so a new intent drafted like another adds nothing here.
DRAFTERS: dict[DrafterKind, Drafter] = {
    "figures": draft_figures,
    "series": draft_series,
    "prices": draft_prices,
    "filings_index": draft_filings_index,
    "documents": draft_from_documents,
    "definition": draft_definition,
    "metric_list": draft_metric_list,
    "refusal": draft_refusal,
    "clarification": draft_clarification,
    "portfolio": draft_portfolio,
}


def draft_answer(completed: ToolsCompleted) -> AnswerDrafted:
    route = completed.route
    fetched = Fetched.of(completed.results, route.understood)
    drafter = INTENTS_BY_NAME[route.intent].drafter
    text, citations = DRAFTERS[drafter](route, fetched)
    # The portfolio drafter says its own errors: an account two of the user's fit is a
    # question back, not a failure.
    if fetched.errors and not fetched.facts and not fetched.passages and drafter != "portfolio":
        text = " ".join(
            f"That request could not be run: {error.message}." for error in fetched.errors
        )
    clarifying = route.intent == "clarify" or any(
        error.code == "ambiguous_account" for error in fetched.errors
    )
    return AnswerDrafted(
        route=route,
        results=completed.results,
        answer=text,
        citations=citations,
        facts=[*fetched.facts, *fetched.computed],
        needs_clarification=clarifying,
        clarifying_question=text if clarifying else None,
        chart=chart_spec(route, [*fetched.facts, *fetched.computed]),
        suggestions=suggestions(route),
    )
