"""HTML to blocks, made for EDGAR inline-XBRL filings and fine for plain HTML.

An EDGAR filing's primary document carries a hidden XBRL header (`<ix:header>` inside a
`display:none` div) that is machine data, not reading text: it is skipped, after its
`dei:` facts (form, fiscal year and period, period end, ticker, registrant) are read
for the document's metadata. Pages are where the filer marked them: a `page-break-
before/after` style, usually on an `<hr>`, ends a page.

Tables are laid out by column slots (a colspan is a wider span), so the cells EDGAR
splits one figure over ("$", "1,234", ")") and its empty spacer columns fold away; a
`<table>` that leaves fewer than two rows or two columns (a bullet, a signature box)
is read as prose.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

from lxml import etree

from services.ingest.block_building import (
    BlockCollector,
    Span,
    clean_cell,
    lay_out_table,
    looks_like_heading,
    merge_fragments,
    table_as_prose,
)
from services.ingest.document_model import ParsedDocument

_SKIPPED = frozenset({"head", "script", "style", "title", "noscript", "template", "ix:header"})
# Elements that end the paragraph before them and start a new one.
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "center", "dd", "div", "dl",
        "dt", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
        "header", "li", "main", "nav", "ol", "p", "pre", "section", "ul",
    }
)  # fmt: skip
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BOLD_TAGS = frozenset({"b", "strong"})
_CELL_TAGS = frozenset({"td", "th"})

_HIDDEN = re.compile(r"display\s*:\s*none", re.IGNORECASE)
_BOLD_STYLE = re.compile(r"font-weight\s*:\s*(?:bold|[6-9]00)", re.IGNORECASE)
_BREAK_BEFORE = re.compile(r"page-break-before\s*:\s*always|break-before\s*:\s*page", re.I)
_BREAK_AFTER = re.compile(r"page-break-after\s*:\s*always|break-after\s*:\s*page", re.I)
_SOURCE_WHITESPACE = re.compile(r"[ \t\r\n\f]+")
_SPACES = re.compile(r"[^\S\n]+")
_NEWLINES = re.compile(r"\s*\n\s*")
_QUARTER = re.compile(r"Q([1-4])")
_DATE_FORMATS = ("%B %d, %Y", "%b %d, %Y", "%b. %d, %Y", "%Y-%m-%d", "%m/%d/%Y")


def read_html(path: Path) -> ParsedDocument:
    """Parse an HTML file; lxml's errors propagate as raised."""
    return parse_html_bytes(path.read_bytes(), name=path.name)


def parse_html_bytes(data: bytes, *, name: str) -> ParsedDocument:
    parser = etree.HTMLParser(
        remove_comments=True, remove_pis=True, huge_tree=True, encoding=_encoding(data)
    )
    root = etree.fromstring(data, parser)
    if root is None:
        raise ValueError("the file holds no HTML")
    document = ParsedDocument(title=name, doc_type="html")
    _apply_dei_facts(document, _dei_facts(root))
    title = root.find(".//title")
    title_text = clean_cell("".join(title.itertext())) if title is not None else ""
    if document.company and document.form:
        period = (
            f" for the period ended {document.period_end.isoformat()}"
            if document.period_end
            else ""
        )
        document.title = f"{document.company} {document.form}{period}"
    elif title_text:
        document.title = title_text
    walker = _Walker()
    body = root.find("body")
    walker.visit(body if body is not None else root, bold=False)
    walker.end_paragraph()
    document.blocks = walker.collector.finish()
    document.page_count = walker.page if walker.page_has_content else max(1, walker.page - 1)
    document.nonempty_page_count = walker.collector.pages_with_blocks()
    return document


def _encoding(data: bytes) -> str | None:
    """UTF-8 when the bytes decode as such: libxml2 would otherwise guess Latin-1 for a
    file without a charset and garble every curly quote."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "utf-8"


@dataclass(slots=True)
class _Walker:
    """Walks the body in document order, gathering inline text into paragraphs."""

    collector: BlockCollector = field(default_factory=BlockCollector)
    page: int = 1
    page_has_content: bool = False
    # Text of the paragraph being read, each piece with whether it is bold.
    pieces: list[tuple[str, bool]] = field(default_factory=list)

    def visit(self, element: etree._Element, *, bold: bool) -> None:
        for child in element:
            self._visit_child(child, bold=bold)

    def _visit_child(self, element: etree._Element, *, bold: bool) -> None:
        tag = element.tag if isinstance(element.tag, str) else ""
        tag = tag.lower()
        style = element.get("style") or ""
        if not tag or tag in _SKIPPED or _HIDDEN.search(style):
            self._text(element.tail, bold=bold)
            return
        if _BREAK_BEFORE.search(style):
            self.page_break()
        inner_bold = (
            bold or tag in _BOLD_TAGS or tag in _HEADING_TAGS or bool(_BOLD_STYLE.search(style))
        )
        if tag == "table":
            self.end_paragraph()
            self._table(element)
        elif tag == "br":
            self.pieces.append(("\n", bold))
        elif tag == "hr":
            self.end_paragraph()
        else:
            block = tag in _BLOCKS
            if block:
                self.end_paragraph()
            self._text(element.text, bold=inner_bold)
            self.visit(element, bold=inner_bold)
            if block:
                self.end_paragraph()
        if _BREAK_AFTER.search(style):
            self.page_break()
        self._text(element.tail, bold=bold)

    def _text(self, text: str | None, *, bold: bool) -> None:
        # Line breaks in the source are spaces, as a browser shows them; only <br> breaks.
        if text:
            self.pieces.append((_SOURCE_WHITESPACE.sub(" ", text), bold))

    def page_break(self) -> None:
        self.end_paragraph()
        # Two markers in a row (a break after one element and before the next) make one
        # break, and breaks before any text do not move the first page.
        if self.page_has_content:
            self.page += 1
            self.page_has_content = False

    def end_paragraph(self) -> None:
        raw = "".join(text for text, _ in self.pieces).replace("\xa0", " ")
        text = _NEWLINES.sub("\n", _SPACES.sub(" ", raw)).strip()
        all_bold = all(is_bold for piece, is_bold in self.pieces if piece.strip())
        self.pieces = []
        if not text:
            return
        heading = looks_like_heading(text.replace("\n", " "), standalone=True, bold=all_bold)
        self.collector.paragraph(text, self.page, heading=heading)
        self.page_has_content = True

    def _table(self, table: etree._Element) -> None:
        rows = [merge_fragments(_row_spans(row)) for row in _rows(table)]
        rows = [row for row in rows if row]
        if not rows:
            return
        cells, header_rows = lay_out_table(rows)
        if self.collector.table(cells, self.page, header_rows=header_rows):
            self.page_has_content = True
            return
        prose = table_as_prose([span.text for span in row] for row in rows)
        if prose:
            self.collector.paragraph(prose, self.page)
            self.page_has_content = True


def _rows(table: etree._Element) -> Iterator[etree._Element]:
    """The table's own rows (those of a table nested in a cell stay with that cell)."""
    for child in table:
        tag = child.tag.lower() if isinstance(child.tag, str) else ""
        if tag == "tr":
            yield child
        elif tag in ("thead", "tbody", "tfoot"):
            yield from (row for row in child if isinstance(row.tag, str) and row.tag == "tr")


def _row_spans(row: etree._Element) -> list[Span]:
    spans: list[Span] = []
    slot = 0
    for cell in row:
        if not isinstance(cell.tag, str) or cell.tag.lower() not in _CELL_TAGS:
            continue
        width = _colspan(cell)
        if not _HIDDEN.search(cell.get("style") or ""):
            text = clean_cell("".join(_visible_text(cell)))
            if text:
                spans.append(Span(slot, slot + width, text))
        slot += width
    return spans


def _colspan(cell: etree._Element) -> int:
    try:
        return max(1, int(cell.get("colspan") or 1))
    except ValueError:
        return 1


def _visible_text(element: etree._Element) -> Iterator[str]:
    if element.text:
        yield element.text
    for child in element:
        if isinstance(child.tag, str) and not _HIDDEN.search(child.get("style") or ""):
            if child.tag.lower() == "br":
                yield " "
            yield from _visible_text(child)
        if child.tail:
            yield child.tail


def _dei_facts(root: etree._Element) -> dict[str, str]:
    """The first value of each `dei:` fact, wherever it is tagged (header or cover page)."""
    facts: dict[str, str] = {}
    for element in root.iter("ix:nonnumeric", "ix:nonfraction"):
        name = element.get("name") or ""
        if name.startswith("dei:"):
            key = name.removeprefix("dei:")
            value = clean_cell("".join(element.itertext()))
            if value and key not in facts:
                facts[key] = value
    return facts


def _apply_dei_facts(document: ParsedDocument, facts: dict[str, str]) -> None:
    document.form = facts.get("DocumentType") or None
    document.symbol = facts.get("TradingSymbol") or None
    document.company = facts.get("EntityRegistrantName") or None
    year = facts.get("DocumentFiscalYearFocus", "")
    document.fiscal_year = int(year) if year.isdigit() else None
    quarter = _QUARTER.fullmatch(facts.get("DocumentFiscalPeriodFocus", ""))
    document.fiscal_quarter = int(quarter.group(1)) if quarter else None
    document.period_end = _parse_date(facts.get("DocumentPeriodEndDate", ""))


def _parse_date(text: str) -> date | None:
    for pattern in _DATE_FORMATS:
        try:
            return datetime.strptime(text, pattern).date()
        except ValueError:
            continue
    return None
