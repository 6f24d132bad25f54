"""PDF pages to blocks: tables as markdown, the rest as prose around them.

Pages are read by PDFium (`pdfium_pages`), and their characters grouped into words and
their rules into ruled tables by pdfplumber's own code.

Tables are found two ways, because filings draw them two ways:

- Aligned tables. 10-K statements are laid out with whitespace: a label at the left,
  figures in right-aligned columns, shading or a few rules that do not separate the
  columns. pdfplumber's "lines" strategy then finds one-column tables (or none), and its
  "text" strategy cuts labels at every word edge it can align ("Total net | s | ales").
  So a page's words are grouped into lines, a line ending in figures after a wide gap
  is a table row, and consecutive rows (with the label-only lines and header lines
  around them) make one table whose columns are the figures' own x-extents.
- Ruled tables. `page.find_tables()` with its default "lines" strategy, kept only where
  no aligned table was found and where no cell holds several figures at once (the sign
  of rules that bound rows but not columns).

Text is read only from words outside every kept table's box, so no figure of a table
is repeated as loose text, and it is split at the tables' tops so that prose and tables
stay in page order.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.ingest.block_building import (
    BlockCollector,
    Span,
    clean_cell,
    count_amounts,
    find_columns,
    is_amount,
    is_figure,
    is_fragment,
    lay_out_table,
    looks_like_heading,
    merge_fragments,
    place_cells,
)
from services.ingest.document_model import ParsedDocument
from services.ingest.pdfium_pages import PdfiumDocument, PdfiumPage

# A word sharing this much of its height with a line is on it; superscript footnote
# marks and figures set slightly lower than their label still are.
LINE_OVERLAP = 0.5
# A gap wider than this many text heights separates cells; the widest space a justified
# line stretches to stays below it, the gap before a figure column does not.
CELL_GAP = 0.8
# Rows of one table are at most this many text heights apart (blank spacer rows allowed).
ROW_GAP = 3.0
# A gap this many text heights tall between two lines of prose starts a new paragraph.
PARAGRAPH_GAP = 0.7
# Column headers wrap: "Approximate Dollar Value of Shares That May Yet Be …".
MAX_HEADER_LINES = 8
MIN_TABLE_ROWS = 2
# A header cell whose centre is this share of the figure area's width from the area's
# centre stands over all the figure columns.
CENTRE_SLACK = 0.03
# A column header centred over its figures may start this many text heights left of them.
HEADER_OVERHANG = 4.0
# Points of slack when comparing a line's extent with a table's label and figure areas.
EDGE_SLACK = 2.0

_YEAR = re.compile(r"(?:19|20)\d{2}")
_DASH = re.compile(r"[—–-]")
_FORM = re.compile(r"\b(10-K|10-Q|8-K|20-F|40-F|S-1)(/A)?\b")


@dataclass(frozen=True, slots=True)
class _Word:
    text: str
    x0: float
    x1: float
    top: float
    bottom: float


@dataclass(frozen=True, slots=True)
class _Group:
    """Words of a line with no wide gap between them: one cell, or one line of prose."""

    text: str
    x0: float
    x1: float
    words: tuple[_Word, ...]


@dataclass(slots=True)
class _Line:
    words: list[_Word]
    groups: list[_Group] = field(default_factory=list)
    # Groups left of the trailing figures; all of them when the line ends in none.
    label: list[_Group] = field(default_factory=list)
    figures: list[_Group] = field(default_factory=list)

    # The figures as cell pieces, "$" and ")" already folded in.
    figure_spans: list[Span] = field(default_factory=list)

    @property
    def top(self) -> float:
        return min(word.top for word in self.words)

    @property
    def bottom(self) -> float:
        return max(word.bottom for word in self.words)

    @property
    def text(self) -> str:
        return " ".join(word.text for word in self.words)


@dataclass(frozen=True, slots=True)
class _PageTable:
    bbox: tuple[float, float, float, float]  # x0, top, x1, bottom
    rows: list[list[str]]
    header_rows: int


@dataclass(slots=True)
class _Region:
    """Lines of one aligned table being gathered top to bottom."""

    first: int  # index of its first line among the page's lines
    lines: list[_Line]
    data_rows: int
    figures_left: float
    height: float

    def add_data_row(self, line: _Line) -> None:
        self.lines.append(line)
        self.data_rows += 1
        self.figures_left = min(self.figures_left, line.figures[0].x0)

    def crosses(self, group: _Group) -> bool:
        """Text running from the labels into the figures: prose or a title, not the table."""
        return (
            group.x0 < self.figures_left - HEADER_OVERHANG * self.height
            and group.x1 > self.figures_left + EDGE_SLACK
        )

    def heads(self, group: _Group) -> bool:
        """Text over the figure columns, above the rows: a column header."""
        return group.x1 > self.figures_left + EDGE_SLACK and not self.crosses(group)


def read_pdf(path: Path) -> ParsedDocument:
    """Parse a PDF; library errors (a corrupt or encrypted file) propagate as raised."""
    document = ParsedDocument(title=path.name, doc_type="pdf")
    collector = BlockCollector()
    with PdfiumDocument(path) as pdf:
        subject = str(pdf.metadata.get("Subject") or "")
        form = _FORM.search(subject)
        if form:
            document.form = form.group(0)
        nonempty = 0
        for page in pdf.pages:
            if _read_page(page, collector):
                nonempty += 1
        document.page_count = len(pdf)
    document.nonempty_page_count = nonempty
    document.blocks = collector.finish()
    return document


def _read_page(page: PdfiumPage, collector: BlockCollector) -> bool:
    words = [
        _Word(str(w["text"]), float(w["x0"]), float(w["x1"]), float(w["top"]), float(w["bottom"]))
        for w in page.extract_words(x_tolerance=3, y_tolerance=3, keep_blank_chars=False)
    ]
    if not words:
        return False
    lines = _lines(words)
    height = _text_height(words)
    tables = _aligned_tables(lines, height)
    tables.extend(_ruled_tables(page, [table.bbox for table in tables]))
    tables.sort(key=lambda table: table.bbox[1])
    loose = [word for word in words if not any(_inside(word, table.bbox) for table in tables)]
    loose_lines = _lines(loose)
    number = page.page_number
    position = 0
    for table in tables:
        above = [line for line in loose_lines[position:] if line.top < table.bbox[1]]
        _add_prose(above, height, number, collector)
        position += len(above)
        collector.table(table.rows, number, header_rows=table.header_rows)
    _add_prose(loose_lines[position:], height, number, collector)
    return True


def _text_height(words: Sequence[_Word]) -> float:
    return statistics.median(word.bottom - word.top for word in words) or 1.0


def _inside(word: _Word, bbox: tuple[float, float, float, float]) -> bool:
    x = (word.x0 + word.x1) / 2
    y = (word.top + word.bottom) / 2
    return bbox[0] <= x <= bbox[2] and bbox[1] <= y <= bbox[3]


def _lines(words: Sequence[_Word]) -> list[_Line]:
    """Words in lines, top to bottom: a word joins a line it half overlaps vertically, so
    a figure set a few points lower than its label still shares the label's row."""
    lines: list[_Line] = []
    top = bottom = 0.0
    for word in sorted(words, key=lambda w: (w.top, w.x0)):
        overlap = min(bottom, word.bottom) - max(top, word.top)
        shortest = min(bottom - top, word.bottom - word.top)
        if lines and overlap >= LINE_OVERLAP * shortest:
            lines[-1].words.append(word)
        else:
            lines.append(_Line([word]))
            top, bottom = word.top, word.bottom
    for line in lines:
        line.words.sort(key=lambda w: w.x0)
        _split_line(line)
    return lines


def _split_line(line: _Line) -> None:
    """Cut a line into groups at wide gaps, and its trailing figures from its label."""
    height = statistics.median(word.bottom - word.top for word in line.words)
    groups: list[list[_Word]] = [[line.words[0]]]
    for word in line.words[1:]:
        if word.x0 - groups[-1][-1].x1 > CELL_GAP * height:
            groups.append([word])
        else:
            groups[-1].append(word)
    line.groups = [
        _Group(" ".join(w.text for w in group), group[0].x0, max(w.x1 for w in group), tuple(group))
        for group in groups
    ]
    start = len(line.groups)
    while start > 0 and _is_figure_group(line.groups[start - 1].text):
        start -= 1
    # A row labelled by a year alone ("2016  $2,500", a maturity table) has no other label.
    if start == 0 and len(line.groups) > 1 and _YEAR.fullmatch(line.groups[0].text):
        start = 1
    figures = line.groups[start:]
    # A line of years alone ("2022 2021 2020") heads a table rather than being a row.
    if any(is_figure(token) for group in figures for token in group.text.split()):
        line.label, line.figures = line.groups[:start], figures
        line.figure_spans = merge_fragments(
            piece for group in figures for piece in _figure_pieces(group)
        )
    else:
        line.label, line.figures = line.groups, []


def _figure_pieces(group: _Group) -> list[Span]:
    """A run of figures as cell pieces: word by word ("8 % $" is parts of two cells),
    except a range ("0.48% – 0.63%", "2022 – 2061"), which is one cell."""
    tokens = group.text.split()
    is_range = any(
        _DASH.fullmatch(token) and 0 < i < len(tokens) - 1 and not _DASH.fullmatch(tokens[i + 1])
        for i, token in enumerate(tokens)
    )
    if is_range:
        return [Span(group.x0, group.x1, group.text)]
    return [Span(word.x0, word.x1, word.text) for word in group.words]


def _is_figure_group(text: str) -> bool:
    return all(is_amount(token) or is_fragment(token) for token in text.split())


def _aligned_tables(lines: Sequence[_Line], height: float) -> list[_PageTable]:
    tables: list[_PageTable] = []
    region: _Region | None = None
    pending: list[_Line] = []
    taken = 0  # lines before this index belong to an earlier table
    for index, line in enumerate(lines):
        if region is not None:
            last = pending[-1] if pending else region.lines[-1]
            crosses = any(region.crosses(group) for group in line.groups)
            if line.top - last.bottom > ROW_GAP * height or (not line.figures and crosses):
                table = _close(region, lines, taken, height)
                if table is not None:
                    tables.append(table)
                    taken = index - len(pending)
                region, pending = None, []
        if not line.figures:
            if region is not None:
                pending.append(line)
            continue
        if region is None:
            region = _Region(index, [], 0, line.figures[0].x0, height)
        else:
            region.lines.extend(pending)
            pending = []
        region.add_data_row(line)
    if region is not None:
        table = _close(region, lines, taken, height)
        if table is not None:
            tables.append(table)
    return tables


def _close(region: _Region, lines: Sequence[_Line], taken: int, height: float) -> _PageTable | None:
    """The table of a finished region, with the header lines just above it."""
    # A lone figure without a label ending a region is a page number, not a row.
    while region.lines and (not region.lines[-1].figures or _is_page_number(region.lines[-1])):
        if region.lines.pop().figures:
            region.data_rows -= 1
    if region.data_rows < MIN_TABLE_ROWS:
        return None
    above: list[_Line] = []
    for line in reversed(lines[taken : region.first]):
        below = above[0] if above else region.lines[0]
        if len(above) == MAX_HEADER_LINES or below.top - line.bottom > ROW_GAP * height:
            break
        if any(region.crosses(group) for group in line.groups):
            break
        above.insert(0, line)
    # Label-only lines ("Net sales:") just above the rows belong to the table only
    # under a header line; without one they are as likely the end of a paragraph.
    while above and not any(region.heads(group) for group in above[0].groups):
        above.pop(0)
    spans: list[list[Span]] = []
    labels: list[str] = []
    for line in above:
        labels.append(" ".join(g.text for g in line.groups if not region.heads(g)))
        spans.append([Span(g.x0, g.x1, g.text) for g in line.groups if region.heads(g)])
    for line in region.lines:
        label = " ".join(group.text for group in line.label)
        # A label too long for its column wraps, its last line carrying the figures; a
        # label set apart from its figures leaves them a line of their own.
        if line.figures and labels and not spans[-1] and (not label or label[:1].islower()):
            label = f"{labels.pop()} {label}"
            spans.pop()
        labels.append(label)
        spans.append(line.figure_spans)
    columns = find_columns(spans)
    header_rows = max(
        (i + 1 for i, line in enumerate(above) if any(region.heads(g) for g in line.groups)),
        default=0,
    )
    if len(columns) > 1:
        spans[:header_rows] = [_widen_centred(row, columns) for row in spans[:header_rows]]
    cells = place_cells(spans, columns, header_rows=header_rows)
    rows = [[label, *row] for label, row in zip(labels, cells, strict=True)]
    every = [*above, *region.lines]
    bbox = (
        min(word.x0 for line in every for word in line.words),
        every[0].top,
        max(word.x1 for line in every for word in line.words),
        region.lines[-1].bottom,
    )
    return _PageTable(bbox, rows, max(header_rows, 1))


def _is_page_number(line: _Line) -> bool:
    return not line.label and len(line.figures) == 1 and len(line.figure_spans) == 1


def _widen_centred(row: list[Span], columns: Sequence[tuple[float, float]]) -> list[Span]:
    """A header line's lone cell centred over all figure columns ("Years ended") spans
    them all, as its HTML colspan would say."""
    if len(row) != 1:
        return row
    left, right = columns[0][0], columns[-1][1]
    span = row[0]
    centre = (span.start + span.end) / 2
    if abs(centre - (left + right) / 2) > CENTRE_SLACK * (right - left):
        return row
    return [Span(left, right, span.text)]


def _ruled_tables(
    page: PdfiumPage, taken: Sequence[tuple[float, float, float, float]]
) -> list[_PageTable]:
    tables: list[_PageTable] = []
    for found in page.find_tables():
        x0, top, x1, bottom = (float(v) for v in found.bbox)
        bbox = (x0, top, x1, bottom)
        if any(_boxes_overlap(bbox, other) for other in taken):
            continue
        raw: list[list[Any]] = found.extract()
        if any(count_amounts(clean_cell(cell)) > 1 for row in raw for cell in row):
            continue
        rows, header_rows = lay_out_table([merge_fragments(_slot_spans(row)) for row in raw])
        tables.append(_PageTable(bbox, rows, header_rows))
    return tables


def _slot_spans(row: Sequence[str | None]) -> list[Span]:
    """Cells as column-slot spans; pdfplumber's None is a slot merged into the cell before."""
    spans: list[Span] = []
    for slot, cell in enumerate(row):
        if cell is None and spans:
            spans[-1] = Span(spans[-1].start, slot + 1, spans[-1].text)
        else:
            spans.append(Span(slot, slot + 1, clean_cell(cell)))
    return [span for span in spans if span.text]


def _boxes_overlap(a: Sequence[float], b: Sequence[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _add_prose(lines: Sequence[_Line], height: float, page: int, collector: BlockCollector) -> None:
    """Lines as paragraphs: a taller gap or a heading line ends one; a heading stands alone."""
    paragraphs: list[list[str]] = []
    previous_bottom: float | None = None
    previous_heading = False
    for line in lines:
        text = clean_cell(line.text)
        heading = looks_like_heading(text)
        gap = previous_bottom is not None and line.top - previous_bottom > PARAGRAPH_GAP * height
        if not paragraphs or heading or previous_heading or gap:
            paragraphs.append([])
        paragraphs[-1].append(text)
        previous_bottom = line.bottom
        previous_heading = heading
    for paragraph in paragraphs:
        text = _join_lines(paragraph)
        standalone = len(paragraph) == 1
        collector.paragraph(text, page, heading=looks_like_heading(text, standalone=standalone))


def _join_lines(lines: Sequence[str]) -> str:
    """Wrapped lines back into one paragraph, re-joining words hyphenated at a line end."""
    text = lines[0]
    for line in lines[1:]:
        if text.endswith("-") and line[:1].islower():
            text += line
        else:
            text = f"{text} {line}"
    return text
