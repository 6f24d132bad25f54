"""A filing the question names as the source of its figures: "according to its annual
report", "from the FY2019 10-Q", "on the balance sheet", "(FY21 10-K)".

Such a question asks for the figure as that filing states it: the cell of its statement,
with its page, not a figure as a later filing restated it. A year written beside the
filing's name is the filing's, not a period asked (the 2019 10-K's column for 2018 is asked
as 2018, as that filing states it), unless it is the only year the question names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.tools import FilingForm

# A form's name as people write it; "form" before it is optional.
_FORM = r"(?:form\s+)?(?P<form>10-?k|10-?q|annual\s+report|quarterly\s+report)(?:'?s)?\b"
# A year as written beside a filing's name: "2017", "fiscal 2017", "fiscal year 2017",
# "FY2017", "FY17", "FY '17".
_YEAR = (
    r"(?P<when>(?:fiscal(?:\s+year)?\s+|fy\s?'?)(?P<year>(?:19|20)?\d{2})"
    r"|(?P<year_bare>(?:19|20)\d{2}))"
)
_YEAR_THEN_FORM = re.compile(_YEAR + r"\s+" + _FORM, re.IGNORECASE)
_FORM_THEN_YEAR = re.compile(_FORM + r"\s+(?:for\s+(?:the\s+)?)?" + _YEAR, re.IGNORECASE)
_FORM_ALONE = re.compile(_FORM, re.IGNORECASE)
# The statements name no form: a 10-K's and a 10-Q's are both statements.
_STATEMENT = re.compile(
    r"\b(?:balance\s+sheets?|income\s+statements?|cash[-\s]flows?\s+statements?"
    r"|statements?\s+of\s+(?:cash\s+flows|operations|income|financial\s+position)"
    r"|the\s+filing|its\s+filing|(?:the|its)\s+annual\s+filing)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class FilingNamed:
    """The filing a question takes its figures from."""

    form: FilingForm | None  # None: a statement or "the filing", of either form
    fiscal_year: int | None  # the filing's own year, when written beside its name
    # Where the question names it and its statements: read, not a topic.
    spans: tuple[tuple[int, int], ...]
    # Where that year stands in the question: read as the filing's, not as a period asked.
    year_span: tuple[int, int] | None = None


def _form(written: str) -> FilingForm:
    return "10-Q" if "q" in written.lower() else "10-K"


def _year(match: re.Match[str]) -> tuple[int, tuple[int, int]]:
    name = "year" if match.group("year") else "year_bare"
    digits = match.group(name)
    year = int(digits) if len(digits) == 4 else 2000 + int(digits)
    return year, match.span("when")


def filing_named(text: str) -> FilingNamed | None:
    """The filing `text` names as its source, with its year when one is written beside it;
    None when it names none."""
    statements = tuple(match.span() for match in _STATEMENT.finditer(text))
    for pattern in (_YEAR_THEN_FORM, _FORM_THEN_YEAR):
        match = pattern.search(text)
        if match is not None:
            year, span = _year(match)
            return FilingNamed(_form(match.group("form")), year, (match.span(), *statements), span)
    match = _FORM_ALONE.search(text)
    if match is not None:
        return FilingNamed(_form(match.group("form")), None, (match.span(), *statements))
    if statements:
        return FilingNamed(None, None, statements)
    return None
