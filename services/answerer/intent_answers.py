"""Answers for the intents that are not a table of figures: definitions, refusals, questions
finq recognizes but does not answer yet, and the one-sentence trend over a range.

Definitions and refusals are written without digits: the validator treats every number in
an answer as a figure that needs a fetched fact, and a definition has none.
"""

from __future__ import annotations

from collections import defaultdict

from shared.contracts import Fact, MetricInfo, ToolError
from shared.english import possessive
from shared.formula_words import formula_in_words, in_words
from shared.intents import INTENTS_BY_NAME
from shared.metric_catalog import mid_sentence
from shared.value_formatting import format_value


def compose_definition(metrics: list[MetricInfo]) -> str:
    sentences: list[str] = []
    for metric in metrics:
        sentence = f"{metric.label}: {in_words(metric.description)}"
        if metric.formula:
            sentence += f" finq computes it as {formula_in_words(metric.formula)}."
        else:
            sentence += " finq reads it from the company's filings."
        sentences.append(sentence)
    sentences.append("Ask for it by company and fiscal year to see the figure.")
    return " ".join(sentences)


def compose_unknown_term(term: str, capabilities: str) -> str:
    return (
        f"finq has no definition of {term!r} yet: it defines the financial metrics it can look "
        f"up, such as gross margin, free cash flow or the P/E ratio. {capabilities}"
    )


def compose_refusal(capabilities: str) -> str:
    return f"That is outside what finq answers. {capabilities}"


def compose_not_yet(intent: str, capabilities: str) -> str:
    return f"{INTENTS_BY_NAME[intent].not_yet} {capabilities}"


def compose_unavailable(errors: list[ToolError], companies: list[str]) -> str:
    """A planned tool this version cannot run (search_documents before the documents index)."""
    company = companies[0] if companies else "a company"
    return (
        "Searching what filings say is not available in this version of finq. It can list "
        f"{possessive(company)} filings with links to read them: ask for "
        f"{possessive(company)} latest annual report."
        if errors
        else ""
    )


def compose_trend(facts: list[Fact]) -> list[str]:
    """ "From fiscal 2019 to fiscal 2023, Apple's revenue went from $260.2 billion to $383.3
    billion; its highest was $394.3 billion in fiscal 2022." — one sentence per company and
    figure held for three or more periods; only fetched figures are named."""
    series: dict[tuple[str, str, str], list[Fact]] = defaultdict(list)
    for fact in facts:
        if fact.period_type in {"annual", "quarterly"}:
            series[(fact.symbol, fact.metric, fact.period_type)].append(fact)
    sentences: list[str] = []
    for points in series.values():
        if len(points) < 3:
            continue
        points.sort(key=lambda f: (f.fiscal_year, f.fiscal_quarter or 0))
        first, last = points[0], points[-1]
        label = mid_sentence(first.metric_label)
        direction = (
            "rose" if last.value > first.value else "fell" if last.value < first.value else "held"
        )
        sentence = (
            f"From {_when(first)} to {_when(last)}, {possessive(first.company)} {label} "
            f"{direction} from {format_value(first.value, first.unit)} to "
            f"{format_value(last.value, last.unit)}"
        )
        peak = max(points, key=lambda f: f.value)
        if peak is not last and peak is not first:
            sentence += f"; its highest was {format_value(peak.value, peak.unit)} in {_when(peak)}"
        sentences.append(sentence + ".")
    return sentences


def _when(fact: Fact) -> str:
    if fact.period_type == "quarterly" and fact.fiscal_quarter:
        return f"Q{fact.fiscal_quarter} of fiscal {fact.fiscal_year}"
    return f"fiscal {fact.fiscal_year}"
