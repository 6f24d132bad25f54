"""The three primary financial statements of a parsed 10-K or 10-Q, as typed line items.

A table block is read as a statement when two signals agree:

- a title just above it on its page names the statement: "CONSOLIDATED STATEMENTS OF
  OPERATIONS", "INCOME STATEMENTS", "BALANCE SHEETS", "statement of financial position",
  "STATEMENTS OF CASH FLOWS", "CASH FLOWS STATEMENTS". A sentence that mentions the
  statements ("… on our consolidated balance sheets.") is no title, and comprehensive
  income and equity statements are other statements;
- its rows hold the lines that statement cannot do without: revenue (or net sales) and
  net income; total assets, with total liabilities or stockholders' equity; operating,
  investing and financing activities.

The title keeps out the selected-financial-data summary and the MD&A and note tables
that repeat a statement's lines; the rows keep out a title that heads something else.
A statement continued in a second table block (a page break, a parser's split) is joined
when the second block has the same number of columns and either no column header of its
own or the same periods, with nothing between the two but page furniture.

Column headers are read into periods ("Year Ended December 31, 2017", "June 30, | 2016",
"Three Months Ended June 28, 2025", "As of December 28, 2030"); amounts are multiplied by
the scale the table or the text just above it states ("In millions, except number of
shares, which are reflected in thousands, and per-share amounts"), per-share amounts not.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Literal

from services.ingest.document_model import Block, ParsedDocument

StatementKind = Literal["income", "balance", "cash_flow"]

# A title is a short line; a longer paragraph naming a statement is a sentence about it.
MAX_TITLE_CHARS = 120
# Paragraphs looked at above a table for its title: the title, a scale note, a company
# name line, "(Unaudited)".
TITLE_LOOKBACK_PARAGRAPHS = 4
# Between a title and its table, or between a statement and its continuation, only
# short page furniture stands ("Table of Contents", "See accompanying notes.", "53").
MAX_FURNITURE_CHARS = 150
# A 52/53-week fiscal year ends up to a week into the next month (Apple's on the last
# Saturday of September, some on the Saturday nearest to it): a period end is read as
# belonging to the month it was in a week earlier.
FISCAL_WEEK_SLACK = timedelta(days=7)
# How many pages from the start of a document its cover page may run to.
COVER_PAGES = 3

_TITLES: tuple[tuple[StatementKind, re.Pattern[str]], ...] = (
    (
        "cash_flow",
        re.compile(r"\bstatements? of (?:consolidated )?cash flows?\b|\bcash flows? statements?\b"),
    ),
    (
        "balance",
        re.compile(
            r"\bbalance sheets?\b"
            r"|\bstatements? of (?:consolidated )?financial (?:position|condition)\b"
        ),
    ),
    (
        "income",
        re.compile(
            r"\bstatements? of (?:consolidated )?(?:operations|income|earnings)\b"
            r"|\bincome statements?\b|\bprofit (?:and|or) loss\b"
        ),
    ),
)
# Statements with titles like the primary ones' ("COMPREHENSIVE INCOME STATEMENTS").
_OTHER_STATEMENT = re.compile(
    r"comprehensive (?:income|loss|earnings)|(?:stockholders|shareholders)'? equity"
    r"|changes in equity"
)
# A combined statement of operations and comprehensive income is still the income statement.
_COMBINED_INCOME = re.compile(
    r"statements? of (?:operations|income|earnings) and (?:other )?comprehensive"
)

_MONTHS = {
    name: number
    for number, full in enumerate(calendar.month_name)
    if full
    for name in (full.lower(), full[:3].lower())
}
_MONTHS["sept"] = 9
_MONTH_DAY = re.compile(
    r"\b(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?\s+(\d{1,2})?\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"(?<![\d,.$])((?:19|20)\d{2})(?![\d,])")
_DURATIONS: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"\b(?:three|3)[- ]months?\b|\bquarters?\b|\b13[- ]weeks?\b|\bQ[1-4]\b", re.I), 3),
    (re.compile(r"\b(?:six|6)[- ]months?\b|\b26[- ]weeks?\b", re.I), 6),
    (re.compile(r"\b(?:nine|9)[- ]months?\b|\b39[- ]weeks?\b", re.I), 9),
    (
        re.compile(r"\b(?:twelve|12)[- ]months?\b|\byears?\b|\bfiscal\b|\b5[23][- ]weeks?\b", re.I),
        12,
    ),
)
_COVER_PERIOD = re.compile(
    r"\b(fiscal year|quarterly period|transition period|year|period) ended:?\s+"
    r"([A-Za-z]{3,9}\.?\s+\d{1,2},?\s+(?:19|20)\d{2})",
    re.IGNORECASE,
)
_SCALE = re.compile(r"\bin\s+(thousands|millions|billions)\b", re.IGNORECASE)
# "(In millions, except per share amounts)" run onto a title or a header's label cell.
_SCALE_NOTE = re.compile(r"\([^)]*\bin (?:thousands|millions|billions)\b[^)]*\)", re.I)
_SCALES = {"thousands": Decimal(1_000), "millions": Decimal(1_000_000), "billions": Decimal(10**9)}

# One printed amount: "1,234", "(1,234)", "-1,234", "6.15", "(0.52)".
_NUMBER = re.compile(r"(\()?([-+])?(\d[\d,]*(?:\.\d+)?|\.\d+)(\))?")
# A statement prints a dash where an amount is nil.
_DASHES = frozenset({"—", "–", "-", "−", "--", "---", "——"})
# Footnote marks after an amount or a label: "(a)", "(1)", "(Note 12)", "*", "[2]". After
# an amount a digit mark needs a space before it, since "(1)" alone is minus one.
_AMOUNT_FOOTNOTE = re.compile(r"(?:\s*\((?:[a-z]|[ivx]{1,4})\)|\s+\(\d{1,2}\)|\s*\*+|\s*\[\d+\])$")
# "(in shares)", "(in dollars per share)": the unit notes of an XBRL viewer's labels.
_LABEL_FOOTNOTE = re.compile(
    r"(?:\s*\((?:\d{1,2}|[a-z]|[ivx]{1,4}|note \d{1,2}[a-z]?"
    r"|in (?:dollars |usd )?(?:per )?shares?)\)|\s*\*+|\s*\[\d+\])+$",
    re.IGNORECASE,
)
# "Note 4 – Debt", "Item 9.": a new part of the filing, never a statement's continuation.
_SECTION_HEADING = re.compile(r"(?:note|item|part)\s+(?:\d{1,2}|[ivx]{1,4})\b", re.IGNORECASE)
_PIPE = re.compile(r"(?<!\\)\|")
_DELIMITER_ROW = re.compile(r"\|(?:\s*:?-{3,}:?\s*\|)+")
_WHITESPACE = re.compile(r"\s+")

# Rows a statement cannot do without, read on lower-cased labels with values.
_REVENUE = re.compile(r"\b(?:revenues?|net sales|sales)\b")
_NET_INCOME = re.compile(r"^net (?:income|earnings|loss)\b")
_TOTAL_ASSETS = re.compile(r"^total assets\b")
_LIABILITIES_OR_EQUITY = re.compile(
    r"^total liabilities\b|\b(?:stockholders|shareholders)'? (?:equity|deficit)\b|^total equity\b"
)
_ACTIVITIES = (re.compile(r"\boperat"), re.compile(r"\binvest"), re.compile(r"\bfinanc"))

# Rows in share counts and per-share amounts, which the table's dollar scale does not
# apply to. "Basic" and "Diluted" alone take their meaning from the row above them.
_PER_SHARE = re.compile(r"\bper (?:common |ordinary |basic |diluted )?share\b", re.IGNORECASE)
_SHARE_COUNT = re.compile(
    r"\bweighted[- ]average\b.*\bshares\b|\bshares used\b|\bshares outstanding\b"
    r"|\bnumber of (?:common )?shares\b|\(in shares\)",
    re.IGNORECASE,
)
_BARE_SHARE_LABEL = re.compile(r"(?:basic|diluted|basic and diluted)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class StatementColumn:
    """One period a statement reports: its end, its length (None for a balance sheet's
    instant), its fiscal year, and its header as printed."""

    period_end: date
    months: int | None
    fiscal_year: int | None
    header: str = ""


@dataclass(frozen=True, slots=True)
class LineItem:
    """One row: its label (footnote marks and a trailing colon dropped), one value per
    column (None where the cell is blank), already multiplied by the statement's scale.

    `per_share` rows (EPS, dividends per share) are as printed; `share_count` rows are
    multiplied by the scale the statement gives share numbers. `section` is the nearest
    label-only row above ("Current liabilities", "Earnings per share") still open.
    """

    label: str
    values: tuple[float | None, ...]
    per_share: bool = False
    share_count: bool = False
    is_total: bool = False
    section: str | None = None
    page: int | None = None


@dataclass(frozen=True, slots=True)
class Statement:
    """A primary statement: where it starts (page, table number), the scale its amounts
    were printed in, its periods and its rows."""

    kind: StatementKind
    title: str
    page: int | None
    table_number: int | None
    scale: float
    columns: tuple[StatementColumn, ...]
    items: tuple[LineItem, ...]
    share_scale: float = 1.0
    # Every page the statement's table blocks lie on, in order.
    pages: tuple[int, ...] = ()

    def item(self, label: str) -> LineItem | None:
        """The first row labelled `label` (case and apostrophes aside)."""
        wanted = _label_key(label)
        return next((item for item in self.items if _label_key(item.label) == wanted), None)

    def column_index(self, period_end: date) -> int | None:
        """The index of the column ending on `period_end`, if the statement has one."""
        return next(
            (i for i, column in enumerate(self.columns) if column.period_end == period_end), None
        )

    def value(self, label: str, period_end: date) -> float | None:
        """The amount of the row labelled `label` for the period ending on `period_end`."""
        item = self.item(label)
        index = self.column_index(period_end)
        if item is None or index is None:
            return None
        return item.values[index]


def parse_amount(cell: str) -> float | None:
    """A printed amount as a number: "1,234" → 1234, "(1,234)" and "$(1,234)" → -1234,
    "—" → 0, "" → None; footnote marks after it ("1,234 (a)") are dropped.

    A dash is zero, not unknown: statements print it where an amount is nil (no debt
    issued that year, no preferred shares outstanding). A blank cell is None.
    """
    number = _decimal(cell)
    return None if number is None else float(number)


def _decimal(cell: str) -> Decimal | None:
    text = cell.replace("$", " ").replace("\u2212", "-").replace("\xa0", " ").strip()
    previous = None
    while previous != text:
        previous = text
        text = _AMOUNT_FOOTNOTE.sub("", text).strip()
    text = text.replace(" ", "")
    if not text:
        return None
    if text in _DASHES or text.strip("()") in _DASHES:
        return Decimal(0)
    match = _NUMBER.fullmatch(text)
    if match is None or bool(match.group(1)) != bool(match.group(4)):
        return None
    try:
        number = Decimal(match.group(3).replace(",", ""))
    except InvalidOperation:
        return None
    return -number if match.group(1) or match.group(2) == "-" else number


def tidy_label(text: str) -> str:
    """A row label on one line, without footnote marks or a trailing colon, with
    straight apostrophes: "Total revenues(1):" → "Total revenues"."""
    label = _WHITESPACE.sub(" ", text.replace("’", "'").replace("\u2018", "'")).strip()
    previous = None
    while previous != label:
        previous = label
        label = _LABEL_FOOTNOTE.sub("", label).rstrip(" :").strip()
    return label


def _label_key(text: str) -> str:
    return tidy_label(text).casefold()


# --- the document ---------------------------------------------------------------------


def read_statements(document: ParsedDocument) -> list[Statement]:
    """The income statements, balance sheets and cash flow statements in `document`, in
    document order (a 10-K's parent-only schedules included, should it print them)."""
    cover_end, cover_annual = _cover_period(document)
    period_end = document.period_end or cover_end
    annual = _is_annual(document.form, cover_annual)
    drafts: list[_Draft] = []
    blocks = document.blocks
    index = 0
    while index < len(blocks):
        block = blocks[index]
        index += 1
        if block.kind != "table":
            continue
        above = _paragraphs_above(blocks, index - 1)
        found = _title(above)
        if found is None:
            continue
        title, kind, position = found
        table = _Table.parse(block.text)
        # What stands between the title and the table, nearest first, title included:
        # where a scale note or "Year Ended June 30," may be.
        heading = above[: position + 1]
        draft = _Draft.start(kind, title, block, table, heading, period_end, annual)
        if draft is None:
            continue
        while (continued := _continuation(blocks, index, draft)) is not None:
            index, part, rows = continued
            draft.extend(part, rows)
        if draft.has_required_rows():
            drafts.append(draft)
    year_end = _fiscal_year_end(period_end, annual, drafts)
    return [draft.finish(year_end) for draft in drafts]


def _cover_period(document: ParsedDocument) -> tuple[date | None, bool | None]:
    """The period the cover page says the report covers (the annual report's "year
    ended June 30, 2016"), and whether that is a fiscal year; what PDFs leave out of the
    document's metadata."""
    for block in document.blocks:
        if block.page is not None and block.page > COVER_PAGES:
            break
        if block.kind != "text":
            continue
        match = _COVER_PERIOD.search(block.text)
        if match:
            what = match.group(1).lower()
            return _parse_date(match.group(2)), what in ("fiscal year", "year")
    return None, None


def _is_annual(form: str | None, cover_annual: bool | None) -> bool | None:
    if form:
        upper = form.upper()
        if upper.startswith(("10-K", "20-F", "40-F")):
            return True
        if upper.startswith("10-Q"):
            return False
    return cover_annual


def _parse_date(text: str) -> date | None:
    match = _MONTH_DAY.search(text)
    year = _YEAR.search(text)
    if match is None or year is None or match.group(2) is None:
        return None
    return _safe_date(int(year.group(1)), _MONTHS[match.group(1).lower()], int(match.group(2)))


def _safe_date(year: int, month: int, day: int) -> date:
    return date(year, month, min(day, calendar.monthrange(year, month)[1]))


def _fiscal_year_end(
    period_end: date | None, annual: bool | None, drafts: Sequence[_Draft]
) -> date | None:
    """The date a fiscal year of this company ends on: the report's own period end for
    an annual report, else the latest twelve-month column; in a quarterly report the
    balance sheet's comparative column, which Regulation S-X sets at the last fiscal
    year end."""
    if annual and period_end is not None:
        return period_end
    yearly = [p.period_end for d in drafts for p in d.periods if p.months == 12]
    if yearly:
        return max(yearly)
    flow_ends = {p.period_end for d in drafts if d.kind != "balance" for p in d.periods}
    comparative = [
        p.period_end
        for d in drafts
        if d.kind == "balance"
        for p in d.periods
        if p.period_end not in flow_ends
    ]
    if comparative and annual is False:
        return min(comparative)
    return None


def fiscal_year_of(period_end: date, year_end: date | None) -> int:
    """The fiscal year a period ending on `period_end` belongs to, for a company whose
    fiscal years end like `year_end`: named by the calendar year in which they end
    (Microsoft's year to June 30, 2016 is fiscal 2016; its quarter to December 31, 2022
    is in fiscal 2023). Without a known year end, the calendar year."""
    if year_end is None:
        return period_end.year
    month = (period_end - FISCAL_WEEK_SLACK).month
    closing = (year_end - FISCAL_WEEK_SLACK).month
    year = (period_end - FISCAL_WEEK_SLACK).year
    return year if month <= closing else year + 1


# --- titles and what stands above a table ---------------------------------------------


def _paragraphs(text: str) -> list[str]:
    """A text block's paragraphs, and the lines a `<br>` breaks them into."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def _paragraphs_above(blocks: Sequence[Block], index: int) -> list[str]:
    """The paragraphs between the previous table on the page and this one, nearest first."""
    page = blocks[index].page
    found: list[str] = []
    for block in reversed(blocks[:index]):
        if block.kind != "text" or block.page != page:
            break
        found.extend(reversed(_paragraphs(block.text)))
        if len(found) >= TITLE_LOOKBACK_PARAGRAPHS:
            break
    return found[:TITLE_LOOKBACK_PARAGRAPHS]


def _title_text(paragraph: str) -> str:
    """A title line without markdown's "#" or a scale note run onto it."""
    return _SCALE_NOTE.sub("", paragraph).strip().lstrip("#").strip()


def _title_kind(paragraph: str) -> StatementKind | None:
    """The statement a paragraph is the title of, or None (a sentence, another statement)."""
    title = _title_text(paragraph)
    if len(title) > MAX_TITLE_CHARS or title.endswith((".", ":")):
        return None
    text = title.replace("’", "'").lower()
    if _OTHER_STATEMENT.search(text) and not _COMBINED_INCOME.search(text):
        return None
    for kind, pattern in _TITLES:
        if pattern.search(text):
            return kind
    return None


def _title(above: Sequence[str]) -> tuple[str, StatementKind, int] | None:
    """The nearest statement title above a table, its kind and its position in `above`,
    if only furniture stands between."""
    for position, paragraph in enumerate(above):
        kind = _title_kind(paragraph)
        if kind is not None:
            return _title_text(paragraph), kind, position
        if len(paragraph) > MAX_FURNITURE_CHARS or _names_other_statement(paragraph):
            break
    return None


def _names_other_statement(paragraph: str) -> bool:
    text = paragraph.replace("’", "'").lower()
    return len(paragraph) <= MAX_TITLE_CHARS and bool(_OTHER_STATEMENT.search(text))


# --- one table --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Table:
    """A markdown table block's rows as cell texts: the header row, then the body."""

    header: list[str]
    body: list[list[str]]

    @classmethod
    def parse(cls, text: str) -> _Table:
        rows = [
            _cells(line)
            for line in text.splitlines()
            if line.startswith("|") and not _DELIMITER_ROW.fullmatch(line.strip())
        ]
        if not rows:
            return cls([], [])
        width = max(len(row) for row in rows)
        rows = [row + [""] * (width - len(row)) for row in rows]
        return cls(rows[0], rows[1:])

    @property
    def width(self) -> int:
        """How many value columns, beside the label column."""
        return max(len(self.header) - 1, 0)


def _cells(line: str) -> list[str]:
    text = line.strip().removeprefix("|")
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    return [cell.strip().replace("\\|", "|") for cell in _PIPE.split(text)]


@dataclass(frozen=True, slots=True)
class _Period:
    period_end: date
    months: int | None
    header: str


def _column_periods(
    texts: Sequence[str],
    context: Sequence[str],
    kind: StatementKind,
    period_end: date | None,
    annual: bool | None,
) -> list[_Period] | None:
    """Each value column's period, or None if any column names none.

    A column's own header gives its year, and its month, day and length where it
    states them; what it leaves out comes from the header's label cell and the lines
    above the table ("Year Ended June 30," over "2016 | 2015"). A year alone ends on the
    report's own period-end day; a flow statement with no stated length covers a year
    in an annual report.
    """
    periods: list[_Period] = []
    for text in texts:
        years = set(_YEAR.findall(text))
        if len(years) != 1:
            return None
        year = int(years.pop())
        month_day = _month_day(text) or next(
            (found for line in context if (found := _month_day(line)) is not None), None
        )
        if month_day is None:
            if period_end is None:
                return None
            month_day = (period_end.month, period_end.day)
        end = _safe_date(year, *month_day)
        months: int | None = None
        if kind != "balance":
            months = _months(text)
            if months is None:
                months = next(
                    (found for line in context if (found := _months(line)) is not None), None
                )
            if months is None and annual:
                months = 12
        header = " ".join(part for part in (*_header_context(context), text) if part)
        periods.append(_Period(end, months, header))
    return periods or None


def _header_context(context: Sequence[str]) -> list[str]:
    """The header's label cell when it dates the columns ("Year Ended June 30,")."""
    first = context[0] if context else ""
    if _month_day(first) or _months(first):
        return [_SCALE_NOTE.sub("", first).strip()]
    return []


def _month_day(text: str) -> tuple[int, int] | None:
    for match in _MONTH_DAY.finditer(text):
        month = _MONTHS[match.group(1).lower()]
        # "May" is also a word; a month name counts only beside a day or a year.
        if match.group(2) is not None:
            return month, int(match.group(2))
        after = text[match.end() :]
        if _YEAR.match(after.lstrip(", ")):
            return month, calendar.monthrange(2001, month)[1]
    return None


def _months(text: str) -> int | None:
    for pattern, months in _DURATIONS:
        if pattern.search(text):
            return months
    return None


def _scales(texts: Sequence[str]) -> tuple[Decimal, Decimal | None]:
    """The dollar scale and, when stated apart, the share scale: "(In millions, except
    number of shares, which are reflected in thousands, …)" → (10**6, 10**3)."""
    for text in texts:
        amounts: Decimal | None = None
        shares: Decimal | None = None
        lowered = text.lower()
        for match in _SCALE.finditer(text):
            before = lowered[: match.start()]
            exception = before.rfind("except")
            clause = re.split(r"[,;(]", before)[-1]
            scale = _SCALES[match.group(1).lower()]
            # "shares in Thousands, $ in Millions" (an XBRL viewer's note) or "except
            # number of shares, which are reflected in thousands".
            if "share" in clause or (exception >= 0 and "share" in before[exception:]):
                shares = scale
            elif amounts is None:
                amounts = scale
        if amounts is not None:
            return amounts, shares
    return Decimal(1), None


@dataclass(frozen=True, slots=True)
class _Row:
    label: str
    values: tuple[Decimal | None, ...]
    page: int | None


def _body_rows(table: _Table, columns: int, page: int | None) -> list[_Row]:
    rows: list[_Row] = []
    for cells in table.body:
        values = tuple(_decimal(cell) for cell in cells[1 : columns + 1])
        # A row with text that is no amount under the periods (a year line of another
        # sub-table, a percentage) is no statement line.
        if any(
            value is None and cell
            for value, cell in zip(values, cells[1 : columns + 1], strict=True)
        ):
            continue
        rows.append(_Row(cells[0], values, page))
    return rows


def _is_header_row(cells: Sequence[str]) -> bool:
    """A body row that continues the column header: years or dates, no amounts."""
    values = [cell for cell in cells[1:] if cell]
    return bool(values) and all(
        _YEAR.search(cell) and (_decimal(cell) is None or _YEAR.fullmatch(cell.strip()))
        for cell in values
    )


# --- a statement being read -------------------------------------------------------------


@dataclass(slots=True)
class _Draft:
    kind: StatementKind
    title: str
    page: int | None
    table_number: int | None
    scale: Decimal
    share_scale: Decimal
    periods: list[_Period]
    rows: list[_Row] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)

    @classmethod
    def start(
        cls,
        kind: StatementKind,
        title: str,
        block: Block,
        table: _Table,
        heading: Sequence[str],
        period_end: date | None,
        annual: bool | None,
    ) -> _Draft | None:
        if table.width < 1:
            return None
        body = list(table.body)
        header_texts = list(table.header[1:])
        # Header lines the parser left in the body ("2017 2016 2015" under "December 31,").
        while body and _is_header_row(body[0]) and not all(map(_YEAR.search, header_texts)):
            header_texts = [
                f"{text} {cell}".strip()
                for text, cell in zip(header_texts, body[0][1:], strict=False)
            ]
            body = body[1:]
        label_only_top = []
        for cells in body:
            if any(cells[1:]):
                break
            label_only_top.append(cells[0])
        context = [table.header[0], *heading]
        periods = _column_periods(header_texts, context, kind, period_end, annual)
        if periods is None:
            return None
        scale, share_scale = _scales([table.header[0], *label_only_top, *heading])
        draft = cls(
            kind=kind,
            title=title,
            page=block.page,
            table_number=block.table_number,
            scale=scale,
            share_scale=share_scale or scale,
            periods=periods,
        )
        draft.extend(block, _body_rows(_Table(table.header, body), table.width, block.page))
        return draft

    def extend(self, block: Block, rows: Sequence[_Row]) -> None:
        """Add the rows of one of the statement's table blocks."""
        self.rows.extend(rows)
        if block.page is not None and block.page not in self.pages:
            self.pages.append(block.page)

    def has_required_rows(self) -> bool:
        labels = [
            tidy_label(row.label).lower()
            for row in self.rows
            if any(value is not None for value in row.values)
        ]
        if self.kind == "income":
            return any(_REVENUE.search(label) for label in labels) and any(
                _NET_INCOME.search(label) for label in labels
            )
        if self.kind == "balance":
            return any(_TOTAL_ASSETS.search(label) for label in labels) and any(
                _LIABILITIES_OR_EQUITY.search(label) for label in labels
            )
        every = [tidy_label(row.label).lower() for row in self.rows]
        return all(any(pattern.search(label) for label in every) for pattern in _ACTIVITIES)

    def finish(self, year_end: date | None) -> Statement:
        columns = tuple(
            StatementColumn(
                period_end=period.period_end,
                months=period.months,
                fiscal_year=fiscal_year_of(period.period_end, year_end),
                header=period.header,
            )
            for period in self.periods
        )
        return Statement(
            kind=self.kind,
            title=self.title,
            page=self.page,
            table_number=self.table_number,
            scale=float(self.scale),
            columns=columns,
            items=tuple(self._items()),
            share_scale=float(self.share_scale),
            pages=tuple(self.pages),
        )

    def _items(self) -> Iterator[LineItem]:
        sections: list[str] = []
        for row in self.rows:
            label = tidy_label(row.label)
            if all(value is None for value in row.values):
                if label:
                    sections.append(label)
                continue
            section = sections[-1] if sections else None
            # The label as written: a unit note ("(in shares)") that tidying drops says it.
            per_share, share_count = self._share_kind(row.label, label, section)
            scale = Decimal(1) if per_share else self.share_scale if share_count else self.scale
            is_total = label.lower().startswith("total")
            yield LineItem(
                label=label,
                values=tuple(None if v is None else float(v * scale) for v in row.values),
                per_share=per_share,
                share_count=share_count,
                is_total=is_total,
                section=section,
                page=row.page,
            )
            if is_total:
                _close_section(sections, label)

    def _share_kind(self, written: str, label: str, section: str | None) -> tuple[bool, bool]:
        """(per share, share count) for an income statement row; neither elsewhere, where
        "shares" in a label describes an equity line in dollars."""
        if self.kind != "income":
            return False, False
        if _PER_SHARE.search(written) and not _SHARE_COUNT.search(written):
            return True, False
        if _SHARE_COUNT.search(written):
            return False, True
        if section and _BARE_SHARE_LABEL.fullmatch(label):
            if _SHARE_COUNT.search(section):
                return False, True
            if _PER_SHARE.search(section):
                return True, False
        return False, False


def _close_section(sections: list[str], total: str) -> None:
    """Drop the open section a total row ends ("Total current liabilities" ends
    "Current liabilities") and any opened inside it."""
    closed = _label_key(total).removeprefix("total").strip()
    for position in range(len(sections) - 1, -1, -1):
        name = _label_key(sections[position])
        if name and name in closed:
            del sections[position:]
            return


def _continuation(
    blocks: Sequence[Block], start: int, draft: _Draft
) -> tuple[int, Block, list[_Row]] | None:
    """The index after the table block continuing `draft` at or after `start` (past page
    furniture), that block and its rows; or None."""
    index = start
    while index < len(blocks) and blocks[index].kind == "text":
        for paragraph in _paragraphs(blocks[index].text):
            kind = _title_kind(paragraph)
            if kind is not None and kind != draft.kind:
                return None
            if (
                len(paragraph) > MAX_FURNITURE_CHARS
                or _names_other_statement(paragraph)
                or _SECTION_HEADING.match(paragraph)
            ):
                return None
        index += 1
    if index == len(blocks):
        return None
    block = blocks[index]
    last_page = draft.pages[-1] if draft.pages else None
    if block.page is not None and last_page is not None and block.page - last_page > 1:
        return None
    table = _Table.parse(block.text)
    if table.width != len(draft.periods):
        return None
    own = _column_periods(table.header[1:], [table.header[0]], draft.kind, None, None)
    if own is None:
        # No header of its own: its first row is a statement line or a section label.
        body = [table.header, *table.body]
    elif [p.period_end for p in own] == [p.period_end for p in draft.periods]:
        body = table.body
    else:
        return None
    rows = _body_rows(_Table(table.header, body), table.width, block.page)
    return index + 1, block, rows
