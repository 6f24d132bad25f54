"""Sentences that set companies side by side: which had more of a figure in a period.

Only figures already fetched appear, each beside its company, so the validator checks them
like any other; no difference or ratio is stated, since those would be new numbers.
"""

from __future__ import annotations

from collections import defaultdict

from shared.contracts.tool_results import Fact
from shared.english import possessive
from shared.metric_catalog import mid_sentence
from shared.value_formatting import format_fact_value


def _period_words(fact: Fact) -> str:
    if fact.period_type == "quarterly" and fact.fiscal_quarter:
        return f"Q{fact.fiscal_quarter} of fiscal {fact.fiscal_year}"
    if fact.period_type == "ttm":
        return f"the twelve months to Q{fact.fiscal_quarter} of fiscal {fact.fiscal_year}"
    return f"fiscal {fact.fiscal_year}"


def compose_comparisons(facts: list[Fact]) -> list[str]:
    """One sentence per metric and period that two or more companies have figures for."""
    groups: dict[tuple[str, str, int, int], list[Fact]] = defaultdict(list)
    for fact in facts:
        key = (fact.metric, fact.period_type, fact.fiscal_year, fact.fiscal_quarter or 0)
        groups[key].append(fact)
    sentences: list[str] = []
    for group in groups.values():
        companies = {fact.symbol for fact in group}
        if len(companies) < 2 or len(companies) != len(group):
            continue
        ranked = sorted(group, key=lambda fact: fact.value, reverse=True)
        first = ranked[0]
        label = mid_sentence(first.metric_label)
        when = _period_words(first)
        if len(ranked) == 2:
            top, other = ranked
            if top.value == other.value:
                sentence = (
                    f"In {when}, {possessive(top.company)} and {possessive(other.company)} "
                    f"{label} were the same: {format_fact_value(top)}."
                )
            else:
                # No parentheses around figures: "($1.2 billion)" reads as a negative amount.
                sentence = (
                    f"In {when}, {possessive(top.company)} {label} was higher than "
                    f"{possessive(other.company)}: {format_fact_value(top)} against "
                    f"{format_fact_value(other)}."
                )
        else:
            order = ", ".join(f"{fact.company} at {format_fact_value(fact)}" for fact in ranked)
            sentence = f"In {when}, from highest to lowest {label}: {order}."
        ends = {fact.period_end for fact in group}
        if len(ends) > 1:
            sentence += (
                " Their fiscal periods end on different dates: "
                + ", ".join(f"{fact.company} {fact.period_end.isoformat()}" for fact in ranked)
                + "."
            )
        sentences.append(sentence)
    return sentences
