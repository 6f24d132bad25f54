"""Periods in a question: fiscal years, ranges, quarters, halves, TTM, relative expressions
("last year", "past 3 years", "the year before") and calendar dates for price questions.

Relative expressions are resolved against the latest data held, never against today's
date: "last year" is the latest fiscal year finq holds for the company, "last month" the
month before the latest trading day held.
"""

from __future__ import annotations

import calendar
import contextlib
import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Literal

PeriodType = Literal["annual", "quarterly", "ttm"]

_YEAR_PATTERN = re.compile(
    r"\b(?:fy\s?'?(?P<fy>\d{4}|\d{2})|(?P<year>(?:19|20)\d{2}))\b", re.IGNORECASE
)
_QUARTER_PATTERN = re.compile(
    r"\bq([1-4])\b|\b(first|second|third|fourth|1st|2nd|3rd|4th)[\s-]+(?:fiscal\s+)?quarter\b"
    r"|\bq([1-4])(?=\s?(?:fy)?\s?'?\d{2,4}\b)",
    re.IGNORECASE,
)
_QUARTER_WORDS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3}
_QUARTER_WORDS |= {"fourth": 4, "4th": 4}
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
_RANGE_PATTERN = re.compile(
    r"\b(?:from\s+|between\s+)?(?:fy\s?|fiscal\s+)?((?:19|20)\d{2})\s*"
    r"(?:-|–|to|through|thru|until|and)\s*(?:fy\s?|fiscal\s+)?((?:19|20)\d{2})\b",
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

# Calendar dates, for price questions.
_ISO_DATE = re.compile(r"\b((?:19|20)\d{2})-(\d{1,2})-(\d{1,2})\b")
_US_DATE = re.compile(r"\b(\d{1,2})/(\d{1,2})/((?:19|20)\d{2})\b")
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH = r"(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_WRITTEN_DATE = re.compile(
    rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+((?:19|20)\d{{2}})\b", re.IGNORECASE
)
_WRITTEN_DATE_DAY_FIRST = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+((?:19|20)\d{{2}})\b", re.IGNORECASE
)
_MONTH_YEAR = re.compile(rf"\b{_MONTH}\s+(?:of\s+)?((?:19|20)\d{{2}})\b", re.IGNORECASE)
_RELATIVE_WINDOW = re.compile(
    rf"\b(?:last|past|previous|trailing)\s+(?:{_COUNT}\s+)?(days?|weeks?|months?|years?)\b"
    r"|\b(ytd|year[\s-]to[\s-]date)\b",
    re.IGNORECASE,
)


def _count(raw: str | None) -> int:
    if raw is None:
        return 1
    return int(raw) if raw.isdigit() else _NUMBER_WORDS[raw.lower()]


def _four_digit(raw: str) -> int:
    return int(raw) + 2000 if len(raw) == 2 else int(raw)


def find_dates(text: str) -> list[date]:
    """Calendar days a text names: 2024-03-15, 3/15/2024, March 15, 2024, 15 March 2024."""
    found: list[tuple[int, date]] = []

    def add(start: int, year: int, month: int, day: int) -> None:
        with contextlib.suppress(ValueError):
            found.append((start, date(year, month, day)))

    for match in _ISO_DATE.finditer(text):
        add(match.start(), int(match.group(1)), int(match.group(2)), int(match.group(3)))
    for match in _US_DATE.finditer(text):
        add(match.start(), int(match.group(3)), int(match.group(1)), int(match.group(2)))
    for match in _WRITTEN_DATE.finditer(text):
        month = _MONTHS[match.group(1).lower()]
        add(match.start(), int(match.group(3)), month, int(match.group(2)))
    for match in _WRITTEN_DATE_DAY_FIRST.finditer(text):
        month = _MONTHS[match.group(2).lower()]
        add(match.start(), int(match.group(3)), month, int(match.group(1)))
    return [day for _, day in sorted(found)]


def without_dates(text: str) -> str:
    """The text with its calendar days blanked: a date's year is not a fiscal year asked for."""
    for pattern in (_ISO_DATE, _US_DATE, _WRITTEN_DATE, _WRITTEN_DATE_DAY_FIRST):
        text = pattern.sub(" ", text)
    return text


def find_fiscal_years(text: str) -> list[int]:
    years: list[int] = []
    for match in _YEAR_PATTERN.finditer(text):
        year = _four_digit(match.group("fy") or match.group("year"))
        if year not in years:
            years.append(year)
    return years


def find_quarters(text: str) -> list[int]:
    quarters: list[int] = []
    for match in _QUARTER_PATTERN.finditer(text):
        digit = match.group(1) or match.group(3)
        quarter = int(digit) if digit else _QUARTER_WORDS[match.group(2).lower()]
        if quarter not in quarters:
            quarters.append(quarter)
    for match in _HALF_PATTERN.finditer(text):
        first = match.group(1) == "1" or (match.group(2) or "").lower() == "first"
        for quarter in (1, 2) if first else (3, 4):
            if quarter not in quarters:
                quarters.append(quarter)
    return quarters


def find_year_range(text: str) -> list[int]:
    """ "2019 through 2023", "from FY2019 to FY2023": every year in between."""
    match = _RANGE_PATTERN.search(text)
    if match is None:
        return []
    first, last = sorted((int(match.group(1)), int(match.group(2))))
    return list(range(first, last + 1)) if last - first < 30 else []


def find_last_n(text: str) -> tuple[int, str] | None:
    """ "last three fiscal years" → (3, "years"), relative to the latest data held."""
    match = _LAST_N_PATTERN.search(text)
    if match is None:
        return None
    count = _count(match.group(1))
    return count, "quarters" if match.group(2).lower().startswith("quarter") else "years"


def period_shift(text: str) -> int:
    """-1 for "the year before", +1 for "the year after": a follow-up's move in time."""
    if _SHIFT_BACK.search(text):
        return -1
    if _SHIFT_FORWARD.search(text):
        return 1
    return 0


@dataclass
class Periods:
    """The periods a question asks about, as tool arguments understand them."""

    fiscal_years: list[int] = field(default_factory=list)
    fiscal_quarters: list[int] = field(default_factory=list)
    period: PeriodType | None = None
    last: int | None = None  # the latest N periods held
    shift: int = 0  # a follow-up's move relative to the previous turn's period
    spans_several: bool = False  # a range, "last N", "by quarter": a trend

    @property
    def named(self) -> bool:
        """Whether the question said anything about its period at all."""
        return bool(
            self.fiscal_years or self.fiscal_quarters or self.period or self.last or self.shift
        )


def find_periods(text: str, latest_year: int | None = None) -> Periods:
    """The fiscal periods a metric question asks for. `latest_year` is the latest fiscal
    year held for the company, for "two years ago" and "since 2019"."""
    text = without_dates(text)
    periods = Periods(shift=period_shift(text))
    quarters = find_quarters(text)
    last_n = find_last_n(text)
    if _TTM_PATTERN.search(text):
        periods.period = "ttm"
    elif (
        quarters
        or _QUARTERLY_PATTERN.search(text)
        or (last_n and last_n[1] == "quarters")
        or _LATEST_QUARTER_PATTERN.search(text)
    ):
        periods.period = "quarterly"
    if quarters and periods.period == "quarterly":
        periods.fiscal_quarters = quarters
    year_range = find_year_range(text)
    since = _SINCE_PATTERN.search(text)
    ago = _YEARS_AGO_PATTERN.search(text)
    if year_range:
        periods.fiscal_years = year_range
    elif since and latest_year is not None and int(since.group(1)) <= latest_year:
        periods.fiscal_years = list(range(int(since.group(1)), latest_year + 1))
    elif years := find_fiscal_years(text):
        periods.fiscal_years = years
    elif ago and latest_year is not None:
        periods.fiscal_years = [latest_year - _count(ago.group(1))]
    elif last_n is not None:
        count, unit = last_n
        periods.last = count * (4 if periods.period == "quarterly" and unit == "years" else 1)
    elif periods.period == "quarterly" and _LATEST_QUARTER_PATTERN.search(text):
        periods.last = 1
    elif _LATEST_YEAR_PATTERN.search(text) and latest_year is not None and periods.period:
        # "revenue by quarter last year": the quarters of the latest fiscal year held.
        periods.fiscal_years = [latest_year]
    elif periods.period == "quarterly" and not quarters:
        # "quarterly revenue" with no period: the last four quarters held.
        periods.last = 4
    elif _LATEST_YEAR_PATTERN.search(text):
        periods.last = 1
    periods.spans_several = (
        len(periods.fiscal_years) > 1
        or (periods.last or 0) > 1
        or len(periods.fiscal_quarters) > 1
        or (periods.period == "quarterly" and not periods.fiscal_quarters and not periods.last)
    )
    return periods


def period_arguments(periods: Periods) -> dict[str, Any]:
    """The period arguments of get_financial_metrics for these periods."""
    arguments: dict[str, Any] = {}
    if periods.period is not None:
        arguments["period"] = periods.period
    if periods.fiscal_quarters and periods.period == "quarterly":
        arguments["fiscal_quarters"] = periods.fiscal_quarters
    if periods.fiscal_years:
        arguments["fiscal_years"] = periods.fiscal_years
    elif periods.last is not None:
        arguments["last"] = periods.last
    return arguments


def _month_window(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def price_window(text: str, latest_day: date | None = None) -> dict[str, date]:
    """The days a price question covers: explicit dates, a month, a calendar quarter or half,
    whole years, or a window relative to the latest trading day held."""
    days = find_dates(text)
    if days:
        return {"start": min(days), "end": max(days)}
    rest = without_dates(text)
    if match := _MONTH_YEAR.search(rest):
        start, end = _month_window(int(match.group(2)), _MONTHS[match.group(1).lower()])
        return {"start": start, "end": end}
    years = find_year_range(rest) or find_fiscal_years(rest)
    quarters = find_quarters(rest)
    if years and quarters:
        year = years[0]
        first, last = min(quarters), max(quarters)
        start = date(year, 3 * first - 2, 1)
        return {"start": start, "end": _month_window(year, 3 * last)[1]}
    if years:
        return {"start": date(min(years), 1, 1), "end": date(max(years), 12, 31)}
    if latest_day is not None and (match := _RELATIVE_WINDOW.search(rest)):
        if match.group(3):  # year to date
            return {"start": date(latest_day.year, 1, 1), "end": latest_day}
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
        return {"start": start, "end": latest_day}
    return {}
