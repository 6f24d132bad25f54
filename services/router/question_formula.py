"""A figure the question defines itself: "DPO is defined as: 365 * (average accounts payable
between FY2016 and FY2017) / (FY2017 COGS + change in inventory between FY2016 and FY2017)".

The definition is read into a formula over catalog metrics, in the catalog's own formula
language (`avg(x)` the average of a balance over the year, `x[-1]` the year before), so the
figure is computed by the question's formula, not finq's, from the same stored figures, and
its working shown. A definition with any term finq cannot name is not read: the question is
then answered as finq defines the figure, or not at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.metric_catalog import METRICS_BY_ID
from shared.metric_resolver import MetricResolver

_DEFINED = re.compile(
    r"\b(?:is|are|be)\s+(?:defined|calculated|computed|measured)\s+as\s*:?\s*"
    r"(?P<expression>(?:[^.?;]|\.\d)+)",
    re.IGNORECASE,
)
# Operators and brackets, as people write them; a hyphen only with spaces around it.
_TOKEN = re.compile(r"(\*|×|/|÷|\+|\s-\s|\s−\s|\(|\))")
_OPERATOR = {"*": "*", "×": "*", "/": "/", "÷": "/", "+": "+", "-": "-", "−": "-"}
_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
# "between FY2016 and FY2017", "for FY2017", "in fiscal 2017", "FY2017 …": the years the
# operand is read over, which the asked year and the formula's lags say already.
_YEARS = re.compile(
    r"\b(?:between|from|for|in|of|at)?\s*(?:(?:fiscal(?:\s+year)?|fy)\s*'?\d{2,4}|(?:19|20)\d{2})"
    r"(?:\s+(?:and|to|through)\s+(?:(?:fiscal(?:\s+year)?|fy)\s*'?\d{2,4}|(?:19|20)\d{2}))?\b",
    re.IGNORECASE,
)
_AVERAGE = re.compile(r"^(?:the\s+)?(?:average|avg\.?|mean)\s+(?:of\s+)?(?P<name>.+)$", re.I)
_CHANGE = re.compile(r"^(?:the\s+)?(?:change|increase)\s+in\s+(?P<name>.+)$", re.I)


@dataclass(frozen=True, slots=True)
class QuestionFormula:
    formula: str  # over catalog metric ids: "365 * avg(accounts_payable) / (…)"
    span: tuple[int, int]  # where the question writes the definition: read


def _metric(phrase: str, resolver: MetricResolver) -> str | None:
    # Exactly a catalog name or alias: a near name ("number of stores" for shares
    # outstanding) would compute another figure than the one defined.
    resolution = resolver.exact(phrase)
    if resolution is None:
        return None
    metric = METRICS_BY_ID.get(resolution.metric_id)
    # The deriver computes from reported figures; a derived one is a formula of its own.
    return resolution.metric_id if metric is not None and not metric.derived else None


def _operand(text: str, resolver: MetricResolver) -> str | None:
    text = " ".join(_YEARS.sub(" ", text).split()).strip(" ,:")
    if _NUMBER.match(text):
        return text
    if average := _AVERAGE.match(text):
        name = _metric(average["name"], resolver)
        return f"avg({name})" if name else None
    if change := _CHANGE.match(text):
        name = _metric(change["name"], resolver)
        return f"({name} - {name}[-1])" if name else None
    return _metric(text, resolver)


def question_formula(question: str, resolver: MetricResolver) -> QuestionFormula | None:
    """The formula a question defines its figure by, or None when it defines none or a term
    of it names no reported catalog figure."""
    match = _DEFINED.search(question)
    if match is None:
        return None
    expression = match["expression"].strip()
    parts: list[str] = []
    operands = 0
    for piece in _TOKEN.split(expression):
        token = piece.strip()
        if not token:
            continue
        if token in _OPERATOR:
            parts.append(_OPERATOR[token])
        elif token in "()":
            parts.append(token)
        else:
            operand = _operand(token, resolver)
            if operand is None:
                return None
            parts.append(operand)
            operands += 1
    formula = " ".join(parts).replace("( ", "(").replace(" )", ")")
    if operands < 2:
        return None
    try:
        compile(formula, "<question formula>", "eval")
    except SyntaxError:
        return None
    start = match.start("expression")
    return QuestionFormula(formula, (match.start(), start + len(match["expression"].rstrip())))
