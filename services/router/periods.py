"""Periods in a question: fiscal years, ranges and lists, quarters, halves, TTM, relative
expressions ("last year", "past 3 years", "the year before"), periods given as dates ("at
June 30, 2031", "the quarter ended March 30, 2024", "nine months ended June 29,
2024", "the March quarter of 2024") and calendar dates for price questions.

Relative expressions are resolved against the latest data held, never against today's
date: "last year" is the latest fiscal year finq holds for the company, "last month" the
month before the latest trading day held. Dates are resolved on the company's own fiscal
calendar (services.router.fiscal_calendar); without one, on calendar years.

Every expression read is kept as a span of the question, so the router can tell which
parts of a question nothing read.
"""

from __future__ import annotations

import calendar
import contextlib
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from services.router.fiscal_calendar import END_TOLERANCE, FiscalCalendar
from shared.contracts.understanding import PeriodRef, PeriodType

Span = tuple[int, int]

_YEAR4 = r"(?:19|20)\d{2}"
# "fiscal" and "fiscal year(s)" before a year are part of what the grammar reads.
_YEAR_PATTERN = re.compile(
    r"(?:\bfiscal[\s-]+(?:years?\s+)?)?(?:(?:\bfy\s?'?|(?<=fiscal )')(?P<fy>\d{4}|\d{2})"
    r"|\b(?P<year>(?:19|20)\d{2}))\b",
    re.IGNORECASE,
)
_QUARTER_PATTERN = re.compile(
    r"\bq([1-4])\b|\b(first|second|third|fourth|1st|2nd|3rd|4th)[\s-]+(?:fiscal\s+)?quarter\b"
    r"|\bq([1-4])(?=\s?(?:fy)?\s?'?\d{2,4}\b)",
    re.IGNORECASE,
)
_QUARTER_WORDS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3}
_QUARTER_WORDS |= {"fourth": 4, "4th": 4}
_QUARTER_RANGE = re.compile(
    r"\bq([1-4])\s*(?:-|–|to|through|thru|until)\s*q([1-4])\b", re.IGNORECASE
)
_HALF_PATTERN = re.compile(r"\bh([12])\b|\b(first|second)[\s-]+half\b", re.IGNORECASE)
_TTM_PATTERN = re.compile(
    r"\b(?:ttm|ltm|trailing[\s-]+(?:twelve|12)[\s-]+months?|last[\s-]+(?:twelve|12)[\s-]+months?)"
    r"\b",
    re.IGNORECASE,
)
_QUARTERLY_PATTERN = re.compile(
    r"\bquarterly\b|\bby quarter\b|\bper quarter\b|\beach quarter\b|\bquarter by quarter\b",
    re.IGNORECASE,
)
# A range has a connector that says so; "between X and Y" is a range, a bare "X and Y" is a
# list of two years ("2022 and 2023").
_RANGE_PATTERN = re.compile(
    r"\b(?:from\s+)?(?:fy\s?|fiscal\s+(?:years?\s+)?)?((?:19|20)\d{2})\s*"
    r"(?:-|–|—|to|through|thru|until)\s*(?:fy\s?|fiscal\s+)?((?:19|20)\d{2})\b"
    r"|\bbetween\s+(?:fy\s?|fiscal\s+(?:years?\s+)?)?((?:19|20)\d{2})\s+and\s+"
    r"(?:fy\s?|fiscal\s+)?((?:19|20)\d{2})\b",
    re.IGNORECASE,
)
# A list of years, read as one expression: "fiscal 2021, 2022 and 2023".
_YEAR_LIST = re.compile(
    rf"(?:\bfiscal\s+(?:years?\s+)?)?\b(?:fy\s?)?{_YEAR4}"
    rf"(?:\s*,\s*(?:and\s+|or\s+)?(?:fy\s?)?{_YEAR4}|\s+(?:and|or|&)\s+(?:fy\s?)?{_YEAR4})+\b",
    re.IGNORECASE,
)
_SINCE_PATTERN = re.compile(r"\bsince\s+(?:fy\s?|fiscal\s+)?((?:19|20)\d{2})\b", re.IGNORECASE)
_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_NUMBER_WORDS |= {"eight": 8, "nine": 9, "ten": 10, "a": 1}
_COUNT = r"(\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten)"
_LAST_N_PATTERN = re.compile(
    rf"\b(?:last|past|previous|recent|latest|trailing)\s+{_COUNT}\s+(?:fiscal\s+)?"
    r"(years?|quarters?)\b",
    re.IGNORECASE,
)
_LATEST_YEAR_PATTERN = re.compile(
    r"\b(?:last|latest|most recent|previous|this|current)\s+(?:fiscal\s+)?year\b"
    r"|\blast fy\b|\blatest annual\b",
    re.IGNORECASE,
)
_LATEST_QUARTER_PATTERN = re.compile(
    r"\b(?:last|latest|most recent|previous|this|current)\s+(?:fiscal\s+)?quarter\b",
    re.IGNORECASE,
)
_YEARS_AGO_PATTERN = re.compile(rf"\b{_COUNT}\s+years?\s+ago\b", re.IGNORECASE)
# Shifts a follow-up makes to the period of the turn before it.
_SHIFT_BACK = re.compile(
    r"\b(?:the\s+)?(?:year|fiscal year)\s+(?:before|earlier|prior)\b|\bprior year\b"
    r"|\bprevious year\b|\ba year (?:before|earlier)\b|\bthe quarter before\b"
    r"|\bprevious quarter\b|\bprior quarter\b",
    re.IGNORECASE,
)
_SHIFT_FORWARD = re.compile(
    r"\b(?:the\s+)?(?:year|quarter)\s+after\b|\bthe following (?:year|quarter)\b"
    r"|\bnext (?:year|quarter)\b",
    re.IGNORECASE,
)
# A quarter against the matching quarter of the year before it.
_SAME_QUARTER = re.compile(
    r"\b(?:the\s+)?same\s+(?:fiscal\s+)?quarter\s+(?:of\s+|in\s+)?(?:"
    r"a\s+year\s+(?:earlier|ago|before|prior)"
    r"|(?:the\s+)?(?:prior|previous|last|preceding)\s+(?:fiscal\s+)?year"
    r"|(?:the\s+)?(?:fiscal\s+)?year\s+(?:before|earlier|prior)"
    # "Q1 2024 versus that same quarter in 2023": the year named.
    r"|(?:fiscal\s+|fy\s?)?(?P<year>(?:19|20)\d\d))\b"
    r"|\b(?:the\s+)?(?:year[\s-]+(?:ago|earlier)|prior[\s-]+year|previous[\s-]+year"
    r"|last[\s-]+year's)\s+(?:fiscal\s+)?quarter\b",
    re.IGNORECASE,
)
_YEAR_OVER_YEAR = re.compile(
    r"\b(?:year[\s-]+(?:over|on)[\s-]+year|yoy|y/y|y-o-y)\b", re.IGNORECASE
)

# Calendar dates, in the forms people write them.
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_MONTH_NAME = rf"(?:{_MONTH_NAMES})\.?"
_MONTH = rf"({_MONTH_NAMES})\.?"
_ISO_DATE = re.compile(r"\b((?:19|20)\d{2})-(\d{1,2})-(\d{1,2})\b")
_US_DATE = re.compile(r"\b(\d{1,2})/(\d{1,2})/((?:19|20)\d{2})\b")
_WRITTEN_DATE = re.compile(
    rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+((?:19|20)\d{{2}})\b", re.IGNORECASE
)
_WRITTEN_DATE_DAY_FIRST = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+((?:19|20)\d{{2}})\b", re.IGNORECASE
)
_MONTH_YEAR = re.compile(rf"\b{_MONTH}\s+(?:of\s+)?((?:19|20)\d{{2}})\b", re.IGNORECASE)
# One pattern for a day in any of its forms (named groups, to be read by _day_of), and one
# for a month of a year; both are embedded in the patterns of the expressions below.
_DATE = (
    rf"\b(?:(?P<iso_y>{_YEAR4})-(?P<iso_m>\d{{1,2}})-(?P<iso_d>\d{{1,2}})"
    rf"|(?P<us_m>\d{{1,2}})/(?P<us_d>\d{{1,2}})/(?P<us_y>{_YEAR4})"
    rf"|(?P<w_m>{_MONTH_NAME})\s+(?P<w_d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<w_y>{_YEAR4})"
    rf"|(?P<f_d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<f_m>{_MONTH_NAME}),?\s+"
    rf"(?P<f_y>{_YEAR4}))\b"
)
_MONTH_OF_YEAR = rf"\b(?P<my_m>{_MONTH_NAME})\s+(?:of\s+)?(?P<my_y>{_YEAR4})\b"
_DATE_PATTERN = re.compile(_DATE, re.IGNORECASE)
# A duration ended on a day or in a month: "the fiscal year ended Sept. 28, 2024",
# "three months ended March 30, 2024", "nine-month period ended June 29, 2024", "the
# quarter ending in June 2024".
_ENDED_PATTERN = re.compile(
    r"\b(?:(?:(?P<ordinal>first|second|third|fourth|1st|2nd|3rd|4th)[\s-]+)?"
    r"(?:fiscal[\s-]+)?(?P<unit>years?|quarters?|fy)"
    r"|(?P<count>three|six|nine|twelve|3|6|9|12)[\s-]+months?(?:\s+period)?"
    r"|(?P<weeks>13|14|26|27|39|40|52|53)[\s-]+weeks?(?:\s+period)?)"
    r"\s+(?:that\s+|which\s+)?(?:ended|ending|ends)\s*,?\s+(?:on\s+|in\s+)?"
    rf"(?:{_DATE}|{_MONTH_OF_YEAR})",
    re.IGNORECASE,
)
# A quarter named by the month it ends in: "the March quarter of 2024", "the December 2023
# quarter", "the April quarter of fiscal 2025".
_MONTH_QUARTER_PATTERN = re.compile(
    rf"\b(?:the\s+)?(?P<m1>{_MONTH_NAME})[\s-]+(?:fiscal\s+)?quarter\s+(?:of\s+|in\s+)?"
    rf"(?P<fiscal1>(?:fiscal|fy)\s?(?:year\s+)?)?'?(?P<y1>{_YEAR4})\b"
    rf"|\b(?:the\s+)?(?P<m2>{_MONTH_NAME})[\s-]+(?P<y2>{_YEAR4})[\s-]+(?:fiscal\s+)?quarter\b",
    re.IGNORECASE,
)
# A balance on a day: "as of June 30, 2031", "at the end of March 2024", "on 3/30/2024",
# or a day alone.
_INSTANT_PATTERN = re.compile(
    r"(?:\b(?:as\s+(?:of|at)|at|on)\s+(?:the\s+(?:end|close)\s+of\s+)?"
    r"|\b(?:at\s+)?(?:the\s+)?(?:end|close)\s+of\s+)?" + _DATE,
    re.IGNORECASE,
)
_INSTANT_MONTH_PATTERN = re.compile(
    r"(?:\bas\s+(?:of|at)\s+(?:the\s+(?:end|close)\s+of\s+)?"
    r"|\b(?:at\s+)?(?:the\s+)?(?:end|close)\s+of\s+)" + _MONTH_OF_YEAR,
    re.IGNORECASE,
)
_EVENT_DAY = re.compile(
    # A balance sheet "dated" a day is a balance on that day, not an event.
    r"\b(?:filed|published|released|(?<!sheet\s)dated|issued|announced|reported)\s+(?:on\s+)?$",
    re.IGNORECASE,
)
_WINDOW_OPENING = re.compile(r"\b(?:from|between)\s+$", re.IGNORECASE)
_WINDOW_CONNECTOR = re.compile(r"^\s*(?:and|to|through|thru|until|-|–)\s*$", re.IGNORECASE)
_QUARTER_YEAR_GAP = re.compile(r"^[\s,]*(?:(?:of|in)\s+)?(?:the\s+)?$", re.IGNORECASE)
_RELATIVE_WINDOW = re.compile(
    rf"\b(?:last|past|previous|trailing)\s+(?:{_COUNT}\s+)?(days?|weeks?|months?|years?)\b"
    r"|\b(ytd|year[\s-]to[\s-]date)\b",
    re.IGNORECASE,
)
_DURATION_MONTHS = {"three": 3, "six": 6, "nine": 9, "twelve": 12, "3": 3, "6": 6, "9": 9}
_DURATION_MONTHS["12"] = 12
_WEEKS_MONTHS = {"13": 3, "14": 3, "26": 6, "27": 6, "39": 9, "40": 9, "52": 12, "53": 12}

# Without a company's calendar, fiscal years are calendar years.
CALENDAR_YEARS = FiscalCalendar()


def _count(raw: str | None) -> int:
    if raw is None:
        return 1
    return int(raw) if raw.isdigit() else _NUMBER_WORDS[raw.lower()]


def _four_digit(raw: str) -> int:
    return int(raw) + 2000 if len(raw) == 2 else int(raw)


def _month_number(raw: str) -> int:
    return _MONTHS[raw.lower().rstrip(".")]


def _day_of(match: re.Match[str]) -> date | None:
    """The day a match of _DATE names, if it is a real day."""
    groups = match.groupdict()
    parts: tuple[str, str, str] | None = None
    if groups.get("iso_y"):
        parts = (groups["iso_y"], groups["iso_m"], groups["iso_d"])
    elif groups.get("us_y"):
        parts = (groups["us_y"], groups["us_m"], groups["us_d"])
    elif groups.get("w_y"):
        parts = (groups["w_y"], str(_month_number(groups["w_m"])), groups["w_d"])
    elif groups.get("f_y"):
        parts = (groups["f_y"], str(_month_number(groups["f_m"])), groups["f_d"])
    if parts is None:
        return None
    with contextlib.suppress(ValueError):
        return date(int(parts[0]), int(parts[1]), int(parts[2]))
    return None


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def find_dates(text: str) -> list[date]:
    """Calendar days a text names: 2024-03-15, 3/15/2024, March 15, 2024, 15 March 2024."""
    return [day for match in _DATE_PATTERN.finditer(text) if (day := _day_of(match))]


def _date_spans(text: str) -> list[tuple[Span, date]]:
    return [
        (match.span(), day) for match in _DATE_PATTERN.finditer(text) if (day := _day_of(match))
    ]


def without_dates(text: str) -> str:
    """The text with its calendar days blanked: a date's year is not a fiscal year asked for."""
    for pattern in (_ISO_DATE, _US_DATE, _WRITTEN_DATE, _WRITTEN_DATE_DAY_FIRST):
        # Blanked to the same length, so offsets into the text still hold.
        text = pattern.sub(lambda match: " " * len(match.group(0)), text)
    return text


def find_fiscal_years(text: str) -> list[int]:
    years: list[int] = []
    for match in _YEAR_PATTERN.finditer(text):
        year = _four_digit(match.group("fy") or match.group("year"))
        if year not in years:
            years.append(year)
    return years


def _quarter_matches(text: str) -> list[tuple[Span, list[int]]]:
    """Each quarter expression with the quarters it names: "Q1 through Q3" names three, "H1"
    two; in the order written."""
    found: list[tuple[Span, list[int]]] = []
    taken: list[Span] = []
    for match in _QUARTER_RANGE.finditer(text):
        first, last = sorted((int(match.group(1)), int(match.group(2))))
        found.append((match.span(), list(range(first, last + 1))))
        taken.append(match.span())
    for match in _QUARTER_PATTERN.finditer(text):
        if any(start <= match.start() < end for start, end in taken):
            continue
        digit = match.group(1) or match.group(3)
        quarter = int(digit) if digit else _QUARTER_WORDS[match.group(2).lower()]
        found.append((match.span(), [quarter]))
    for match in _HALF_PATTERN.finditer(text):
        first = match.group(1) == "1" or (match.group(2) or "").lower() == "first"
        found.append((match.span(), [1, 2] if first else [3, 4]))
    return sorted(found)


def find_quarters(text: str) -> list[int]:
    quarters: list[int] = []
    for _, named in _quarter_matches(text):
        for quarter in named:
            if quarter not in quarters:
                quarters.append(quarter)
    return quarters


def _range_years(match: re.Match[str]) -> list[int]:
    first, last = sorted(
        (int(match.group(1) or match.group(3)), int(match.group(2) or match.group(4)))
    )
    return list(range(first, last + 1)) if last - first < 30 else []


def find_year_range(text: str) -> list[int]:
    """ "2019 through 2023", "from FY2019 to FY2023", "between 2019 and 2023": every year in
    between."""
    match = _RANGE_PATTERN.search(text)
    return _range_years(match) if match is not None else []


def find_last_n(text: str) -> tuple[int, str] | None:
    """ "last three fiscal years" → (3, "years"), relative to the latest data held."""
    match = _LAST_N_PATTERN.search(text)
    if match is None:
        return None
    count = _count(match.group(1))
    return count, "quarters" if match.group(2).lower().startswith("quarter") else "years"


def _shift_match(text: str) -> tuple[int, re.Match[str] | None]:
    if match := _SHIFT_BACK.search(text):
        return -1, match
    if match := _SHIFT_FORWARD.search(text):
        return 1, match
    return 0, None


def period_shift(text: str) -> int:
    """-1 for "the year before", +1 for "the year after": a follow-up's move in time."""
    return _shift_match(text)[0]


@dataclass
class Periods:
    """The periods a question asks about, as tool arguments understand them, with each
    expression as written and where the grammar read it."""

    fiscal_years: list[int] = field(default_factory=list)
    fiscal_quarters: list[int] = field(default_factory=list)
    period: PeriodType | None = None
    last: int | None = None  # the latest N periods held
    shift: int = 0  # a follow-up's move relative to the previous turn's period
    spans_several: bool = False  # a range, a list, "last N", "by quarter": a series
    # "Nine months ended …": the months summed from the quarters selected (one fiscal year).
    months_to_date: int | None = None
    # A quarter against the matching quarter of the prior year: that year is among fiscal_years.
    same_quarter_last_year: bool = False
    asked: list[PeriodRef] = field(default_factory=list)
    # Offsets in the question of every expression the grammar read, in order.
    spans: list[Span] = field(default_factory=list)

    @property
    def named(self) -> bool:
        """Whether the question said anything about its period at all."""
        return bool(
            self.fiscal_years
            or self.fiscal_quarters
            or self.period
            or self.last
            or self.shift
            or self.asked
        )


class _Reading:
    """A question as the grammar reads it: each expression read is blanked in `rest` (to
    the same length, so offsets hold) and its span kept."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.rest = text
        self.spans: list[Span] = []

    def take(self, span: Span) -> None:
        start, end = span
        self.spans.append(span)
        self.rest = self.rest[:start] + " " * (end - start) + self.rest[end:]

    def note(self, span: Span) -> None:
        """Read, but left in `rest` for the patterns that read it again."""
        self.spans.append(span)


@dataclass
class _Dated:
    """A period expression given as a date or a month, resolved on a fiscal calendar."""

    ref: PeriodRef
    start: int
    period: PeriodType | None  # None for a calendar window, which selects no fiscal period
    fiscal_years: list[int] = field(default_factory=list)
    fiscal_quarters: list[int] = field(default_factory=list)
    months_to_date: int | None = None
    year_end_instant: bool = False  # a balance at a fiscal year end: Q4 among quarters


def _instant(
    text: str, start: int, day: date, fiscal_calendar: FiscalCalendar, *, written: bool = True
) -> _Dated:
    """A balance on a day: the fiscal year if the day ends one, else the fiscal quarter it
    ends, else the last quarter ended before it (the balance sheet that stood that day)."""
    fiscal_year = fiscal_calendar.year_ending_on(day)
    if fiscal_year is not None:
        quarter: int | None = None
    else:
        fiscal_year, quarter = fiscal_calendar.quarter_ending_on(
            day
        ) or fiscal_calendar.latest_quarter_ended_by(day)
        if quarter == 4:
            quarter = None
    ref = PeriodRef(
        kind="instant",
        text=text,
        day=day if written else fiscal_calendar.quarter_end_of(fiscal_year, quarter or 4),
        fiscal_year=fiscal_year,
        fiscal_quarter=quarter,
    )
    if quarter is None:
        return _Dated(ref, start, "annual", [fiscal_year], year_end_instant=True)
    return _Dated(ref, start, "quarterly", [fiscal_year], [quarter])


def _ended(
    match: re.Match[str], fiscal_calendar: FiscalCalendar, calendar_known: bool
) -> _Dated | None:
    """ "The fiscal year ended …", "three months ended …", "nine months ended …"."""
    text, start = match.group(0), match.start()
    if match.group("count"):
        months = _DURATION_MONTHS[match.group("count").lower()]
    elif match.group("weeks"):
        months = _WEEKS_MONTHS[match.group("weeks")]
    else:
        months = 3 if match.group("unit").lower().startswith("quarter") else 12
    day = _day_of(match)
    if day is None and match.group("my_y"):
        year, month = int(match.group("my_y")), _month_number(match.group("my_m"))
        in_month = fiscal_calendar.quarter_ending_in_month(year, month)
        day = fiscal_calendar.quarter_end_of(*in_month) if in_month else _month_end(year, month)
    if day is None:
        return None
    if months == 12:
        fiscal_year = fiscal_calendar.year_ending_on(day)
        if fiscal_year is not None or match.group("unit"):
            if fiscal_year is None:
                # No fiscal year ends that day. On a known calendar, the year the question
                # can mean is the last one ended by then; on calendar years, years are
                # labelled by the year they end in.
                fiscal_year = (
                    fiscal_calendar.latest_year_ended_by(day)
                    if calendar_known
                    else _label_of_year_ended(day)
                )
            ref = PeriodRef(kind="ended", text=text, day=day, fiscal_year=fiscal_year, months=12)
            return _Dated(ref, start, "annual", [fiscal_year])
        # Twelve months ended at a quarter's end: the trailing twelve months at that quarter.
        fiscal_year, quarter = fiscal_calendar.quarter_ending_on(
            day
        ) or fiscal_calendar.latest_quarter_ended_by(day)
        ref = PeriodRef(
            kind="ended",
            text=text,
            day=day,
            fiscal_year=fiscal_year,
            fiscal_quarter=quarter,
            months=12,
        )
        return _Dated(ref, start, "ttm", [fiscal_year], [quarter])
    fiscal_year, quarter = fiscal_calendar.quarter_ending_on(
        day
    ) or fiscal_calendar.quarter_containing(day)
    ordinal = match.group("ordinal")
    if months == 3 and ordinal and not fiscal_calendar.holds(fiscal_year, quarter):
        # Nothing held says which quarter ends that day: the question's own word wins.
        quarter = _QUARTER_WORDS[ordinal.lower()]
    ref = PeriodRef(
        kind="ended",
        text=text,
        day=day,
        fiscal_year=fiscal_year,
        fiscal_quarter=quarter,
        months=months,
    )
    if months == 3:
        return _Dated(ref, start, "quarterly", [fiscal_year], [quarter])
    count = months // 3
    steps = [(fiscal_year, quarter - back) for back in range(count)]
    steps = [(fy, q) if q >= 1 else (fy - 1, q + 4) for fy, q in steps]
    years = sorted({fy for fy, _ in steps})
    quarters = sorted({q for _, q in steps})
    # Summed from quarters only inside one fiscal year; across a year end the quarters are
    # listed, since years and quarters are selected as a cross product.
    to_date = months if len(years) == 1 else None
    return _Dated(ref, start, "quarterly", years, quarters, months_to_date=to_date)


# More days or months after a first "ended …": "the years ended January 2023, January 2024
# and January 2025".
_LIST_ITEM = re.compile(rf"^(?:\s*,\s*(?:and\s+)?|\s+and\s+)(?:{_DATE}|{_MONTH_OF_YEAR})", re.I)


def _ended_list(
    first: re.Match[str], reading: _Reading, fiscal_calendar: FiscalCalendar, calendar_known: bool
) -> list[_Dated]:
    """The other items of a list that began with `first`, each ended like it."""
    lead = first.group(0)[: first.group(0).lower().rfind("end")]
    position = first.end()
    found: list[_Dated] = []
    while (item := _LIST_ITEM.match(reading.rest[position:])) is not None:
        written = item.group(0).lstrip(" ,").removeprefix("and").strip()
        phrase = f"{lead}ended {written}"
        match = _ENDED_PATTERN.match(phrase)
        dated = _ended(match, fiscal_calendar, calendar_known) if match else None
        if dated is None:
            break
        start = position + item.group(0).index(written)
        dated.ref = dated.ref.model_copy(update={"text": written})
        dated.start = start
        found.append(dated)
        reading.take((position, position + item.end()))
        position += item.end()
    return found


def _label_of_year_ended(day: date) -> int:
    """A fiscal year is labelled by the calendar year it ends in; a 52/53-week year that
    ends in the first days of January belongs to the year before."""
    return day.year - 1 if day - date(day.year - 1, 12, 31) <= END_TOLERANCE else day.year


def _month_quarter(match: re.Match[str], fiscal_calendar: FiscalCalendar) -> _Dated:
    month = _month_number(match.group("m1") or match.group("m2"))
    year = int(match.group("y1") or match.group("y2"))
    key = None
    if match.group("fiscal1"):
        key = fiscal_calendar.quarter_of_fiscal_year_ending_in_month(year, month)
    fiscal_year, quarter = key or fiscal_calendar.quarter_of_month(year, month)
    ref = PeriodRef(
        kind="fiscal_quarter",
        text=match.group(0),
        fiscal_year=fiscal_year,
        fiscal_quarter=quarter,
    )
    return _Dated(ref, match.start(), "quarterly", [fiscal_year], [quarter])


def _read_dated(
    reading: _Reading, fiscal_calendar: FiscalCalendar, calendar_known: bool
) -> list[_Dated]:
    """Periods given as dates and months, read before anything else: their years are not
    fiscal years asked for."""
    found: list[_Dated] = []
    for match in list(_ENDED_PATTERN.finditer(reading.rest)):
        if (dated := _ended(match, fiscal_calendar, calendar_known)) is not None:
            found.append(dated)
            reading.take(match.span())
            found.extend(_ended_list(match, reading, fiscal_calendar, calendar_known))
    for match in list(_MONTH_QUARTER_PATTERN.finditer(reading.rest)):
        found.append(_month_quarter(match, fiscal_calendar))
        reading.take(match.span())
    # Two days joined as a window ("from March 1, 2024 to June 28, 2024") are a span of
    # calendar days, a price question's window, not two balances.
    days = _date_spans(reading.rest)
    days_of = dict(days)
    windowed: set[Span] = set()
    for (first_span, _), (second_span, second_day) in itertools.pairwise(days):
        if first_span in windowed:
            continue
        between = reading.rest[first_span[1] : second_span[0]]
        before = reading.rest[: first_span[0]]
        # Two days that each end a fiscal year are two balance sheets ("cash between June
        # 30, 2020 and June 30, 2021" for a June year-end), read below as instants.
        ends = (days_of[first_span], second_day)
        both_year_ends = calendar_known and all(
            fiscal_calendar.year_ending_on(day) is not None for day in ends
        )
        if (
            _WINDOW_CONNECTOR.match(between)
            and (_WINDOW_OPENING.search(before) or between.strip() not in ("and",))
            and not both_year_ends
        ):
            opening = _WINDOW_OPENING.search(before)
            span = (opening.start() if opening else first_span[0], second_span[1])
            ref = PeriodRef(kind="calendar", text=reading.text[span[0] : span[1]], day=second_day)
            found.append(_Dated(ref, span[0], None))
            windowed.add(second_span)
            reading.take(span)
    for match in list(_INSTANT_MONTH_PATTERN.finditer(reading.rest)):
        year, month = int(match.group("my_y")), _month_number(match.group("my_m"))
        in_month = fiscal_calendar.quarter_ending_in_month(year, month)
        day = fiscal_calendar.quarter_end_of(*in_month) if in_month else _month_end(year, month)
        found.append(_instant(match.group(0), match.start(), day, fiscal_calendar, written=False))
        reading.take(match.span())
    for match in list(_INSTANT_PATTERN.finditer(reading.rest)):
        if (day := _day_of(match)) is None:
            continue
        if _EVENT_DAY.search(reading.rest[: match.start()]):
            # "the 10-K filed on November 1, 2024": the day of an event, not a period.
            ref = PeriodRef(kind="calendar", text=match.group(0), day=day)
            found.append(_Dated(ref, match.start(), None))
        else:
            found.append(_instant(match.group(0), match.start(), day, fiscal_calendar))
        reading.take(match.span())
    return found


def _merge(spans: Iterable[Span]) -> list[Span]:
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _in_order(found: Iterable[tuple[int, list[int]]]) -> list[int]:
    ordered: list[int] = []
    for _, values in sorted(found, key=lambda item: item[0]):
        ordered.extend(value for value in values if value not in ordered)
    return ordered


def find_periods(
    text: str, latest_year: int | None = None, calendar: FiscalCalendar | None = None
) -> Periods:
    """The fiscal periods a metric question asks for. `latest_year` is the latest fiscal
    year held for the company, for "two years ago" and "since 2019"; `calendar` is the
    company's fiscal calendar, for periods given as dates (without one, fiscal years are
    calendar years)."""
    reading = _Reading(text)
    dated = _read_dated(reading, calendar or CALENDAR_YEARS, calendar is not None)
    asked: list[tuple[int, PeriodRef]] = [(d.start, d.ref) for d in dated]
    same_quarter = list(_SAME_QUARTER.finditer(reading.rest))
    for match in same_quarter:
        reading.take(match.span())
    rest = reading.rest

    shift, shift_match = _shift_match(rest)
    periods = Periods(shift=shift)
    if shift_match is not None:
        reading.note(shift_match.span())
        asked.append((shift_match.start(), PeriodRef(kind="relative", text=shift_match.group(0))))
    ttm = _TTM_PATTERN.search(rest)
    if ttm is not None:
        reading.note(ttm.span())
        asked.append((ttm.start(), PeriodRef(kind="ttm", text=ttm.group(0))))
    quarter_matches = _quarter_matches(rest)
    quarters = _in_order((span[0], named) for span, named in quarter_matches)
    quarterly_word = _QUARTERLY_PATTERN.search(rest)
    if quarterly_word is not None:
        reading.note(quarterly_word.span())
    last_n_match = _LAST_N_PATTERN.search(rest)
    last_n = find_last_n(rest)
    latest_quarter = _LATEST_QUARTER_PATTERN.search(rest)
    latest_year_match = _LATEST_YEAR_PATTERN.search(rest)
    dated_types = {d.period for d in dated if d.period is not None}
    if ttm is not None:
        periods.period = "ttm"
    elif (
        quarters
        or quarterly_word
        or (last_n and last_n[1] == "quarters")
        or latest_quarter
        or "quarterly" in dated_types
        or (same_quarter and not dated_types)
    ):
        periods.period = "quarterly"
    elif "ttm" in dated_types:
        periods.period = "ttm"
    elif dated_types:
        periods.period = "annual"

    # Years written out: ranges, "since", and each year (a list is every year it names).
    explicit: list[tuple[int, list[int]]] = []
    inside: list[Span] = []  # years read as part of a range
    range_match = _RANGE_PATTERN.search(rest)
    since = _SINCE_PATTERN.search(rest)
    if range_match is not None and (years := _range_years(range_match)):
        explicit.append((range_match.start(), years))
        inside.append(range_match.span())
        reading.note(range_match.span())
        asked.append((range_match.start(), PeriodRef(kind="range", text=range_match.group(0))))
    elif since and latest_year is not None and int(since.group(1)) <= latest_year:
        explicit.append((since.start(), list(range(int(since.group(1)), latest_year + 1))))
        inside.append(since.span())
        reading.note(since.span())
        asked.append((since.start(), PeriodRef(kind="range", text=since.group(0))))
    for match in _YEAR_LIST.finditer(rest):
        reading.note(match.span())
    year_matches = list(_YEAR_PATTERN.finditer(rest))
    for match in year_matches:
        explicit.append((match.start(), [_four_digit(match.group("fy") or match.group("year"))]))
        reading.note(match.span())
    explicit.extend((d.start, d.fiscal_years) for d in dated)
    ago = _YEARS_AGO_PATTERN.search(rest)
    relative: re.Match[str] | None = None
    relative_year: int | None = None
    if explicit:
        periods.fiscal_years = _in_order(explicit)
    elif ago and latest_year is not None:
        relative_year = latest_year - _count(ago.group(1))
        periods.fiscal_years = [relative_year]
        relative = ago
    elif last_n is not None and last_n_match is not None:
        count, unit = last_n
        periods.last = count * (4 if periods.period == "quarterly" and unit == "years" else 1)
        relative = last_n_match
    elif periods.period == "quarterly" and latest_quarter is not None:
        periods.last = 1
        relative = latest_quarter
    elif latest_year_match and latest_year is not None and periods.period:
        # "revenue by quarter last year": the quarters of the latest fiscal year held.
        periods.fiscal_years = [latest_year]
        relative, relative_year = latest_year_match, latest_year
    elif periods.period == "quarterly" and not quarters:
        # "quarterly revenue" with no period: the last four quarters held.
        periods.last = 4
    elif latest_year_match:
        periods.last = 1
        relative = latest_year_match
    if relative is not None:
        reading.note(relative.span())
        asked.append(
            (
                relative.start(),
                PeriodRef(kind="relative", text=relative.group(0), fiscal_year=relative_year),
            )
        )

    # Quarters: as written, and those the dates resolved to.
    quarter_sources = [(span[0], named) for span, named in quarter_matches]
    if periods.period in ("quarterly", "ttm"):
        for d in dated:
            if d.fiscal_quarters:
                quarter_sources.append((d.start, d.fiscal_quarters))
            elif d.year_end_instant:
                quarter_sources.append((d.start, [4]))
        periods.fiscal_quarters = _in_order(quarter_sources)
    for span, _ in quarter_matches:
        reading.note(span)
    sole_year = periods.fiscal_years[0] if len(periods.fiscal_years) == 1 else None
    quarter_refs = _quarter_refs(text, quarter_matches, year_matches, sole_year)
    for start, ref in quarter_refs:
        reading.note((start, start + len(ref.text)))  # "third quarter of fiscal 2024" whole
    asked.extend(quarter_refs)
    asked.extend(
        (match.start(), PeriodRef(kind="fiscal_year", text=match.group(0), fiscal_year=year))
        for match in year_matches
        if not any(start <= match.start() < end for start, end in inside)
        and not _attached_to_quarter(text, match, quarter_matches)
        and (year := _four_digit(match.group("fy") or match.group("year")))
    )

    if (
        periods.shift == -1
        and shift_match is not None
        and "year" in shift_match.group(0).lower()
        and len(periods.fiscal_years) == 1
        and periods.period in (None, "annual")
    ):
        # A year and "a year earlier" in one question ask both: the year before the one it
        # names (a follow-up's shift moves the turn before's year instead).
        periods.fiscal_years = [periods.fiscal_years[0] - 1, periods.fiscal_years[0]]
        periods.shift = 0
    to_date = {d.months_to_date for d in dated if d.period is not None}
    if periods.period == "quarterly" and len(to_date) == 1:
        periods.months_to_date = to_date.pop()
    periods.spans_several = periods.months_to_date is None and (
        len(periods.fiscal_years) > 1
        or (periods.last or 0) > 1
        or len(periods.fiscal_quarters) > 1
        or (periods.period == "quarterly" and not periods.fiscal_quarters and not periods.last)
    )

    # A quarter against the matching quarter of the prior year: that year is fetched too.
    year_over_year = _YEAR_OVER_YEAR.search(rest)
    quarter_asked = periods.period == "quarterly" and (periods.fiscal_quarters or periods.last)
    named_years = {int(match["year"]) for match in same_quarter if match["year"]}
    if named_years and (sole_year is None or named_years != {sole_year - 1}):
        # The same quarter of a year other than the one before: both years' quarters are
        # fetched as named, to be compared as any two periods are.
        periods.fiscal_years = sorted({*periods.fiscal_years, *named_years})
        asked.extend(
            (match.start(), PeriodRef(kind="fiscal_year", text=match.group(0), fiscal_year=year))
            for match in same_quarter
            if match["year"] and (year := int(match["year"]))
        )
        same_quarter = []
    if same_quarter or (year_over_year is not None and quarter_asked):
        periods.same_quarter_last_year = True
        if year_over_year is not None and quarter_asked:
            reading.note(year_over_year.span())
        if periods.fiscal_years:
            periods.fiscal_years = sorted(
                {*periods.fiscal_years, *(year - 1 for year in periods.fiscal_years)}
            )
        elif periods.last is not None:
            # The latest quarters and, four quarters back, each one's year-ago quarter.
            periods.last = min(periods.last + 4, 40)
        for match in same_quarter:
            asked.append(
                (
                    match.start(),
                    PeriodRef(
                        kind="relative",
                        text=match.group(0),
                        fiscal_year=sole_year - 1 if sole_year is not None else None,
                        fiscal_quarter=(
                            periods.fiscal_quarters[0]
                            if len(periods.fiscal_quarters) == 1
                            else None
                        ),
                    ),
                )
            )
    periods.asked = [ref for _, ref in sorted(asked, key=lambda item: item[0])]
    periods.spans = _merge(reading.spans)
    return periods


def _attached_year(
    text: str, quarter: Span, year_matches: list[re.Match[str]]
) -> re.Match[str] | None:
    """The year written with a quarter: "Q3 FY2024", "third quarter of fiscal 2024",
    "2024 Q3"."""
    for match in year_matches:
        if match.start() >= quarter[1] and _QUARTER_YEAR_GAP.match(
            text[quarter[1] : match.start()]
        ):
            return match
    for match in year_matches:
        if match.end() <= quarter[0] and not text[match.end() : quarter[0]].strip(" ,-"):
            return match
    return None


def _attached_to_quarter(
    text: str, year: re.Match[str], quarter_matches: list[tuple[Span, list[int]]]
) -> bool:
    year_matches = [year]
    return any(_attached_year(text, span, year_matches) is not None for span, _ in quarter_matches)


def _quarter_refs(
    text: str,
    quarter_matches: list[tuple[Span, list[int]]],
    year_matches: list[re.Match[str]],
    sole_year: int | None,
) -> list[tuple[int, PeriodRef]]:
    """One reference per quarter named, with its year when written beside it, else the one
    year the question names."""
    refs: list[tuple[int, PeriodRef]] = []
    for span, named in quarter_matches:
        start, end = span
        fiscal_year = sole_year
        if (year := _attached_year(text, span, year_matches)) is not None:
            start, end = min(start, year.start()), max(end, year.end())
            fiscal_year = _four_digit(year.group("fy") or year.group("year"))
        refs.extend(
            (
                start,
                PeriodRef(
                    kind="fiscal_quarter",
                    text=text[start:end],
                    fiscal_year=fiscal_year,
                    fiscal_quarter=quarter,
                ),
            )
            for quarter in named
        )
    return refs


def period_arguments(periods: Periods) -> dict[str, Any]:
    """The period arguments of get_financial_metrics for these periods."""
    arguments: dict[str, Any] = {}
    if periods.period is not None:
        arguments["period"] = periods.period
    if periods.fiscal_quarters and periods.period in ("quarterly", "ttm"):
        arguments["fiscal_quarters"] = periods.fiscal_quarters
    if periods.fiscal_years:
        arguments["fiscal_years"] = periods.fiscal_years
    elif periods.last is not None:
        arguments["last"] = periods.last
    return arguments


def _month_window(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), _month_end(year, month)


@dataclass(frozen=True)
class PriceWindowReading:
    """The days a price question covers, and where in the question they were read."""

    window: dict[str, date]
    spans: list[Span]


def read_price_window(text: str, latest_day: date | None = None) -> PriceWindowReading:
    """The days a price question covers: explicit dates, a month, a calendar quarter or half,
    whole years, or a window relative to the latest trading day held; with the spans of
    the question each was read from."""
    days = [
        (match.span(), day) for match in _INSTANT_PATTERN.finditer(text) if (day := _day_of(match))
    ]
    if days:
        found = [day for _, day in days]
        return PriceWindowReading(
            {"start": min(found), "end": max(found)}, _merge(span for span, _ in days)
        )
    rest = without_dates(text)  # a day that is not a real one is not a year either
    if match := _MONTH_YEAR.search(rest):
        start, end = _month_window(int(match.group(2)), _MONTHS[match.group(1).lower()])
        return PriceWindowReading({"start": start, "end": end}, [match.span()])
    spans: list[Span] = []
    range_match = _RANGE_PATTERN.search(rest)
    years = _range_years(range_match) if range_match is not None else []
    if years and range_match is not None:
        spans.append(range_match.span())
    else:
        year_matches = list(_YEAR_PATTERN.finditer(rest))
        years = find_fiscal_years(rest)
        spans.extend(match.span() for match in year_matches)
    quarter_matches = _quarter_matches(rest)
    quarters = find_quarters(rest)
    if years and quarters:
        year = years[0]
        first, last = min(quarters), max(quarters)
        start = date(year, 3 * first - 2, 1)
        spans.extend(span for span, _ in quarter_matches)
        return PriceWindowReading(
            {"start": start, "end": _month_window(year, 3 * last)[1]}, _merge(spans)
        )
    if years:
        return PriceWindowReading(
            {"start": date(min(years), 1, 1), "end": date(max(years), 12, 31)}, _merge(spans)
        )
    if latest_day is not None and (match := _RELATIVE_WINDOW.search(rest)):
        if match.group(3):  # year to date
            return PriceWindowReading(
                {"start": date(latest_day.year, 1, 1), "end": latest_day}, [match.span()]
            )
        count, unit = _count(match.group(1)), match.group(2).lower()
        if unit.startswith("day"):
            start = latest_day - timedelta(days=count)
        elif unit.startswith("week"):
            start = latest_day - timedelta(weeks=count)
        elif unit.startswith("month"):
            month_index = latest_day.year * 12 + latest_day.month - 1 - count
            year, month = divmod(month_index, 12)
            start = date(
                year, month + 1, min(latest_day.day, calendar.monthrange(year, month + 1)[1])
            )
        else:
            start = date(latest_day.year - count, latest_day.month, min(latest_day.day, 28))
        return PriceWindowReading({"start": start, "end": latest_day}, [match.span()])
    return PriceWindowReading({}, [])


def price_window(text: str, latest_day: date | None = None) -> dict[str, date]:
    """The days a price question covers (see read_price_window)."""
    return read_price_window(text, latest_day).window


# A year as people write one: "2019", "'19", "FY19".
_YEAR_WRITTEN = re.compile(r"\b(?:19|20)\d{2}\b|'\d{2}\b|\bfy\s?\d{2}\b", re.IGNORECASE)


def date_mentions(text: str) -> list[tuple[int, int]]:
    """Where the text writes a calendar day ("March 29, 2025", "2025-03-29", "3/29/2025") or
    a year, read as a period or not: one the period grammar did not read must not be
    dropped."""
    return [
        match.span()
        for pattern in (_DATE_PATTERN, _YEAR_WRITTEN)
        for match in pattern.finditer(text)
    ]
