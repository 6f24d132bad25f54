"""The typed route of one question, said in plain words for GET /v1/traces/{trace_id}:
what the rules read in the question, which layer decided and why the later layers were or
were not asked, what the plan called, and what the validator checked. Built from the
route and validation alone (pure), so it is the same wherever it is shown."""

from __future__ import annotations

from collections import Counter

from shared.contracts.answers import Validation
from shared.contracts.questions import RouteSummary
from shared.contracts.understanding import CompanyRef, MetricRef, PeriodRef
from shared.metric_catalog import METRICS_BY_ID, mid_sentence


def explain_route(route: RouteSummary, validation: Validation | None = None) -> str:
    """One sentence of clauses joined by semicolons, e.g. "the rules read 'Apple' as Apple
    (AAPL), 'revenue' as revenue and 'fiscal 2023' as FY2023; the rules decided
    metric_lookup alone (score 5 against 1 for metric_trend), so the classifier was not
    needed; the plan called get_financial_metrics; the validator checked 2 numbers and
    passed the answer"."""
    clauses = [reading(route), deciding(route), planning(route)]
    if validation is not None:
        clauses.append(checking(validation))
    return "; ".join(clause for clause in clauses if clause) + "."


def reading(route: RouteSummary) -> str:
    """What the recognizers read, each piece with the words it came from."""
    understood = route.understood
    pieces = [
        *(f"'{written}' as '{read}' (a slip)" for written, read in understood.slips.items()),
        *(_company(company) for company in understood.companies),
        *(_metric(metric) for metric in understood.metrics),
        *(_period(period) for period in understood.periods.asked),
    ]
    said = (
        f"the rules read {_listed(pieces)}"
        if pieces
        else "the rules read no company, figure or period"
    )
    if understood.inherited:
        said += f", and took the {_listed(list(understood.inherited))} from the turn before"
    if understood.not_understood:
        unread = [f"'{span.text}'" for span in understood.not_understood]
        said += f"; nothing read {_listed(unread)}"
    return said


def deciding(route: RouteSummary) -> str:
    """Which layer decided, and why the layers after it were or were not asked."""
    said = _decider(route)
    ranked = _ranked(route)
    if route.decided_by in ("rules", "conversation") and ranked and ranked[0][0] != route.intent:
        # The planner turns a reading it cannot serve into another intent (a figure the
        # stored totals do not cover goes to the filings, a question missing its company
        # becomes a clarifying question).
        said += f", and the planner made it {route.intent}"
    return said


def _ranked(route: RouteSummary) -> list[tuple[str, float]]:
    return sorted(route.understood.scores.items(), key=lambda item: item[1], reverse=True)


def _decider(route: RouteSummary) -> str:
    understood = route.understood
    ranked = _ranked(route)
    unsure = understood.unsure_layers
    best = ranked[0][0] if ranked else route.intent
    if route.decided_by in ("rules", "conversation") and not unsure:
        who = "the conversation" if route.decided_by == "conversation" else "the rules"
        score = ""
        if ranked:
            score = f" (score {ranked[0][1]:g}"
            if len(ranked) > 1:
                score += f" against {ranked[1][1]:g} for {ranked[1][0]}"
            score += ")"
        if unsure is None:  # a route from before the router said which layers were unsure
            return f"{who} decided {best}{score}"
        return f"{who} decided {best} alone{score}, so the classifier was not needed"
    rules = (
        f"the rules were unsure ({ranked[0][0]} scored {ranked[0][1]:g})"
        if ranked and ranked[0][1] > 0
        else "the rules found no intent"
    )
    if route.decided_by == "classifier":
        return (
            f"{rules}, so the trained classifier chose {route.intent} "
            f"(probability {route.confidence:.2f})"
        )
    if route.decided_by == "llm":
        usage = understood.llm
        spent = ""
        if usage is not None:
            calls = f"{usage.calls} call{'s' if usage.calls != 1 else ''}"
            tokens = usage.prompt_tokens + usage.completion_tokens
            spent = f" ({usage.model}, {calls}, {tokens} tokens)"
        classifier = (
            " and so was the classifier" if "classifier" in (unsure or []) else ", no classifier"
        )
        return f"{rules}{classifier}, so the model chose {route.intent}{spent}"
    # Nobody was sure: the rules' best reading stands.
    others = [
        {"classifier": "the classifier", "llm": "the model"}[layer]
        for layer in unsure or []
        if layer in ("classifier", "llm")
    ]
    if not others:
        return f"{rules} and no other layer was there to ask, so their best reading stands: {best}"
    verb = "was" if len(others) == 1 else "were"
    return f"{rules}, and so {verb} {_listed(others)}, so their best reading stands: {best}"


def planning(route: RouteSummary) -> str:
    """What the plan called, or why it called nothing."""
    refused = route.understood.refused_tools
    if refused:
        return f"the plan named {_listed(refused)}, outside what {route.intent} may call: refused"
    if route.tool_calls:
        counted = Counter(call.tool for call in route.tool_calls)
        calls = [tool if n == 1 else f"{tool} {n} times" for tool, n in counted.items()]
        return f"the plan called {_listed(calls)}"
    if route.intent == "clarify":
        return "no tool was called: a clarifying question went back"
    if route.intent == "out_of_scope":
        return "no tool was called: the question is outside what finq answers"
    return "no tool was called"


def checking(validation: Validation) -> str:
    """What the validator checked, and what it found and did."""
    numbers = validation.numbers_checked
    said = f"the validator checked {numbers} number{'s' if numbers != 1 else ''}"
    issues = len(validation.issues)
    if issues:
        said += f", found {issues} issue{'s' if issues != 1 else ''} (worst: {validation.severity})"
    said += " and passed the answer" if validation.passed else " and did not pass the answer"
    if validation.attempts > 1:
        said += f" after {validation.attempts} attempts"
    repairs = len(validation.repairs)
    if repairs:
        said += f", with {repairs} repair{'s' if repairs != 1 else ''}"
    return said


def _company(company: CompanyRef) -> str:
    return f"'{company.text}' as {company.name} ({company.symbol})"


# How a metric was read, when not by its exact name.
_METHODS = {
    "learned": "an alias learned earlier",
    "composed": "a ratio in words",
    "fuzzy": "a close spelling",
    "embedding": "similar meaning",
    "spoken": "a spoken form",
    "conversation": "from the turn before",
    "llm": "by the model",
}


def _metric(metric: MetricRef) -> str:
    known = METRICS_BY_ID.get(metric.id)
    name = mid_sentence(known.label) if known is not None else metric.id
    how = f" ({_METHODS[metric.method]})" if metric.method in _METHODS else ""
    scoped = f", narrowed to {_listed([s.text for s in metric.scope])}" if metric.scope else ""
    if metric.text is None:
        return f"{name}{how}{scoped}"
    return f"'{metric.text}' as {name}{how}{scoped}"


def _period(period: PeriodRef) -> str:
    if period.fiscal_quarter is not None and period.fiscal_year is not None:
        resolved = f"Q{period.fiscal_quarter} FY{period.fiscal_year}"
    elif period.fiscal_year is not None:
        resolved = f"FY{period.fiscal_year}"
    elif period.day is not None:
        resolved = period.day.isoformat()
    else:
        resolved = f"a {period.kind} period"
    return f"'{period.text}' as {resolved}"


def _listed(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"
