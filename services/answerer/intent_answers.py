"""Answers for the intents that are not a table of figures: definitions, refusals, questions
finq recognizes but does not answer yet, and the one-sentence trend over a range.

Definitions and refusals are written without digits: the validator treats every number in
an answer as a figure that needs a fetched fact, and a definition has none.
"""

from __future__ import annotations

from collections import defaultdict

from shared.contracts.tool_results import Fact, MetricInfo, ToolError
from shared.contracts.understanding import Understood
from shared.english import possessive
from shared.formula_words import formula_in_words, in_words
from shared.metric_catalog import METRICS_BY_ID, mid_sentence
from shared.value_formatting import format_fact_value


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
    """ "Between fiscal 2019 and fiscal 2023, Apple's revenue went from $260.2 billion to $383.3
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
            f"From {fiscal_period(first)} to {fiscal_period(last)}, "
            f"{possessive(first.company)} {label} {direction} from "
            f"{format_fact_value(first)} to {format_fact_value(last)}"
        )
        peak = max(points, key=lambda f: f.value)
        if peak is not last and peak is not first:
            sentence += f"; its highest was {format_fact_value(peak)} in {fiscal_period(peak)}"
        sentences.append(sentence + ".")
    return sentences


def fiscal_period(fact: Fact) -> str:
    """ "Q2 of fiscal 2024", "fiscal 2024" or "the twelve months to Q1 of fiscal 2026", as
    the answers name a fact's period."""
    if fact.period_type == "quarterly" and fact.fiscal_quarter:
        return f"Q{fact.fiscal_quarter} of fiscal {fact.fiscal_year}"
    if fact.period_type == "ttm" and fact.fiscal_quarter:
        return f"the twelve months to Q{fact.fiscal_quarter} of fiscal {fact.fiscal_year}"
    return f"fiscal {fact.fiscal_year}"


_SCOPE_WORDS = {
    "segment": "segment",
    "product": "product line",
    "geography": "region",
    "per_share": "per-share basis",
    "as_reported": "reporting basis",
    "other": "part of the business",
}


def compose_uncovered(understood: Understood) -> str:
    """What finq can answer instead of a figure it does not hold as asked: its figures are
    company totals, so a segment, a product line or a region is named back, never answered
    with the total. Written without digits: there is no fetched fact to check one against."""
    company = understood.companies[0].name if understood.companies else "the company"
    labels = [
        mid_sentence(METRICS_BY_ID[m.id].label) for m in understood.metrics if m.id in METRICS_BY_ID
    ]
    if not labels:
        # The words as the user wrote them, else the finder's normalized phrase.
        written = [span.text for span in understood.not_understood]
        phrase = (written or understood.unknown_metric_phrases or ["that"])[0]
        return (
            f"finq holds no figure called {phrase!r} for {company}: its figures are the "
            "company totals of the financial statements (revenue, profits, cash flows, "
            "balances and the ratios built on them). What a filing says about it can be "
            "searched once the filing is loaded."
        )
    label = " and ".join(dict.fromkeys(labels))
    scopes = list(dict.fromkeys(scope.text for m in understood.metrics for scope in m.scope))
    if scopes:
        kinds = " or ".join(
            dict.fromkeys(_SCOPE_WORDS[s.kind] for m in understood.metrics for s in m.scope)
        )
        return (
            f"finq holds {possessive(company)} {label} as a company total, not "
            f"{' '.join(scopes)} {label}: a figure by {kinds} comes from the tables of "
            f"{possessive(company)} filings, so finq answers it only from a loaded filing."
        )
    unread = ", ".join(repr(span.text) for span in understood.not_understood)
    return (
        f"finq read {possessive(company)} {label} in that question but not {unread}, so it "
        f"does not answer with the company's total {label}; ask for the {label} alone, or "
        "load the filing to search what it says."
    )
