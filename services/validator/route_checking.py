"""Checks an answer against the question as the router understood it: the figures it shows
must be of the companies, metrics and periods asked, and a question the route does not
cover (a segment, a product line, words nothing read) is never answered with a figure.

The number checks hold each figure to a fetched fact; these hold the facts to the
question. A right figure of the wrong period, company or scope is the answer to a
different question, and fails as "high" like a wrong figure.
"""

from __future__ import annotations

from shared.contracts.answers import AnswerDrafted, ValidationIssue
from shared.contracts.tool_results import Fact
from shared.contracts.understanding import Understood
from shared.value_formatting import format_value

FIGURE_INTENTS = frozenset({"metric_lookup", "metric_comparison", "metric_trend"})


def _shown(fact: Fact, draft: AnswerDrafted) -> str:
    """The figure as the answer (or a cell of its table) writes it, so a failing sentence or
    cell can be withheld; empty when neither shows it in the template's words."""
    written = format_value(fact.value, fact.unit)
    cells = [cell for row in draft.table.rows for cell in row.cells] if draft.table else []
    return written if written in draft.answer or written in cells else ""


def asked_years(understood: Understood) -> set[int]:
    """The fiscal years the question asks for, and the years a growth compares them with."""
    periods = understood.periods
    years = set(periods.fiscal_years)
    years.update(ref.fiscal_year for ref in periods.asked if ref.fiscal_year is not None)
    if years and (understood.growth or periods.same_quarter_last_year):
        years.update(year - 1 for year in list(years))
    return years


def _describe(fact: Fact) -> str:
    return f"{fact.company}'s {fact.metric_label} for {fact.period}"


def route_issues(draft: AnswerDrafted) -> list[ValidationIssue]:
    route = draft.route
    if route.intent not in FIGURE_INTENTS or not draft.facts:
        return []
    understood = route.understood
    issues: list[ValidationIssue] = []

    def issue(kind: str, fact: Fact, message: str) -> None:
        issues.append(
            ValidationIssue(kind=kind, text=_shown(fact, draft), message=message, severity="high")
        )

    if not understood.covered:
        unread = [scope.text for m in understood.metrics for scope in m.scope]
        unread += [span.text for span in understood.not_understood]
        for fact in draft.facts:
            issue(
                "scope",
                fact,
                f"the question asks about {', '.join(repr(t) for t in unread)}; "
                f"{_describe(fact)} is the company's total, not that",
            )
        return issues

    symbols = set(understood.symbols)
    metrics = set(understood.metric_ids)
    years = asked_years(understood)
    periods = understood.periods
    quarters = set(periods.fiscal_quarters) if periods.period_type == "quarterly" else set()
    for ref in periods.asked:
        if ref.fiscal_year is not None and ref.fiscal_year not in periods.fiscal_years:
            issues.append(
                ValidationIssue(
                    kind="period",
                    text="",
                    message=(
                        f"the question asks for {ref.text!r} (fiscal {ref.fiscal_year}), "
                        "which the plan did not fetch"
                    ),
                    severity="high",
                )
            )

    def asked_period(fact: Fact) -> bool:
        return (not years or fact.fiscal_year in years) and (
            not quarters or fact.fiscal_quarter is None or fact.fiscal_quarter in quarters
        )

    # A period beside the one asked is context (a model comparing with the year before, a
    # plan refetched for it); a figure only of other periods answers another question.
    def computed_from_asked(fact: Fact) -> bool:
        """A figure computed from the asked ones (their change, sum or multiple) answers the
        question the arithmetic asked; its inputs are held to it like any figure."""
        return bool(fact.inputs) and all(
            (not symbols or (i.symbol or fact.symbol) in symbols)
            and (not metrics or i.metric in metrics)
            and asked_period(i)  # type: ignore[arg-type]
            for i in fact.inputs
        )

    answered = {(f.symbol, f.metric) for f in draft.facts if asked_period(f)}
    for fact in draft.facts:
        if computed_from_asked(fact):
            continue
        if symbols and fact.symbol not in symbols:
            issue("company", fact, f"{_describe(fact)}: the question is not about {fact.company}")
        elif metrics and fact.metric not in metrics:
            issue("metric", fact, f"{_describe(fact)}: the question asks for another figure")
        elif (fact.symbol, fact.metric) not in answered:
            wanted = ", ".join(str(year) for year in sorted(years)) or "other periods"
            issue("period", fact, f"{_describe(fact)}: the question asks for fiscal {wanted}")
    return issues
