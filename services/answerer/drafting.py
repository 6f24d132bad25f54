"""Turns fetched tool results into a drafted answer (deterministic mode)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from services.answerer.answer_tables import Glance, figure_glance, glance_lead, glance_workings
from services.answerer.comparisons import compose_comparisons
from services.answerer.computed_figures import Worked, computed
from services.answerer.extras import chart_spec, suggestions
from services.answerer.formatting import (
    compose_filings_answer,
    compose_metric_answer,
    compose_price_answer,
    compose_series_answer,
    differs_sentence,
    fact_citation,
    missing_sentences,
)
from services.answerer.intent_answers import (
    compose_definition,
    compose_refusal,
    compose_trend,
    compose_unavailable,
    compose_uncovered,
    compose_unknown_term,
    fiscal_period,
)
from services.answerer.metric_list import compose_metric_list
from services.answerer.passages import compose_passages_answer, search_scope
from services.answerer.portfolio_answers import draft_portfolio as compose_portfolio
from shared.contracts.answers import AnswerDrafted, AnswerTable, Citation, ToolsCompleted, Working
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import Fact, MetricInfo, Passage, Source, ToolError, ToolResult
from shared.contracts.understanding import Understood
from shared.english import possessive
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
    computed_said: list[Worked]
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
            computed_said=arithmetic.said,
            operation_answered=arithmetic.operation_answered,
        )


@dataclass(frozen=True)
class Drafted:
    """An answer's text and citations; with several years or figures, the text is a short
    lead over `table`, and how each computed figure was reached is in `workings`."""

    text: str
    citations: list[Citation]
    table: AnswerTable | None = None
    workings: list[Working] = field(default_factory=list)


Drafter = Callable[[RouteDecided, Fetched], Drafted]


def draft_refusal(route: RouteDecided, fetched: Fetched) -> Drafted:
    return Drafted(compose_refusal(route.capabilities or ""), [])


def draft_definition(route: RouteDecided, fetched: Fetched) -> Drafted:
    if fetched.passages:
        # A term the catalog does not hold, explained from the glossary's own words.
        return Drafted(*compose_passages_answer(route.question, fetched.passages, fetched.sources))
    if not fetched.metrics:
        term = route.understood.term or route.question
        return Drafted(compose_unknown_term(term, route.capabilities or ""), [])
    return Drafted(compose_definition(fetched.metrics), [])


def draft_from_documents(route: RouteDecided, fetched: Fetched) -> Drafted:
    """What the filings say, quoted; when nothing held answers it, what finq can answer
    instead (a scoped figure it holds only as the company's total, say)."""
    understood = route.understood
    companies = {c.symbol: c.name for c in understood.companies}
    if fetched.unavailable:
        return Drafted(compose_unavailable(fetched.unavailable, list(companies.values())), [])
    scope = search_scope(route.tool_calls[0].arguments, companies) if route.tool_calls else ""
    text, citations = compose_passages_answer(
        route.question, fetched.passages, fetched.sources, scope, understood.documents.topic
    )
    if not fetched.passages and understood.uncovered_figure:
        text = f"{compose_uncovered(understood)} {text}"
    return Drafted(text, citations)


def draft_metric_list(route: RouteDecided, fetched: Fetched) -> Drafted:
    return Drafted(compose_metric_list(fetched.metrics, route.understood.category), [])


def draft_prices(route: RouteDecided, fetched: Fetched) -> Drafted:
    return Drafted(*compose_price_answer(fetched.facts, fetched.sources, fetched.missing))


def draft_filings_index(route: RouteDecided, fetched: Fetched) -> Drafted:
    companies = [c.name for c in route.understood.companies] or [""]
    return Drafted(*compose_filings_answer(companies[0], fetched.sources, fetched.missing))


def draft_series(route: RouteDecided, fetched: Fetched) -> Drafted:
    glance = figure_glance(fetched.facts)
    if glance is not None:
        return draft_glance(route, fetched, glance)
    text, citations = compose_series_answer(fetched.facts, fetched.sources, fetched.missing)
    text = with_computed(route, fetched, " ".join([text, *compose_trend(fetched.facts)]))
    return Drafted(reading_note(route.understood) + text, citations)


def draft_figures(route: RouteDecided, fetched: Fetched) -> Drafted:
    glance = figure_glance(fetched.facts)
    if glance is not None:
        return draft_glance(route, fetched, glance)
    text, citations = compose_metric_answer(fetched.facts, fetched.sources, fetched.missing)
    if route.understood.comparison:
        text = " ".join([text, *compose_comparisons(fetched.facts)])
    return Drafted(reading_note(route.understood) + with_computed(route, fetched, text), citations)


def draft_glance(route: RouteDecided, fetched: Fetched, glance: Glance) -> Drafted:
    """Several years or figures: one short lead over the table, and each computed figure's
    working apart, in `workings`. What the answer computed is what the question asked for
    (a nine-month total, a change over the span), so its claims come before the lead."""
    claims = [f"{worked.claim}." for worked in fetched.computed_said]
    operation = route.understood.operation
    if operation is not None and not fetched.operation_answered:
        claims.insert(0, operation_missing(operation.kind))
    text = " ".join([*claims, glance_lead(glance)])
    by_id = {source.source_id: source for source in fetched.sources}
    citations: dict[str, Citation] = {}
    notes: list[str] = []
    for fact in glance.facts:
        source = by_id.get(fact.source_id)
        if source is not None and source.source_id not in citations:
            citations[source.source_id] = fact_citation(fact, source)
        if fact.differs is not None:
            label = mid_sentence(fact.metric_label)
            about = f"{possessive(fact.company)} {label} in {fiscal_period(fact)}"
            notes.append(differs_sentence(fact, by_id, citations, about))
    notes.extend(missing_sentences(fetched.missing))
    return Drafted(
        reading_note(route.understood) + " ".join([text, *notes]),
        list(citations.values()),
        glance.table,
        glance_workings(glance, fetched.computed_said),
    )


def with_computed(
    route: RouteDecided, fetched: Fetched, text: str, said: list[str] | None = None
) -> str:
    """The figures' text with what was computed from them (`said`: by default each computed
    figure's sentence with its arithmetic). Arithmetic the question asked for in words is
    the answer, so it comes first; when it could not be computed (a figure it needs is not
    held), the answer says so before the figures it does hold."""
    operation = route.understood.operation
    sentences = [w.sentence for w in fetched.computed_said] if said is None else said
    if operation is None:
        return " ".join([text, *sentences])
    if not fetched.operation_answered:
        return " ".join([operation_missing(operation.kind), text, *sentences])
    return " ".join([*sentences, text])


def operation_missing(kind: str) -> str:
    return (
        f"The {OPERATION_WORDS[kind]} asked for could not be computed: finq does not hold "
        "every figure it needs."
    )


OPERATION_WORDS = {
    "change": "change",
    "sum": "total",
    "difference": "difference",
    "multiple": "multiple",
}


def draft_portfolio(route: RouteDecided, fetched: Fetched) -> Drafted:
    return Drafted(
        *compose_portfolio(
            route,
            fetched.facts,
            fetched.sources,
            fetched.missing,
            fetched.passages,
            fetched.errors,
        )
    )


def draft_clarification(route: RouteDecided, fetched: Fetched) -> Drafted:
    return Drafted(route.clarifying_question or "Could you rephrase the question?", [])


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
    drafted = DRAFTERS[drafter](route, fetched)
    text, citations, table = drafted.text, drafted.citations, drafted.table
    # The portfolio drafter says its own errors: an account two of the user's fit is a
    # question back, not a failure.
    if fetched.errors and not fetched.facts and not fetched.passages and drafter != "portfolio":
        text = " ".join(
            f"That request could not be run: {error.message}." for error in fetched.errors
        )
        table = None
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
        table=table,
        workings=drafted.workings if table is not None else [],
        suggestions=suggestions(route),
    )
