"""Temporal context of a document chunk: the dates and periods its text speaks of.

`extract_temporal` finds every temporal mention in a chunk — dates, fiscal periods,
months, relative expressions and bare years — with its place in the text and, inside a
`[TABLE n]` … `[END TABLE]` block, the header of the column it sits in. From those
mentions `context_prefix` writes the bracketed line prepended to the chunk before it is
embedded, and `temporal_metadata` the JSON stored beside it for filtering.

What counts as what:

- date: a calendar day — "2023-09-30", "9/30/2023", "09/30/23", "September 30, 2023",
  "30 September 2023", "Sept. 30, 2023".
- fiscal_period: a reporting quarter, half or fiscal year — "Q1 2023", "Q1 FY2023",
  "1Q23", "first quarter of fiscal 2023", "H1 2023", "first half of 2023", "1H23",
  "FY2023", "FY 23", "fiscal year 2023", "fiscal 2023", "fiscal years 2023 and 2022".
  A quarter or half is kept as stated: "Q1 2023" is not made fiscal, "Q1 FY2023" is.
- month_year: "September 2023", "Sep 2023", "09/2023".
- relative: "last year", "prior fiscal year", "previous quarter", "next fiscal year",
  "two years ago", "first quarter of last year" (`extract_temporal` says how they
  resolve). Comparisons such as "year-over-year" name no period and are not mentions.
- year: a bare number from 1900 to 2100 that reads as a year, which leaves out amounts
  ("2,023", "$2023 million", "2023.5", "2023%"), reference numbers ("Page 2023",
  "No. 2023", "ASU 2016-13") and a number alone in a cell of a table's data row.

Each stretch of text is one mention at most: where forms overlap the longest wins, so
the year inside "fiscal 2023" or "September 30, 2023" is not reported again. Two-digit
years below 70 are 20xx, the rest 19xx.
"""

from __future__ import annotations

import re
from bisect import bisect_right, insort
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import Literal, TypedDict

MentionKind = Literal["date", "fiscal_period", "month_year", "relative", "year"]

MIN_YEAR = 1900
MAX_YEAR = 2100
PREFIX_LIMIT = 200

# Two-digit years from here up are read as 19xx ("FY99"), below it as 20xx ("FY23").
_TWO_DIGIT_CENTURY_PIVOT = 70
# "2023-24" is one fiscal year over two calendar years, "2020-23" a short run; a wider
# gap with two digits is a reference number such as "ASU 2016-13".
_MAX_SHORT_RANGE_GAP = 10

# Where overlapping forms are equally long, the more specific kind wins.
_KIND_RANK: dict[MentionKind, int] = {
    "date": 0,
    "fiscal_period": 1,
    "month_year": 2,
    "relative": 3,
    "year": 4,
}

_MONTH_NUMBERS: dict[str, int] = {
    "january": 1, "jan": 1,
    "february": 2, "feb": 2,
    "march": 3, "mar": 3,
    "april": 4, "apr": 4,
    "may": 5,
    "june": 6, "jun": 6,
    "july": 7, "jul": 7,
    "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9,
    "october": 10, "oct": 10,
    "november": 11, "nov": 11,
    "december": 12, "dec": 12,
}  # fmt: skip
_ORDINAL_NUMBERS: dict[str, int] = {
    "first": 1, "1st": 1,
    "second": 2, "2nd": 2,
    "third": 3, "3rd": 3,
    "fourth": 4, "4th": 4,
}  # fmt: skip
_COUNT_WORDS: dict[str, int] = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}  # fmt: skip
_RELATIVE_STEPS: dict[str, int] = {
    "last": -1, "prior": -1, "previous": -1, "preceding": -1,
    "this": 0, "current": 0,
    "next": 1, "following": 1, "coming": 1,
}  # fmt: skip

# --- pattern pieces ----------------------------------------------------------------

_YEAR4 = r"(?:19\d{2}|20\d{2}|2100)"
# A year ends where a number would not go on: "2023.5", "2023,456" and "2023%" are figures.
_YEAR_END = r"(?![\d%])(?![.,]\d)"
_MONTH_NAME = (
    r"(?P<month_name>" + "|".join(sorted(_MONTH_NUMBERS, key=len, reverse=True)) + r")\b\.?"
)
_DAY = r"(?P<day>3[01]|[12]\d|0?[1-9])"
_FY_REF = (
    r"(?:\bF\.?Y\.?\s*['’]?(?:" + _YEAR4 + r"|\d{2})"
    r"|\bfiscal[\s-]+years?\s+['’]?(?:" + _YEAR4 + r"|\d{2})"
    r"|\bfiscal\s+['’]?" + _YEAR4 + r")" + _YEAR_END
)
_PLAIN_YEAR_REF = r"(?:" + _YEAR4 + r"|['’]\d{2})" + _YEAR_END
_YEAR_REF = r"(?P<year_ref>" + _FY_REF + "|" + _PLAIN_YEAR_REF + ")"
# "1Q23" and "1H23" glue a bare two-digit year on; with a space it could be any number.
_GLUED_YEAR_REF = (
    r"(?P<year_ref>\d{2}" + _YEAR_END + r"|[\s-]*(?:" + _FY_REF + "|" + _PLAIN_YEAR_REF + "))"
)
_FY_YEAR_REF = r"(?P<year_ref>" + _FY_REF + ")"
_QUARTER_ORDINAL = r"(?P<quarter_ordinal>first|second|third|fourth|1st|2nd|3rd|4th)"
_HALF_ORDINAL = r"(?P<half_ordinal>first|second|1st|2nd)"
_BEFORE_YEAR = r"(?:\s*,\s*|\s+of\s+(?:the\s+)?|\s+)"
_RELATIVE_STEP = r"(?P<step>" + "|".join(_RELATIVE_STEPS) + r")"
# "year-over-year" and "quarter on quarter" compare periods rather than name one.
_NOT_A_COMPARISON = r"(?![\s-]+(?:over|on)[\s-])"


def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_ISO_DATE = _compile(rf"(?<![\d/.-])(?P<year>{_YEAR4})-(?P<month>\d\d)-(?P<day>\d\d)(?![\d-])")
_US_DATE = _compile(
    rf"(?<![\d/.-])(?P<month>1[0-2]|0?[1-9])/{_DAY}/(?P<year>\d{{4}}|\d{{2}})(?![\d/])"
)
_ORDINAL_SUFFIX = r"(?:st|nd|rd|th)?"
_MONTH_FIRST_DATE = _compile(
    rf"\b{_MONTH_NAME}\s*{_DAY}{_ORDINAL_SUFFIX},?\s+(?P<year>{_YEAR4}){_YEAR_END}"
)
_DAY_FIRST_DATE = _compile(
    rf"\b{_DAY}{_ORDINAL_SUFFIX}\s+(?:of\s+)?{_MONTH_NAME},?\s+(?P<year>{_YEAR4}){_YEAR_END}"
)
_WRITTEN_MONTH = _compile(rf"\b{_MONTH_NAME},?\s+(?:of\s+)?(?P<year>{_YEAR4}){_YEAR_END}")
_NUMERIC_MONTH = _compile(rf"(?<![\d/.-])(?P<month>1[0-2]|0?[1-9])/(?P<year>{_YEAR4})(?![\d/])")
_FISCAL_PERIOD_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    _compile(pattern)
    for pattern in (
        # Q1 2023, Q1-2023, Q1'23, Q1 FY23, Q1 of fiscal 2023
        rf"\bQ(?P<quarter>[1-4])(?:\s*,\s*|\s+of\s+|[\s-]*){_YEAR_REF}",
        # 1Q23, 1Q 2023, 1Q FY2023
        rf"\b(?P<quarter>[1-4])Q{_GLUED_YEAR_REF}",
        # FY2023 Q1, fiscal 2023 Q1
        rf"{_FY_YEAR_REF}[\s-]*Q(?P<quarter>[1-4])\b",
        # first quarter of fiscal 2023, fourth fiscal quarter of 2023, third quarter 2023
        rf"\b(?:fiscal\s+)?{_QUARTER_ORDINAL}\s+(?:fiscal\s+)?quarter{_BEFORE_YEAR}{_YEAR_REF}",
        # fiscal 2023 fourth quarter
        rf"{_FY_YEAR_REF}\s+{_QUARTER_ORDINAL}\s+(?:fiscal\s+)?quarter\b",
        # H1 2023, H1 FY2023
        rf"\bH(?P<half>[12])(?:\s*,\s*|\s+of\s+|[\s-]*){_YEAR_REF}",
        # 1H23, 2H 2023
        rf"\b(?P<half>[12])H{_GLUED_YEAR_REF}",
        # FY2023 H1
        rf"{_FY_YEAR_REF}[\s-]*H(?P<half>[12])\b",
        # first half of 2023, second half of fiscal 2024
        rf"\b(?:fiscal\s+)?{_HALF_ORDINAL}\s+(?:fiscal\s+)?half{_BEFORE_YEAR}{_YEAR_REF}",
        # fiscal 2023 second half
        rf"{_FY_YEAR_REF}\s+{_HALF_ORDINAL}\s+half\b",
    )
)
# FY2023; fiscal years 2023, 2022 and 2021; fiscal 2021-2023
_LIST_SEPARATOR = r"(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|through|to)\s+|\s*[-–—]\s*)"
_FISCAL_YEARS = _compile(
    rf"{_FY_YEAR_REF}(?P<more_years>(?:{_LIST_SEPARATOR}{_YEAR4}{_YEAR_END})+)?"
)
_LISTED_YEAR = _compile(_YEAR4 + _YEAR_END)
_RELATIVE_PERIOD = _compile(
    rf"\b{_RELATIVE_STEP}[\s-]+(?:fiscal[\s-]+)?(?P<unit>year|quarter)\b{_NOT_A_COMPARISON}"
)
_COUNT = r"(?P<count>" + "|".join(_COUNT_WORDS) + r"|\d{1,2})"
_PERIODS_AGO = _compile(rf"\b{_COUNT}[\s-]+(?:fiscal[\s-]+)?(?P<unit>year|quarter)s?[\s-]+ago\b")
_PART_OF_RELATIVE_YEAR = tuple(
    _compile(
        rf"\b{ordinal}\s+(?:fiscal\s+)?{part}\s+of\s+(?:the\s+)?{_RELATIVE_STEP}"
        rf"\s+(?:fiscal\s+)?year\b{_NOT_A_COMPARISON}"
    )
    for ordinal, part in ((_QUARTER_ORDINAL, "quarter"), (_HALF_ORDINAL, "half"))
)
# A year may follow a letter and a hyphen ("mid-2023") but not a digit and a separator,
# a currency sign or a number sign; it may not be followed by a unit of amount.
_YEAR_START = r"(?<![\w$€£¥#/:])(?<!\d[-–.,])(?<![$€£¥] )"
_YEAR_STOP = (
    r"(?![\w%])(?![.,]\d)(?![-–—/]\d)"
    r"(?!\s*(?:%|(?:percent|million|billion|thousand|trillion)\b))"
)
_BARE_YEAR = _compile(rf"{_YEAR_START}(?P<year>{_YEAR4}){_YEAR_STOP}")
_YEAR_RANGE = _compile(
    rf"{_YEAR_START}(?P<first>{_YEAR4})\s*[-–—/]\s*(?P<last>{_YEAR4}|\d{{2}}){_YEAR_STOP}"
)
_NUMBERING_BEFORE = _compile(
    r"(?:\b(?:pages?|pp?\.?|nos?\.|numbers?|items?|exhibits?|notes?|sections?|rules?|asu"
    r"|suite|room|box)|#)\s*$"
)
_NUMBERING_LOOKBACK = 16
_FISCAL_MARK = _compile(r"fiscal|\bF\.?Y")
_TRAILING_DIGITS = re.compile(r"\d+$")
_SPACE = re.compile(r"\s+")

_TABLE_MARKER = re.compile(r"\[TABLE\s+\d+\]|\[END TABLE\]")
_TABLE_ROW = re.compile(r"^[ \t]*\|.*$", re.MULTILINE)
_CELL_BORDER = re.compile(r"(?<!\\)\|")
_SEPARATOR_CELL = re.compile(r"\s*:?-+:?\s*")
_FIGURE_CELL = re.compile(r"\(?\s*[-+]?\s*[$€£¥]?\s*\d[\d,.]*\s*%?\s*\)?")
_YEAR_CELL = re.compile(rf"\(?\s*{_YEAR4}\s*\)?")


# --- mentions --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TemporalMention:
    """One temporal expression in a text, with what it refers to.

    `text` is `source[start:end]`. `year` is the calendar year of a date, month or bare
    year, the fiscal year of a fiscal period, and None for a relative expression that
    could not be resolved. `quarter` (1-4) and `half` (1-2) are set for periods of that
    length, `month` for dates and months, `day` for dates. `fiscal` is True for a period
    the text calls fiscal ("FY2023", "Q1 FY2023", "last fiscal year") and for a relative
    period counted on a fiscal year that does not end in December. `column_header` is
    the header cell of the mention's column when it is `in_table` (None when that cell
    is empty or the mention is outside the table's rows).
    """

    kind: MentionKind
    text: str
    start: int
    end: int
    year: int | None = None
    quarter: int | None = None
    half: int | None = None
    day: date | None = None
    month: int | None = None
    fiscal: bool = False
    in_table: bool = False
    column_header: str | None = None

    @property
    def resolved(self) -> bool:
        return self.year is not None

    def label(self) -> str:
        """The normalized form: "2023-09-30", "2023-09", "Q1 FY2023", "H1 2023", "FY2023",
        "2023"; an unresolved relative expression is its own words, lower-cased."""
        if self.day is not None:
            return self.day.isoformat()
        if self.year is None:
            return _SPACE.sub(" ", self.text.strip().lower())
        if self.kind == "month_year" and self.month is not None:
            return f"{self.year:04d}-{self.month:02d}"
        year = f"FY{self.year}" if self.fiscal else str(self.year)
        if self.quarter is not None:
            return f"Q{self.quarter} {year}"
        if self.half is not None:
            return f"H{self.half} {year}"
        return year

    @property
    def is_period(self) -> bool:
        """Whether this names a reporting period (a quarter, a half or a fiscal year)
        rather than a calendar date, month or year."""
        if not self.resolved:
            return False
        if self.kind == "fiscal_period":
            return True
        return self.kind == "relative" and (
            self.fiscal or self.quarter is not None or self.half is not None
        )


# --- tables ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Cell:
    start: int
    end: int
    row: int  # 0 is the header row
    column: int
    text: str
    # A row holding figures that are not years is a data row, where a lone number is an
    # amount even when it looks like a year.
    in_data_row: bool


@dataclass(frozen=True, slots=True)
class _Table:
    start: int
    end: int
    cells: tuple[_Cell, ...]
    cell_starts: tuple[int, ...]
    header: tuple[str, ...]

    def cell_at(self, offset: int) -> _Cell | None:
        index = bisect_right(self.cell_starts, offset) - 1
        if index >= 0 and offset < self.cells[index].end:
            return self.cells[index]
        return None

    def column_header(self, cell: _Cell | None) -> str | None:
        if cell is None:
            return None
        if cell.row == 0:
            header = cell.text
        elif cell.column < len(self.header):
            header = self.header[cell.column]
        else:
            return None
        return header.strip() or None


def _find_tables(text: str) -> tuple[_Table, ...]:
    """Every `[TABLE n]` block; one left open runs to the end of the text."""
    tables: list[_Table] = []
    opened_at: int | None = None
    for marker in _TABLE_MARKER.finditer(text):
        if marker.group().startswith("[END"):
            if opened_at is not None:
                tables.append(_read_table(text, opened_at, marker.start()))
            opened_at = None
        else:
            if opened_at is not None:
                tables.append(_read_table(text, opened_at, marker.start()))
            opened_at = marker.end()
    if opened_at is not None:
        tables.append(_read_table(text, opened_at, len(text)))
    return tuple(tables)


def _read_table(text: str, start: int, end: int) -> _Table:
    cells: list[_Cell] = []
    header: tuple[str, ...] = ()
    row = 0
    for line in _TABLE_ROW.finditer(text, start, end):
        borders = [border.start() for border in _CELL_BORDER.finditer(line.group())]
        spans = [
            (line.start() + left + 1, line.start() + right)
            for left, right in zip(borders, [*borders[1:], len(line.group())], strict=True)
        ]
        if spans and spans[-1][0] == spans[-1][1]:
            spans.pop()  # nothing after the closing border
        texts = [text[cell_start:cell_end] for cell_start, cell_end in spans]
        if all(_SEPARATOR_CELL.fullmatch(cell_text) for cell_text in texts):
            continue
        in_data_row = any(
            _FIGURE_CELL.fullmatch(cell_text.strip())
            and not _YEAR_CELL.fullmatch(cell_text.strip())
            for cell_text in texts[1:]
        )
        if row == 0:
            header = tuple(texts)
        cells.extend(
            _Cell(cell_start, cell_end, row, column, cell_text, in_data_row)
            for column, ((cell_start, cell_end), cell_text) in enumerate(
                zip(spans, texts, strict=True)
            )
        )
        row += 1
    return _Table(start, end, tuple(cells), tuple(cell.start for cell in cells), header)


# --- scanning --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Scan:
    """What every pattern's reader needs besides its match."""

    text: str
    tables: tuple[_Table, ...]
    document_date: date | None
    fiscal_year_end_month: int

    def table_at(self, offset: int) -> _Table | None:
        return next((table for table in self.tables if table.start <= offset < table.end), None)


@dataclass(frozen=True, slots=True)
class _Candidate:
    start: int
    end: int
    rank: int
    mentions: tuple[TemporalMention, ...]


_Reader = Callable[[re.Match[str], _Scan], tuple[TemporalMention, ...]]


def _full_year(digits: str) -> int:
    number = int(digits)
    if len(digits) != 2:
        return number
    return number + (1900 if number >= _TWO_DIGIT_CENTURY_PIVOT else 2000)


def _year_of_ref(year_ref: str) -> int | None:
    digits = _TRAILING_DIGITS.search(year_ref)
    if digits is None:
        return None
    year = _full_year(digits.group())
    return year if MIN_YEAR <= year <= MAX_YEAR else None


def _whole(
    match: re.Match[str],
    kind: MentionKind,
    *,
    year: int | None = None,
    quarter: int | None = None,
    half: int | None = None,
    day: date | None = None,
    month: int | None = None,
    fiscal: bool = False,
) -> TemporalMention:
    """A mention spanning the whole match."""
    return TemporalMention(
        kind,
        match.group(),
        match.start(),
        match.end(),
        year=year,
        quarter=quarter,
        half=half,
        day=day,
        month=month,
        fiscal=fiscal,
    )


def _day_mention(
    match: re.Match[str], year: int, month: int, day: int
) -> tuple[TemporalMention, ...]:
    if not MIN_YEAR <= year <= MAX_YEAR:
        return ()
    try:
        calendar_day = date(year, month, day)
    except ValueError:
        return ()
    return (_whole(match, "date", year=year, month=month, day=calendar_day),)


def _read_numeric_date(match: re.Match[str], scan: _Scan) -> tuple[TemporalMention, ...]:
    return _day_mention(match, _full_year(match["year"]), int(match["month"]), int(match["day"]))


def _read_written_date(match: re.Match[str], scan: _Scan) -> tuple[TemporalMention, ...]:
    month = _MONTH_NUMBERS[match["month_name"].lower()]
    return _day_mention(match, int(match["year"]), month, int(match["day"]))


def _read_month(match: re.Match[str], scan: _Scan) -> tuple[TemporalMention, ...]:
    groups = match.groupdict()
    month_name = groups.get("month_name")
    month = _MONTH_NUMBERS[month_name.lower()] if month_name else int(match["month"])
    return (_whole(match, "month_year", year=int(match["year"]), month=month),)


def _read_fiscal_period(match: re.Match[str], scan: _Scan) -> tuple[TemporalMention, ...]:
    year = _year_of_ref(match["year_ref"])
    if year is None:
        return ()
    groups = match.groupdict()
    quarter = groups.get("quarter") or groups.get("quarter_ordinal")
    half = groups.get("half") or groups.get("half_ordinal")
    return (
        _whole(
            match,
            "fiscal_period",
            year=year,
            quarter=_ordinal(quarter),
            half=_ordinal(half),
            fiscal=bool(_FISCAL_MARK.search(match.group())),
        ),
    )


def _ordinal(word: str | None) -> int | None:
    if word is None:
        return None
    return int(word) if word.isdigit() else _ORDINAL_NUMBERS[word.lower()]


def _read_fiscal_years(match: re.Match[str], scan: _Scan) -> tuple[TemporalMention, ...]:
    first_year = _year_of_ref(match["year_ref"])
    if first_year is None:
        return ()
    mentions = [
        TemporalMention(
            "fiscal_period",
            match["year_ref"],
            match.start("year_ref"),
            match.end("year_ref"),
            year=first_year,
            fiscal=True,
        )
    ]
    if match["more_years"]:
        offset = match.start("more_years")
        mentions.extend(
            TemporalMention(
                "fiscal_period",
                listed.group(),
                offset + listed.start(),
                offset + listed.end(),
                year=int(listed.group()),
                fiscal=True,
            )
            for listed in _LISTED_YEAR.finditer(match["more_years"])
        )
    return tuple(mentions)


def _read_year_range(match: re.Match[str], scan: _Scan) -> tuple[TemporalMention, ...]:
    first = int(match["first"])
    last_digits = match["last"]
    if len(last_digits) == 2:
        last = first - first % 100 + int(last_digits)
        if last <= first:
            last += 100
        if last - first > _MAX_SHORT_RANGE_GAP:
            return ()
    else:
        last = int(last_digits)
    if not first < last <= MAX_YEAR or _is_numbering(scan.text, match.start()):
        return ()
    return (
        TemporalMention(
            "year", match["first"], match.start("first"), match.end("first"), year=first
        ),
        TemporalMention("year", last_digits, match.start("last"), match.end("last"), year=last),
    )


def _read_bare_year(match: re.Match[str], scan: _Scan) -> tuple[TemporalMention, ...]:
    if _is_numbering(scan.text, match.start()) or _is_table_figure(match, scan):
        return ()
    return (_whole(match, "year", year=int(match["year"])),)


def _is_numbering(text: str, start: int) -> bool:
    return bool(_NUMBERING_BEFORE.search(text, max(0, start - _NUMBERING_LOOKBACK), start))


def _is_table_figure(match: re.Match[str], scan: _Scan) -> bool:
    """Whether the number fills a value cell of a data row (an amount, not a year).

    Row labels (the first column) and rows of nothing but years keep their years, so
    "| 2023 | 1,500 |" and "| | 2023 | 2022 |" read as years, "| Units | 2023 | 1,500 |"
    does not.
    """
    table = scan.table_at(match.start())
    cell = table.cell_at(match.start()) if table is not None else None
    return (
        cell is not None
        and cell.row > 0
        and cell.column > 0
        and cell.in_data_row
        and bool(_YEAR_CELL.fullmatch(cell.text.strip()))
    )


def _fiscal_position(day: date, fiscal_year_end_month: int) -> tuple[int, int]:
    """(fiscal year, fiscal quarter) of a day, the year named for the calendar year it
    ends in."""
    months_into_year = (day.month - fiscal_year_end_month - 1) % 12
    fiscal_year = day.year if day.month <= fiscal_year_end_month else day.year + 1
    return fiscal_year, months_into_year // 3 + 1


def _relative_mention(
    match: re.Match[str],
    scan: _Scan,
    unit: str,
    step: int,
    part_quarter: int | None = None,
    part_half: int | None = None,
) -> tuple[TemporalMention, ...]:
    stated_fiscal = bool(_FISCAL_MARK.search(match.group()))
    if scan.document_date is None:
        return (_whole(match, "relative", fiscal=stated_fiscal),)
    fiscal_year, fiscal_quarter = _fiscal_position(scan.document_date, scan.fiscal_year_end_month)
    quarter = part_quarter
    if unit == "quarter":
        year, quarter_index = divmod(fiscal_year * 4 + fiscal_quarter - 1 + step, 4)
        quarter = quarter_index + 1
    else:
        year = fiscal_year + step
    # Counted on the fiscal calendar, so off a December year end the result is fiscal
    # whatever the words say.
    fiscal = stated_fiscal or scan.fiscal_year_end_month != 12
    return (_whole(match, "relative", year=year, quarter=quarter, half=part_half, fiscal=fiscal),)


def _read_relative_period(match: re.Match[str], scan: _Scan) -> tuple[TemporalMention, ...]:
    return _relative_mention(
        match, scan, match["unit"].lower(), _RELATIVE_STEPS[match["step"].lower()]
    )


def _read_periods_ago(match: re.Match[str], scan: _Scan) -> tuple[TemporalMention, ...]:
    count = match["count"].lower()
    periods = int(count) if count.isdigit() else _COUNT_WORDS[count]
    return _relative_mention(match, scan, match["unit"].lower(), -periods)


def _read_part_of_relative_year(match: re.Match[str], scan: _Scan) -> tuple[TemporalMention, ...]:
    groups = match.groupdict()
    return _relative_mention(
        match,
        scan,
        "year",
        _RELATIVE_STEPS[match["step"].lower()],
        part_quarter=_ordinal(groups.get("quarter_ordinal")),
        part_half=_ordinal(groups.get("half_ordinal")),
    )


_READERS: tuple[tuple[re.Pattern[str], _Reader, MentionKind], ...] = (
    (_ISO_DATE, _read_numeric_date, "date"),
    (_US_DATE, _read_numeric_date, "date"),
    (_MONTH_FIRST_DATE, _read_written_date, "date"),
    (_DAY_FIRST_DATE, _read_written_date, "date"),
    *((pattern, _read_fiscal_period, "fiscal_period") for pattern in _FISCAL_PERIOD_PATTERNS),
    (_FISCAL_YEARS, _read_fiscal_years, "fiscal_period"),
    (_WRITTEN_MONTH, _read_month, "month_year"),
    (_NUMERIC_MONTH, _read_month, "month_year"),
    (_RELATIVE_PERIOD, _read_relative_period, "relative"),
    (_PERIODS_AGO, _read_periods_ago, "relative"),
    *((pattern, _read_part_of_relative_year, "relative") for pattern in _PART_OF_RELATIVE_YEAR),
    (_YEAR_RANGE, _read_year_range, "year"),
    (_BARE_YEAR, _read_bare_year, "year"),
)


def extract_temporal(
    text: str, document_date: date | None = None, fiscal_year_end_month: int = 12
) -> list[TemporalMention]:
    """Every temporal mention in `text`, in reading order.

    Relative expressions are counted in whole fiscal periods from the one holding
    `document_date`, on a fiscal calendar that ends with `fiscal_year_end_month` and
    names each fiscal year for the calendar year it ends in. With a September year end,
    2023-11-03 is in Q1 FY2024: "last fiscal year" is FY2023, "this quarter" Q1 FY2024,
    "previous quarter" Q4 FY2023, "two years ago" FY2022 and "first quarter of last
    year" Q1 FY2023. With the default December year end the fiscal calendar is the
    calendar one, and a relative period is fiscal only when the words say so ("last
    year" is 2022, "last fiscal year" FY2022). Pass a filing's period end as
    `document_date` to read "this year" as the year reported on, its filing date to read
    it as the year of filing. Without `document_date` relative expressions are still
    returned, with `year` None.
    """
    if not 1 <= fiscal_year_end_month <= 12:
        raise ValueError(
            "fiscal_year_end_month must be a month number from 1 to 12, "
            f"not {fiscal_year_end_month}"
        )
    scan = _Scan(text, _find_tables(text), document_date, fiscal_year_end_month)
    candidates = [
        _Candidate(found.start(), found.end(), _KIND_RANK[kind], mentions)
        for pattern, read, kind in _READERS
        for found in pattern.finditer(text)
        if (mentions := read(found, scan))
    ]
    markers = [(marker.start(), marker.end()) for marker in _TABLE_MARKER.finditer(text)]
    mentions = sorted(
        (
            mention
            for candidate in _without_overlaps(candidates, markers)
            for mention in candidate.mentions
        ),
        key=lambda mention: mention.start,
    )
    return [_place_in_table(mention, scan) for mention in mentions]


def _without_overlaps(
    candidates: Iterable[_Candidate], taken: Iterable[tuple[int, int]]
) -> list[_Candidate]:
    """The longest candidates that share no text with a longer one (or with `taken`)."""
    spans = sorted(taken)
    starts = [start for start, _ in spans]
    kept: list[_Candidate] = []
    for candidate in sorted(
        candidates, key=lambda found: (found.start - found.end, found.rank, found.start)
    ):
        index = bisect_right(starts, candidate.start)
        if index > 0 and spans[index - 1][1] > candidate.start:
            continue
        if index < len(spans) and spans[index][0] < candidate.end:
            continue
        insort(spans, (candidate.start, candidate.end))
        starts.insert(index, candidate.start)
        kept.append(candidate)
    return kept


def _place_in_table(mention: TemporalMention, scan: _Scan) -> TemporalMention:
    table = scan.table_at(mention.start)
    if table is None:
        return mention
    header = table.column_header(table.cell_at(mention.start))
    return replace(mention, in_table=True, column_header=header)


# --- what the mentions are made into ------------------------------------------------------


def context_prefix(mentions: Sequence[TemporalMention], limit: int = PREFIX_LIMIT) -> str:
    """The line to prepend to a chunk before embedding, at most `limit` characters:

        [Periods: Q4 FY2023, FY2023; Dates: 2023-09-30; Months: 2023-08; Years: 2021]

    Sections come most specific first: periods (quarters, then halves, then years),
    dates, months, years; within one, labels keep the order they first appear in. Each
    label is given once, and a month or year already said by a more specific label
    ("2023-09" beside "2023-09-30", "2023" beside "FY2023") is left out. When the whole
    line would be too long it ends after the last label that fits, so no label is cut
    and the bracket is closed; with nothing to say, or no room for one label, it is "".
    Unresolved relative expressions are not included.
    """
    body = ""
    for section, labels in _prefix_sections(mentions):
        for position, label in enumerate(labels):
            opening = f"{'; ' if body else ''}{section}: "
            piece = f"{opening if position == 0 else ', '}{label}"
            if len(body) + len(piece) + len("[]") > limit:
                return f"[{body}]" if body else ""
            body += piece
    return f"[{body}]" if body else ""


def _prefix_sections(mentions: Sequence[TemporalMention]) -> list[tuple[str, list[str]]]:
    in_order = sorted((mention for mention in mentions if mention.resolved), key=lambda m: m.start)
    periods = [mention for mention in in_order if mention.is_period]
    quarters = [mention.label() for mention in periods if mention.quarter is not None]
    halves = [mention.label() for mention in periods if mention.half is not None]
    years = [
        mention.label() for mention in periods if mention.quarter is None and mention.half is None
    ]
    dates = [mention for mention in in_order if mention.kind == "date"]
    date_months = {mention.label()[:7] for mention in dates}
    months = [
        label
        for label in (mention.label() for mention in in_order if mention.kind == "month_year")
        if label not in date_months
    ]
    said_years = {mention.year for mention in [*periods, *dates]} | {
        mention.year for mention in in_order if mention.kind == "month_year"
    }
    plain_years = [
        str(mention.year)
        for mention in in_order
        if mention.kind in ("year", "relative")
        and not mention.is_period
        and mention.year not in said_years
    ]
    sections = [
        ("Periods", _unique([*quarters, *halves, *years])),
        ("Dates", _unique(mention.label() for mention in dates)),
        ("Months", _unique(months)),
        ("Years", _unique(plain_years)),
    ]
    return [(section, labels) for section, labels in sections if labels]


def _unique(labels: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(labels))


class TemporalMetadata(TypedDict):
    """What a chunk's text says about time, as JSON for a jsonb column.

    Lists are sorted and unique. `years` holds every year referred to in any way (a
    date's, a month's, a period's, a bare year); `fiscal_years` the years of periods
    stated as fiscal ("FY2023", "Q1 FY2023", a relative period resolved on a fiscal
    calendar); `fiscal_quarters` and `halves` every quarter and half as [year, number]
    pairs, stated as fiscal or not, since filings number them on the fiscal calendar;
    `dates` ISO days; `months` "YYYY-MM" for every month and every date's month.
    """

    years: list[int]
    fiscal_years: list[int]
    fiscal_quarters: list[list[int]]
    halves: list[list[int]]
    dates: list[str]
    months: list[str]
    has_tabular_dates: bool
    has_unresolved_relative: bool


def temporal_metadata(mentions: Sequence[TemporalMention]) -> TemporalMetadata:
    """The mentions as filterable facts (see `TemporalMetadata`)."""
    years: set[int] = set()
    fiscal_years: set[int] = set()
    quarters: set[tuple[int, int]] = set()
    halves: set[tuple[int, int]] = set()
    dates: set[str] = set()
    months: set[str] = set()
    for mention in mentions:
        if mention.year is None:
            continue
        years.add(mention.year)
        if mention.fiscal:
            fiscal_years.add(mention.year)
        if mention.quarter is not None:
            quarters.add((mention.year, mention.quarter))
        if mention.half is not None:
            halves.add((mention.year, mention.half))
        if mention.day is not None:
            dates.add(mention.day.isoformat())
        if mention.month is not None:
            months.add(f"{mention.year:04d}-{mention.month:02d}")
    return TemporalMetadata(
        years=sorted(years),
        fiscal_years=sorted(fiscal_years),
        fiscal_quarters=[list(pair) for pair in sorted(quarters)],
        halves=[list(pair) for pair in sorted(halves)],
        dates=sorted(dates),
        months=sorted(months),
        has_tabular_dates=any(mention.in_table for mention in mentions),
        has_unresolved_relative=any(
            mention.kind == "relative" and not mention.resolved for mention in mentions
        ),
    )
