"""Arithmetic a figure question asks for, read as a normalizer reads a date: a closed set
of words that ask to compare, add or divide figures, taken together with what the rest of
the reading holds (how many companies, how many periods, how many figures).

- One company, one figure, two periods (or a span of years and a word of the whole span:
  "overall", "cumulative"), and a word of change ("grew", "fell", "went up",
  "difference", "how much more", "%"): the figure's change, in percent when a percent is
  asked or the words speak of growth, in the figure's own unit when dollars or an amount
  are asked, both when neither is said.
- One company, two or more figures whose sum is a catalog figure ("long-term debt plus
  current debt", "borrowings including the part due this year"): that figure, whose formula
  shows the parts.
- Several companies, one figure, one period: their sum ("combined", "add up"), the first
  one's excess over the second ("difference", "gap", "how much more"), or the first as a
  multiple of the second ("how many times", "what multiple").

The words read here are read: they are no reason to refuse the question (see
`services.router.coverage`). Without the reading they need (a second period, a second
company), they are left unread, and the question is not answered as if they were not there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from shared.change_words import GROWTH as _GROWTH
from shared.change_words import yes_no_direction
from shared.contracts.understanding import AskedOperation
from shared.metric_catalog import METRICS_BY_ID
from shared.metric_resolver import FORMULA_INDEX

_COMPARATIVE = re.compile(
    r"\b(?:higher|lower|more|less|greater|smaller|bigger|larger)\b(?=.*\bthan\b)", re.I
)
_BY_HOW_MUCH = re.compile(r"\bby how much\b", re.I)
_PERCENT = re.compile(r"%|\bper\s?cent(?:age)?s?\b|\bpct\b|\bpercentage[\s-]?wise\b", re.I)
_UNITS = re.compile(
    r"\$|\bdollars?\b|\bin (?:absolute|dollar) terms\b|\bamount\b"
    r"|\bhow (?:much|many) (?:more|less|fewer|bigger|smaller|higher|lower)\b"
    # Asked to subtract one year's figure from the other's: the difference itself.
    r"|\bsubtract\w*",
    re.I,
)
_CHANGE = re.compile(
    r"\b(?:chang\w*|differ\w*|gap|delta|swing|by how much|how much (?:more|less)"
    r"|how many more|more|less|fewer)\b",
    re.I,
)
# Words that ask for a change over a whole span of years, first year to last ("the overall
# increase from 2019 to 2024"), rather than each year's.
_WHOLE_SPAN = re.compile(
    r"\b(?:overall|total|cumulative(?:ly)?|in all|altogether|all told|end to end)\b", re.I
)
# The words of a sum; "the total" only across companies, where it adds one figure up.
_SUM_WORDS = (
    r"combined|together|altogether|in total|total of|sum(?:med)?|add(?:ed|ing)? (?:up|together)"
    r"|aggregate"
)
_SUM = re.compile(rf"\b(?:{_SUM_WORDS}|the total)\b", re.I)
# The words that take one figure from another: "operating cash flow minus capex", "net of".
_SUBTRACTING = r"\bminus\b|\bless\b(?!\s+than)|\bnet of\b|\bsubtract\w*|\bdeduct\w*"
# Parts added into one figure: the words of a sum, and of counting parts in.
_ADDED = re.compile(
    rf"{_SUM.pattern}|\+|\bplus\b|\badd\b|\bcount(?:ing|s)?\b|\bboth\b|\bincluding\b", re.I
)
_MULTIPLE = re.compile(
    r"\bhow many times\b|\btimes (?:as|bigger|larger|more|higher|greater)\b"
    r"|\b(?:what|which) multiple\b|\bmultiple of\b",
    re.I,
)
_DIFFERENCE = re.compile(
    r"\b(?:difference|gap|delta|by how much)\b"
    r"|\bhow (?:much|many) (?:more|less|fewer|bigger|smaller|higher|lower)\b"
    r"|\b(?:more|less|fewer) [\w$ ]{0,30}?\bthan\b",
    re.I,
)

Span = tuple[int, int]


def _spans(pattern: re.Pattern[str], text: str) -> list[Span]:
    return [match.span() for match in pattern.finditer(text)]


def read_operation(
    question: str, companies: int, periods: int, metrics: int
) -> tuple[AskedOperation | None, list[Span]]:
    """The arithmetic `question` asks of its figures, with the spans of the words that ask
    it; None when it asks none or its reading lacks what the arithmetic needs."""
    if metrics >= 2 and companies == 1:
        return _across_metrics(question, periods, metrics)
    if metrics != 1:
        return None, []
    if companies >= 2:
        for kind, pattern in (
            ("multiple", _MULTIPLE),
            ("sum", _SUM),
            ("difference", _DIFFERENCE),
        ):
            spans = _spans(pattern, question)
            if spans:
                return _operation(kind, question, spans), spans
        return None, []
    if companies == 1 and (periods == 2 or (periods > 2 and _WHOLE_SPAN.search(question))):
        growth, change = _spans(_GROWTH, question), _spans(_CHANGE, question)
        percent, units = _spans(_PERCENT, question), _spans(_UNITS, question)
        # A yes-or-no "lower than" or "higher than" between two years asks the change, in
        # one direction.
        comparing = _spans(_COMPARATIVE, question) if yes_no_direction(question) else []
        if not (growth or change or percent or comparing):
            return None, []
        spans = sorted([*growth, *change, *percent, *units, *comparing])
        # Growth is told in percent; a change nobody said how to measure, both ways.
        as_percent = bool(percent) or not units
        # "By how much did it grow?" is answered both ways, unless one is named.
        in_units = bool(units) or not (percent or growth) or bool(_BY_HOW_MUCH.search(question))
        direction = yes_no_direction(question)
        if direction is not None and not (percent or units):
            # "Did it rise?" is answered with the change both ways, behind the yes or no.
            as_percent = in_units = True
        operation = _operation("change", question, spans)
        return operation.model_copy(
            update={
                "as_percent": as_percent,
                "in_units": in_units,
                "yes_no_direction": direction,
            }
        ), spans
    return None, []


# Figures of one company added into one the catalog does not name ("R&D and SG&A
# combined"): the words of a sum, without "the total", which names a figure ("the total
# revenue and net income" asks for two).
_METRICS_ADDED = re.compile(rf"\b(?:{_SUM_WORDS}|add)\b|\+|\bplus\b", re.I)


_SUBTRACTED_IN_WORDS = re.compile(rf"{_SUBTRACTING}|−", re.I)


def _across_metrics(
    question: str, periods: int, metrics: int
) -> tuple[AskedOperation | None, list[Span]]:
    """Two or more figures of one company, added up ("R&D and SG&A combined"), or the first
    less the second ("the difference between gross profit and operating income"), as the
    question names them; the answerer computes it for each period asked."""
    if spans := _spans(_METRICS_ADDED, question):
        return _operation("sum", question, spans), spans
    # Between periods, "how much more" asks how each figure changed. A dash between words
    # ("R&D and SG&A - how much together?") is punctuation, not a subtraction.
    differed = _spans(_SUBTRACTED_IN_WORDS, question) or _spans(_DIFFERENCE, question)
    if metrics == 2 and periods <= 1 and (spans := differed):
        return _operation("difference", question, spans), spans
    return None, []


def sum_of_parts(question: str, metrics: Sequence[str]) -> tuple[str | None, list[Span]]:
    """The catalog figure a question asks for as the sum of its parts, and the spans of the
    words that add them; None when it adds nothing or its figures sum to no catalog figure.

    Two parts a formula adds (current debt and long-term debt make total debt), or a whole
    named with parts of its own formula ("all borrowings, long-term debt included"): the
    whole, fetched as one figure, its formula showing the parts."""
    if len(metrics) < 2 or not (spans := _spans(_ADDED, question)):
        return None, []
    for whole in metrics:
        inputs = METRICS_BY_ID[whole].inputs if whole in METRICS_BY_ID else ()
        if all(other == whole or other in inputs for other in metrics):
            return whole, spans
    if len(metrics) == 2:
        first, second = metrics
        whole = FORMULA_INDEX.get(("+", first, second)) or FORMULA_INDEX.get(("+", second, first))
        if whole is not None:
            return whole, spans
    return None, []


# Words that take one figure from another: "operating cash flow minus capex", "net of".
_SUBTRACTED = re.compile(rf"{_SUBTRACTING}|\s[−-]\s", re.I)


def difference_of_parts(question: str, metrics: Sequence[str]) -> tuple[str | None, list[Span]]:
    """The catalog figure a question asks for as one figure less another, in the order it
    names them ("cash from operations, less capital spending" is free cash flow), and the
    spans of the words that subtract; None when it subtracts nothing or the difference is
    no catalog figure."""
    if len(metrics) != 2 or not (spans := _spans(_SUBTRACTED, question)):
        return None, []
    whole = FORMULA_INDEX.get(("-", metrics[0], metrics[1]))
    return (whole, spans) if whole is not None else (None, [])


def _operation(kind: str, question: str, spans: Sequence[Span]) -> AskedOperation:
    # Words two patterns both read ("how many more" is change and units) are said once.
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    text = " ".join(question[start:end] for start, end in merged)
    return AskedOperation(kind=kind, text=text)  # type: ignore[arg-type]
