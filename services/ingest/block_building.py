"""Turning what a parser found (cells, paragraphs, headings) into a document's blocks.

Every parser (PDF, EDGAR HTML, DOCX, MD) ends up with the same two things: rows of
cells that may be a table, and paragraphs that may be headings. This module decides
what counts as a table, writes it as a numbered markdown block, and groups prose into
text blocks under the heading in effect.

Cells arrive as spans, `Span(start, end, text)`, in any horizontal unit: column slots
for HTML and ruled PDF tables (a colspan is a wider span), points for PDF tables laid
out with whitespace. Columns are then found from the spans themselves, narrowest
first, so a "$" cell, a spacer column or a header centred over three cells cannot
create a column of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from services.ingest.document_model import TABLE_END, TABLE_START, Block

MIN_TABLE_ROWS = 2
MIN_TABLE_COLUMNS = 2
MAX_HEADING_CHARS = 120
MAX_STANDALONE_HEADING_CHARS = 80

# One figure as filings print it: "1,234", "(334)", "$99,803", "4.5%", "—" (a nil),
# optionally starred. Years match too; header detection tells them apart.
_AMOUNT = re.compile(r"[($]{0,3}[-+−]?(?:\d[\d,]*(?:\.\d+)?|\.\d+|[—–-]{1,3})[)%]{0,3}\*?")
_YEAR = re.compile(r"(?:19|20)\d{2}")
_WHITESPACE = re.compile(r"\s+")
_PIPE = re.compile(r"(?<!\\)\|")
# "Item 7.", "ITEM 1A.", "PART II": how every SEC filing marks its sections.
_SEC_HEADING = re.compile(
    r"(?:PART\s+[IVX]+(?:\s*$|\s*[–—:.-])|ITEM\s+\d{1,2}[A-C]?\.|NOTE\s+\d{1,2}\s*[–—:.-])",
    re.IGNORECASE,
)
# A cover page's "Yes ☒ No ☐" is an answer, however bold.
_CHECKBOX = re.compile(r"[☐☑☒✓✔]")
_LOWERCASE = re.compile(r"[a-z]")
_LETTERS = re.compile(r"[A-Za-z]")

# Words that stay lowercase in a title-cased heading.
_MINOR_WORDS = frozenset(
    {
        "a", "an", "and", "as", "at", "but", "by", "for", "from", "in", "into", "nor", "of",
        "on", "or", "per", "the", "to", "vs", "with",
    }
)  # fmt: skip
# Filings split one printed figure over cells: "$" before it, ")" or "%" after it.
_PREFIX_FRAGMENTS = frozenset({"$", "(", "$(", "($"})
_SUFFIX_FRAGMENTS = frozenset({")", "%", ")%", "%)"})


@dataclass(frozen=True, slots=True)
class Span:
    """One non-empty cell: where it starts and ends across the row, and its text."""

    start: float
    end: float
    text: str


def clean_cell(value: str | None) -> str:
    """A cell's text on one line: whitespace collapsed, None read as empty."""
    if value is None:
        return ""
    return _WHITESPACE.sub(" ", value.replace("\u200b", "")).strip()


def is_amount(text: str) -> bool:
    """Whether `text` is one printed figure (spaces inside, as in "$ 1,234", allowed)."""
    return _AMOUNT.fullmatch(text.replace(" ", "")) is not None


def is_fragment(text: str) -> bool:
    return text in _PREFIX_FRAGMENTS or text in _SUFFIX_FRAGMENTS


def count_amounts(text: str) -> int:
    return sum(1 for token in text.split() if _AMOUNT.fullmatch(token) and not is_fragment(token))


def merge_fragments(spans: Iterable[Span]) -> list[Span]:
    """Fold "$" into the figure after it and ")" or "%" into the one before it."""
    merged: list[Span] = []
    prefix: Span | None = None
    for span in spans:
        if not span.text:
            continue
        if span.text in _PREFIX_FRAGMENTS:
            prefix = (
                span if prefix is None else Span(prefix.start, span.end, prefix.text + span.text)
            )
            continue
        if span.text in _SUFFIX_FRAGMENTS and merged and prefix is None:
            last = merged[-1]
            merged[-1] = Span(last.start, span.end, last.text + span.text)
            continue
        if prefix is not None:
            span = Span(prefix.start, span.end, prefix.text + span.text)
            prefix = None
        merged.append(span)
    if prefix is not None:
        merged.append(prefix)
    return merged


def _overlaps(a_start: float, a_end: float, b_start: float, b_end: float) -> bool:
    return a_start < b_end and b_start < a_end


def find_columns(rows: Sequence[Sequence[Span]]) -> list[tuple[float, float]]:
    """Columns as extents: one per group of overlapping spans, left to right.

    Rows holding a figure (a year alone does not count) found the columns, narrowest
    span first. Two figures that overlap are in one column, whatever else they overlap,
    so a "(334)" hanging past its neighbours joins them; a text span over two columns
    already found spans them and founds nothing. Rows without figures (headers) found
    nothing either, unless no row has a figure.
    """
    defining = [any(is_figure(span.text) for span in row) for row in rows]
    if not any(defining):
        defining = [True] * len(rows)
    groups: list[list[float]] = []
    order = sorted(
        (span for row, found in zip(rows, defining, strict=True) if found for span in row),
        key=lambda span: span.end - span.start,
    )
    for span in order:
        hits = [g for g in groups if _overlaps(g[0], g[1], span.start, span.end)]
        if len(hits) > 1 and not is_figure(span.text):
            continue
        if not hits:
            groups.append([span.start, span.end])
            continue
        keep = hits[0]
        keep[0] = min(span.start, *(g[0] for g in hits))
        keep[1] = max(span.end, *(g[1] for g in hits))
        groups = [g for g in groups if g is keep or all(g is not hit for hit in hits)]
    return sorted((start, end) for start, end in groups)


def count_header_rows(
    rows: Sequence[Sequence[Span]], columns: Sequence[tuple[float, float]]
) -> int:
    """Leading rows without figures, each after the first with nothing in the label column.

    At least 1: the first row heads the markdown table whatever it holds.
    """
    count = 0
    for index, row in enumerate(rows):
        if not row or any(is_figure(span.text) for span in row):
            break
        if index and columns and any(_column_of(span, columns) == 0 for span in row):
            break
        count += 1
    return max(1, min(count, len(rows) - 1))


def place_cells(
    rows: Sequence[Sequence[Span]],
    columns: Sequence[tuple[float, float]],
    *,
    header_rows: int = 1,
) -> list[list[str]]:
    """Rows of cell texts: each span in the column it overlaps (or the nearest).

    A header span over several columns labels each of them ("Three Months Ended" over
    two quarters), unless it is a parenthesised note such as "(In millions)"; any other
    span over several columns goes into the first.
    """
    table: list[list[str]] = []
    for index, row in enumerate(rows):
        cells = [""] * len(columns)
        for span in row:
            hits = [
                i
                for i, (start, end) in enumerate(columns)
                if _overlaps(start, end, span.start, span.end)
            ]
            if not hits:
                nearest = _column_of(span, columns)
                hits = [] if nearest is None else [nearest]
            if index >= header_rows:
                hits = hits[:1]
            elif len(hits) > 1 and span.text.startswith("("):
                # "($ in millions)" over every column says how to read the table, not
                # what each column is: it belongs with the row labels.
                hits = [0]
            for target in hits:
                cells[target] = f"{cells[target]} {span.text}".strip()
        table.append(cells)
    return table


def lay_out_table(rows: Sequence[Sequence[Span]]) -> tuple[list[list[str]], int]:
    """Cell texts in columns found from the spans, and how many rows are headers."""
    columns = find_columns(rows)
    header_rows = count_header_rows(rows, columns)
    return place_cells(rows, columns, header_rows=header_rows), header_rows


def _column_of(span: Span, columns: Sequence[tuple[float, float]]) -> int | None:
    if not columns:
        return None
    for index, (start, end) in enumerate(columns):
        if _overlaps(start, end, span.start, span.end):
            return index
    centre = (span.start + span.end) / 2
    return min(range(len(columns)), key=lambda i: abs(sum(columns[i]) / 2 - centre))


def is_figure(text: str) -> bool:
    """A printed figure that is not a bare year (a header) nor a lone "$" or ")"."""
    return is_amount(text) and not is_fragment(text) and _YEAR.fullmatch(text) is None


def tidy_table(
    rows: Iterable[Sequence[str | None]], *, header_rows: int = 1
) -> list[list[str]] | None:
    """Clean cells, fold the header rows into one, drop empty rows and columns, pad short
    rows; None if what is left is no table.

    A table has at least two rows and two columns left after that; anything smaller
    (a one-row layout table, a bullet in a cell) is prose that happens to sit in cells.
    """
    cleaned = [[clean_cell(cell) for cell in row] for row in rows]
    if header_rows > 1:
        cleaned = merge_header_rows(cleaned, header_rows)
    cleaned = [row for row in cleaned if any(row)]
    if not cleaned:
        return None
    width = max(len(row) for row in cleaned)
    padded = [row + [""] * (width - len(row)) for row in cleaned]
    keep = [i for i in range(width) if any(row[i] for row in padded)]
    table = [[row[i] for i in keep] for row in padded]
    if len(table) < MIN_TABLE_ROWS or len(keep) < MIN_TABLE_COLUMNS:
        return None
    return table


def merge_header_rows(rows: list[list[str]], count: int) -> list[list[str]]:
    """The first `count` rows as one, each column's texts joined top to bottom
    ("Year ended" / "June 30," / "2019" → "Year ended June 30, 2019")."""
    width = max(len(row) for row in rows[:count])
    merged = [""] * width
    for row in rows[:count]:
        for index, cell in enumerate(row):
            if cell:
                merged[index] = f"{merged[index]} {cell}".strip()
    return [merged, *rows[count:]]


def render_table(rows: Sequence[Sequence[str]], number: int) -> str:
    """`[TABLE n]`, a markdown table with the first row as its header, `[END TABLE]`."""
    header, *body = rows
    lines = [TABLE_START.format(number=number), _markdown_row(header)]
    lines.append("|" + " --- |" * len(header))
    lines.extend(_markdown_row(row) for row in body)
    lines.append(TABLE_END)
    return "\n".join(lines)


def _markdown_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(_PIPE.sub(r"\\|", cell) for cell in cells) + " |"


def table_as_prose(rows: Iterable[Sequence[str | None]]) -> str:
    """The text of cells that did not make a table, one line per row."""
    lines = (" ".join(clean_cell(cell) for cell in row if clean_cell(cell)) for row in rows)
    return "\n".join(line for line in lines if line)


def looks_like_heading(line: str, *, standalone: bool = False, bold: bool = False) -> bool:
    """Whether a line reads as a heading.

    Any line: an SEC section line ("Item 7. …", "PART II", "Note 4 – …") or a short line
    in capitals. A line standing alone as a paragraph: also a short bold or title-cased
    line that does not end like a sentence or a page footer ("… | 18").
    """
    if not line or len(line) > MAX_HEADING_CHARS or _CHECKBOX.search(line):
        return False
    if _SEC_HEADING.match(line):
        return True
    if len(_LETTERS.findall(line)) >= 4 and not _LOWERCASE.search(line):
        return True
    if not standalone or len(line) > MAX_STANDALONE_HEADING_CHARS:
        return False
    if line[-1] in ".,;:" or line[-1].isdigit() or not line[0].isupper():
        return False
    if bold:
        return True
    words = [word for word in line.split() if _LETTERS.search(word)]
    major = [word for word in words if word.lower() not in _MINOR_WORDS]
    return bool(major) and all(word[0].isupper() or not word[0].isalpha() for word in major)


@dataclass(slots=True)
class BlockCollector:
    """Blocks in reading order: tables numbered from 1, prose grouped under headings.

    Paragraphs gather into one text block until a heading, a table or a new page ends
    it; the heading's own line opens the next block, so the chunker sees it too.
    """

    blocks: list[Block] = field(default_factory=list)
    heading: str | None = None
    tables: int = 0
    _paragraphs: list[str] = field(default_factory=list)
    _page: int | None = None

    def paragraph(
        self, text: str, page: int | None, *, heading: bool = False, name: str | None = None
    ) -> None:
        """Add a paragraph; a heading one (named `name`, else by its text) opens a block."""
        text = text.strip()
        if not text:
            return
        if heading or page != self._page:
            self.flush()
        if heading:
            self.heading = clean_cell(name or text)
        self._page = page
        self._paragraphs.append(text)

    def table(
        self, rows: Sequence[Sequence[str | None]], page: int | None, *, header_rows: int = 1
    ) -> bool:
        """Add `rows` as the next numbered table, or say False when they are no table."""
        table = tidy_table(rows, header_rows=header_rows)
        if table is None:
            return False
        self.flush()
        self.tables += 1
        self.blocks.append(
            Block(
                kind="table",
                text=render_table(table, self.tables),
                page=page,
                table_number=self.tables,
                heading=self.heading,
            )
        )
        return True

    def flush(self) -> None:
        if self._paragraphs:
            self.blocks.append(
                Block(
                    kind="text",
                    text="\n\n".join(self._paragraphs),
                    page=self._page,
                    heading=self.heading,
                )
            )
            self._paragraphs = []

    def finish(self) -> list[Block]:
        self.flush()
        return self.blocks

    def pages_with_blocks(self) -> int:
        return len({block.page for block in self.blocks if block.page is not None})
