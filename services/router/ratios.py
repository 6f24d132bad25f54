"""Ratios asked in words that the catalog does not hold as a metric of their own: "what
percentage of Apple's revenue was cost of sales", "SG&A relative to gross profit". The
metric finder reads a catalog ratio through the formula index; when there is none, the
two figures are fetched and the answerer divides them, showing the arithmetic.

Which figure is the whole: the one named right after "percentage/share/… of" or "as a
percentage of", "relative to", "divided by", "per dollar of"; in "ratio of A to B" and "A to
B ratio" the first named is divided by the second.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from shared.contracts.understanding import RatioAsked
from shared.metric_catalog import METRICS_BY_ID
from shared.metric_resolver import FORMULA_INDEX, RATIO_VERBS, normalize_phrase

# "on each dollar of revenue" names the whole wherever it stands ("how many cents of
# operating profit did Alphabet make on each dollar of revenue").
_PER_DOLLAR_OF = re.compile(r"\b(?:each|every|per|a)\s+dollar\s+of\b", re.IGNORECASE)
_PART_OF = re.compile(
    r"\b(?:what|which|how much of|the)?\s*(?:percentage|percent|per\s?cent|share|proportion"
    r"|portion|fraction|part|%)\s+of\b|\bas\s+an?\s+(?:percentage|percent|share|proportion"
    r"|fraction|%)\s+of\b|\brelative\s+to\b|\bdivided\s+by\b",
    re.IGNORECASE,
)
# The words that send the part to the whole ("did Nvidia keep as", "was eaten up by"), read
# as part of the ratio once one is asked; so are the cents a part is counted in.
_RATIO_WORDS = re.compile(
    rf"\b(?:{RATIO_VERBS}|cents?|up|out|as|cover(?:s|ed|ing)?|times|over|with)\b", re.IGNORECASE
)
# "How many times did operating income cover interest expense": the first over the second.
_COVERS = re.compile(r"\bcover(?:s|ed|ing)?\b", re.IGNORECASE)
_RATIO_OF = re.compile(r"\bratio\s+of\b|\bto\b.{0,40}?\bratio\b", re.IGNORECASE)


def _shares_a_unit(numerator: str, denominator: str) -> bool:
    first, second = METRICS_BY_ID.get(numerator), METRICS_BY_ID.get(denominator)
    return (
        first is not None
        and second is not None
        and first.unit == second.unit == "USD"
        and first.kind == second.kind
    )


def metric_positions(
    text: str, metrics: list[str], names_of: Mapping[str, Sequence[str]]
) -> dict[str, int]:
    """Where each metric is first named in the text, as an index of its normalized words."""
    words = normalize_phrase(text).split()
    positions: dict[str, int] = {}
    for metric in metrics:
        for phrase in names_of.get(metric, ()):
            size = len(phrase.split())
            for index in range(len(words) - size + 1):
                if " ".join(words[index : index + size]) == phrase:
                    positions[metric] = min(positions.get(metric, index), index)
                    break
    return positions


def ratio_asked(
    text: str, metrics: list[str], names_of: Mapping[str, Sequence[str]]
) -> tuple[RatioAsked | None, list[tuple[int, int]]]:
    """The ratio of two figures a question asks for, and the spans of its ratio words; None
    when it asks for none. `names_of` holds each metric's normalized names."""
    if len(metrics) != 2:
        return None, []
    positions = metric_positions(text, metrics, names_of)
    if len(positions) != 2:
        return None, []
    first, second = sorted(metrics, key=lambda metric: positions[metric])
    if (match := _PER_DOLLAR_OF.search(text)) is not None:
        at = len(normalize_phrase(text[: match.end()]).split())
        after = [m for m in (first, second) if positions[m] >= at]
        denominator = after[0] if after else second
        numerator = second if denominator == first else first
    elif (match := _RATIO_OF.search(text)) is not None:
        numerator, denominator = first, second
    elif (match := _COVERS.search(text)) is not None:
        # "Operating income covered interest expense" or "covered its interest
        # expense out of operating income": the order the catalog's coverage ratio holds them in.
        numerator, denominator = first, second
        if ("/", first, second) not in FORMULA_INDEX and ("/", second, first) in FORMULA_INDEX:
            numerator, denominator = second, first
    elif (match := _PART_OF.search(text)) is not None:
        # The figure named first after the ratio words is the whole.
        at = len(normalize_phrase(text[: match.end()]).split())
        after = [m for m in (first, second) if positions[m] >= at]
        denominator = after[0] if after else second
        numerator = second if denominator == first else first
    else:
        return None, []
    if not _shares_a_unit(numerator, denominator):
        return None, []
    asked = RatioAsked(numerator=numerator, denominator=denominator, text=match.group(0).strip())
    return asked, [match.span(), *(word.span() for word in _RATIO_WORDS.finditer(text))]
