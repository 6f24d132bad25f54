"""Document parsers: tables come out as one numbered markdown block, never also as loose
text; EDGAR's hidden XBRL header and split cells are handled; every format reaches the
same block model, and a bad file is a typed error."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import date
from pathlib import Path

import docx
import pytest

from services.ingest.document_model import Block, ParsedDocument
from services.ingest.document_parsing import (
    DocumentParseError,
    UnsupportedDocument,
    parse_document,
    parse_pdf,
)
from tests.helpers import require_shared_data

APPLE_FY2022_10K_PDF = ("filings", "AAPL", "APPLE_2022_10K.pdf")
APPLE_FY2024_10K_HTML = ("filings", "AAPL", "aapl-10-k-2024-11-01.html")


def _tables(document: ParsedDocument) -> list[Block]:
    return [block for block in document.blocks if block.kind == "table"]


def _texts(document: ParsedDocument, page: int | None = None) -> list[Block]:
    return [
        block
        for block in document.blocks
        if block.kind == "text" and (page is None or block.page == page)
    ]


# A minimal PDF writer: base-14 Helvetica needs no embedded font, and pdfminer knows its
# widths, so text lands where a real typesetter would put it.


def _pdf_text(x: float, y: float, text: str, size: int = 10) -> str:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return f"BT /F1 {size} Tf {x} {y} Td ({escaped}) Tj ET"


def _pdf_line(x0: float, y0: float, x1: float, y1: float) -> str:
    return f"0.8 w {x0} {y0} m {x1} {y1} l S"


def _pdf_bytes(pages: Sequence[Sequence[str]]) -> bytes:
    count = len(pages)
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids ["
        + " ".join(f"{4 + 2 * i} 0 R" for i in range(count))
        + f"] /Count {count} >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for index, operations in enumerate(pages):
        stream = "\n".join(operations)
        objects.append(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * index} 0 R >>"
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


def _ruled_grid_page() -> list[str]:
    """A heading, a sentence, and a table of words drawn as a full grid of lines."""
    operations = [
        _pdf_text(72, 740, "TEAM OVERVIEW", size=12),
        _pdf_text(72, 715, "Each product line has one lead and a current outlook."),
    ]
    xs, ys = [72, 192, 312, 432], [690, 670, 650, 630]
    operations += [_pdf_line(x, ys[0], x, ys[-1]) for x in xs]
    operations += [_pdf_line(xs[0], y, xs[-1], y) for y in ys]
    rows = [
        ("Segment", "Lead", "Outlook"),
        ("Cloud", "Dana Ortiz", "Growing"),
        ("Devices", "Lee Park", "Steady"),
    ]
    for row, y in zip(rows, ys, strict=False):
        operations += [_pdf_text(x + 6, y - 14, cell) for x, cell in zip(xs, row, strict=False)]
    operations.append(_pdf_text(72, 600, "The outlook is reviewed every quarter."))
    return operations


def _aligned_statement_page() -> list[str]:
    """A statement laid out the way 10-K PDFs do: no column rules, figures right of a
    wide gap, "$" apart from its figure, a negative in parentheses."""
    operations = [
        _pdf_text(200, 740, "STATEMENT OF EARNINGS", size=12),
        _pdf_text(72, 722, "(In thousands of widgets)"),
        _pdf_text(380, 700, "2031"),
        _pdf_text(470, 700, "2030"),
    ]
    rows = [
        ("Net revenue", "$", "4,210", "$", "3,905"),
        ("Cost of revenue", "", "1,760", "", "1,688"),
        ("Other expense", "", "(215)", "", "(190)"),
        ("Net earnings", "$", "2,235", "$", "2,027"),
    ]
    for index, (label, dollar_a, a, dollar_b, b) in enumerate(rows):
        y = 684 - 16 * index
        operations.append(_pdf_text(72, y, label))
        if dollar_a:
            operations += [_pdf_text(360, y, dollar_a), _pdf_text(450, y, dollar_b)]
        operations += [_pdf_text(380, y, a), _pdf_text(470, y, b)]
    operations.append(_pdf_text(72, 590, "Earnings rose on lower costs in the northern plants."))
    return operations


@pytest.fixture(scope="module")
def synthetic_pdf(tmp_path_factory: pytest.TempPathFactory) -> ParsedDocument:
    path = tmp_path_factory.mktemp("pdf") / "widgets.pdf"
    path.write_bytes(_pdf_bytes([_ruled_grid_page(), _aligned_statement_page(), []]))
    return parse_document(path)


def test_pdf_counts_pages_and_skips_the_empty_one(synthetic_pdf: ParsedDocument) -> None:
    assert synthetic_pdf.doc_type == "pdf"
    assert synthetic_pdf.title == "widgets.pdf"
    assert synthetic_pdf.page_count == 3
    assert synthetic_pdf.nonempty_page_count == 2
    assert {block.page for block in synthetic_pdf.blocks} == {1, 2}


def test_pdf_ruled_table_is_one_markdown_block_between_its_text(
    synthetic_pdf: ParsedDocument,
) -> None:
    page_one = [block for block in synthetic_pdf.blocks if block.page == 1]
    assert [block.kind for block in page_one] == ["text", "table", "text"]
    table = page_one[1]
    assert table.table_number == 1
    assert table.text == (
        "[TABLE 1]\n"
        "| Segment | Lead | Outlook |\n"
        "| --- | --- | --- |\n"
        "| Cloud | Dana Ortiz | Growing |\n"
        "| Devices | Lee Park | Steady |\n"
        "[END TABLE]"
    )
    assert table.heading == "TEAM OVERVIEW"
    assert "Dana Ortiz" not in " ".join(block.text for block in _texts(synthetic_pdf, 1))


def test_pdf_aligned_statement_without_rules_is_one_table_with_merged_dollar_cells(
    synthetic_pdf: ParsedDocument,
) -> None:
    (table,) = [block for block in _tables(synthetic_pdf) if block.page == 2]
    assert table.table_number == 2
    assert table.heading == "STATEMENT OF EARNINGS"
    assert table.text.splitlines()[1:] == [
        "|  | 2031 | 2030 |",
        "| --- | --- | --- |",
        "| Net revenue | $4,210 | $3,905 |",
        "| Cost of revenue | 1,760 | 1,688 |",
        "| Other expense | (215) | (190) |",
        "| Net earnings | $2,235 | $2,027 |",
        "[END TABLE]",
    ]
    loose = " ".join(block.text for block in _texts(synthetic_pdf, 2))
    assert "Earnings rose on lower costs" in loose
    assert "(In thousands of widgets)" in loose
    for figure in ("4,210", "1,760", "(215)", "2,027"):
        assert figure not in loose


def test_a_corrupt_pdf_is_a_parse_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.7\nthis is not really a PDF at all\n")
    with pytest.raises(DocumentParseError, match=r"broken\.pdf") as raised:
        parse_pdf(path)
    assert raised.value.code == "document_unreadable"
    assert raised.value.__cause__ is not None


def test_an_empty_file_is_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "nothing.pdf"
    path.write_bytes(b"")
    with pytest.raises(DocumentParseError, match="empty"):
        parse_document(path)


def test_a_corrupt_docx_is_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "memo.docx"
    path.write_bytes(b"PK\x03\x04 not a zip archive after all")
    with pytest.raises(DocumentParseError, match=r"memo\.docx"):
        parse_document(path)


def test_an_unsupported_type_names_the_type_and_what_is_supported(tmp_path: Path) -> None:
    path = tmp_path / "sheet.xlsx"
    path.write_bytes(b"PK\x03\x04")
    with pytest.raises(UnsupportedDocument, match=r"'\.xlsx'.*PDF, HTML, DOCX") as raised:
        parse_document(path)
    assert isinstance(raised.value, ValueError)
    assert raised.value.code == "unsupported_document"


def test_the_content_type_wins_over_a_meaningless_suffix(tmp_path: Path) -> None:
    path = tmp_path / "upload.bin"
    path.write_text("# Notes\n\nPlain words.\n", encoding="utf-8")
    document = parse_document(path, content_type="text/markdown; charset=utf-8")
    assert document.doc_type == "md"
    assert document.blocks[0].heading == "Notes"


_INLINE_XBRL = """<?xml version='1.0' encoding='ASCII'?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:ix="http://www.xbrl.org/2013/inlineXBRL">
<head><title>exwd-20310630</title></head>
<body>
<div style="display:none"><ix:header><ix:hidden>
<ix:nonNumeric name="dei:DocumentFiscalYearFocus" contextRef="c-1">2031</ix:nonNumeric>
<ix:nonNumeric name="dei:DocumentFiscalPeriodFocus" contextRef="c-1">Q2</ix:nonNumeric>
<ix:nonNumeric name="dei:AmendmentFlag" contextRef="c-1">hidden-marker-text</ix:nonNumeric>
</ix:hidden></ix:header></div>
<div><span style="font-weight:700">FORM <ix:nonNumeric name="dei:DocumentType"
 contextRef="c-1">10-Q</ix:nonNumeric></span></div>
<div><span>For the quarterly period ended <ix:nonNumeric name="dei:DocumentPeriodEndDate"
 contextRef="c-1">June&#160;30, 2031</ix:nonNumeric></span></div>
<div><span><ix:nonNumeric name="dei:EntityRegistrantName" contextRef="c-1">Example Widgets
 Corp</ix:nonNumeric> trades as <ix:nonNumeric name="dei:TradingSymbol"
 contextRef="c-1">EXWD</ix:nonNumeric>.</span></div>
<table><tr><td>&#8226;</td><td>Widgets ship from two plants.</td></tr></table>
<div style="height:40pt"><span>Example Widgets Corp | Q2 2031 Form 10-Q | 1</span></div>
<hr style="page-break-after:always"/>
<div><span style="font-weight:700">Item 2. Results of Operations</span></div>
<div><span>Sales of widgets rose on steady demand.</span></div>
<table>
<tr><td style="width:50%"/><td/><td/><td/><td/><td/><td/><td/></tr>
<tr><td colspan="2"/><td colspan="6" style="text-align:center"><span>Three Months Ended</span></td>
</tr>
<tr><td colspan="2"/><td colspan="3"><span>June 30,<br/>2031</span></td><td/>
 <td colspan="2"><span>June 30,<br/>2030</span></td></tr>
<tr><td colspan="2"><span>Net sales</span></td><td>$</td><td><ix:nonFraction name="us-gaap:Revenues"
 contextRef="c-2">1,234</ix:nonFraction></td><td/><td/><td>$</td><td>1,100</td></tr>
<tr><td colspan="2"><span>Other expense</span></td><td/><td>(56</td><td>)</td><td/>
 <td>(40</td><td>)</td></tr>
<tr><td colspan="2"><span>Gross margin</span></td><td/><td>12.5</td><td>%</td><td/>
 <td>11.0</td><td>%</td></tr>
<tr><td colspan="2"/><td/><td/><td/><td/><td/><td/></tr>
</table>
<p>Margins widened as plants ran fuller.</p>
</body></html>
"""


@pytest.fixture(scope="module")
def inline_xbrl(tmp_path_factory: pytest.TempPathFactory) -> ParsedDocument:
    path = tmp_path_factory.mktemp("html") / "exwd-20310630.htm"
    path.write_text(_INLINE_XBRL, encoding="ascii")
    return parse_document(path)


def test_edgar_html_metadata_comes_from_the_dei_facts(inline_xbrl: ParsedDocument) -> None:
    assert inline_xbrl.doc_type == "html"
    assert inline_xbrl.form == "10-Q"
    assert inline_xbrl.fiscal_year == 2031
    assert inline_xbrl.fiscal_quarter == 2
    assert inline_xbrl.period_end == date(2031, 6, 30)
    assert inline_xbrl.symbol == "EXWD"
    assert inline_xbrl.company == "Example Widgets Corp"
    assert inline_xbrl.title == "Example Widgets Corp 10-Q for the period ended 2031-06-30"


def test_edgar_html_hidden_xbrl_header_is_not_text(inline_xbrl: ParsedDocument) -> None:
    assert all("hidden-marker-text" not in block.text for block in inline_xbrl.blocks)
    assert "Example Widgets Corp trades as EXWD." in _texts(inline_xbrl, 1)[0].text


def test_edgar_html_table_merges_split_cells_after_the_page_break(
    inline_xbrl: ParsedDocument,
) -> None:
    (table,) = _tables(inline_xbrl)
    assert table.page == 2
    assert table.table_number == 1
    assert table.heading == "Item 2. Results of Operations"
    assert table.text == (
        "[TABLE 1]\n"
        "|  | Three Months Ended June 30, 2031 | Three Months Ended June 30, 2030 |\n"
        "| --- | --- | --- |\n"
        "| Net sales | $1,234 | $1,100 |\n"
        "| Other expense | (56) | (40) |\n"
        "| Gross margin | 12.5% | 11.0% |\n"
        "[END TABLE]"
    )
    assert inline_xbrl.page_count == 2
    assert inline_xbrl.nonempty_page_count == 2


def test_edgar_html_one_row_layout_table_is_read_as_prose(inline_xbrl: ParsedDocument) -> None:
    page_one = " ".join(block.text for block in _texts(inline_xbrl, 1))
    assert "Widgets ship from two plants." in page_one
    page_two = [block for block in inline_xbrl.blocks if block.page == 2]
    assert [block.kind for block in page_two] == ["text", "table", "text"]
    assert page_two[0].text.startswith("Item 2. Results of Operations")
    assert page_two[2].text == "Margins widened as plants ran fuller."


def test_docx_headings_paragraphs_and_tables_become_blocks(tmp_path: Path) -> None:
    source = docx.Document()
    source.core_properties.title = "Widget plant review"
    source.add_heading("Overview", level=1)
    source.add_paragraph("Both plants met their targets.")
    table = source.add_table(rows=3, cols=3)
    for row, values in zip(
        table.rows,
        [("Plant", "Units", "Staff"), ("North", "4,210", "38"), ("South", "3,905", "41")],
        strict=True,
    ):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    source.add_heading("Next steps", level=2)
    source.add_paragraph("Hire for the night shift.")
    path = tmp_path / "review.docx"
    source.save(str(path))

    document = parse_document(path)

    assert document.doc_type == "docx"
    assert document.title == "Widget plant review"
    assert [(block.kind, block.heading) for block in document.blocks] == [
        ("text", "Overview"),
        ("table", "Overview"),
        ("text", "Next steps"),
    ]
    assert document.blocks[0].text == "Overview\n\nBoth plants met their targets."
    assert document.blocks[1].text == (
        "[TABLE 1]\n| Plant | Units | Staff |\n| --- | --- | --- |\n"
        "| North | 4,210 | 38 |\n| South | 3,905 | 41 |\n[END TABLE]"
    )


def test_markdown_headings_and_pipe_tables_are_recognised(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text(
        "# Widget notes\n\nA short intro.\n\n## Figures\n\n"
        "| Metric | 2031 |\n| :--- | ---: |\n| Revenue | 10 |\n| Cost \\| freight | 4 |\n\n"
        "After the table.\n\n```\n| not | a table |\n| --- | --- |\n```\n",
        encoding="utf-8",
    )
    document = parse_document(path)
    assert (document.doc_type, document.title) == ("md", "Widget notes")
    assert [(block.kind, block.heading) for block in document.blocks] == [
        ("text", "Widget notes"),
        ("text", "Figures"),
        ("table", "Figures"),
        ("text", "Figures"),
    ]
    assert document.blocks[2].text == (
        "[TABLE 1]\n| Metric | 2031 |\n| --- | --- |\n| Revenue | 10 |\n"
        "| Cost \\| freight | 4 |\n[END TABLE]"
    )
    assert document.blocks[3].text.startswith("After the table.")
    assert "| not | a table |" in document.blocks[3].text
    assert document.table_count == 1


def test_plain_text_is_one_block_of_paragraphs(tmp_path: Path) -> None:
    path = tmp_path / "memo.txt"
    path.write_text("First thought, in a sentence.\n\nSecond thought follows.\n", encoding="utf-8")
    document = parse_document(path)
    assert document.doc_type == "txt"
    assert [block.text for block in document.blocks] == [
        "First thought, in a sentence.\n\nSecond thought follows."
    ]
    assert document.page_count is None


_COURSE = """Course Title: Widget Making Basics
Course Link: https://example.com/courses/widgets
Course Instructor: Dana Ortiz

A hands-on tour of how widgets are made.

Lesson 0: Welcome
Lesson Link: https://example.com/courses/widgets/0
What the course covers and how to follow along.

Lesson 1: Choosing materials
Steel or brass: the trade-offs.

Brass resists corrosion but costs more.
"""


def test_course_file_becomes_lessons_with_their_own_blocks(tmp_path: Path) -> None:
    path = tmp_path / "widgets_course.txt"
    path.write_text(_COURSE, encoding="utf-8")
    document = parse_document(path)
    assert document.doc_type == "course"
    assert document.title == "Widget Making Basics"
    assert document.instructor == "Dana Ortiz"
    assert document.source_url == "https://example.com/courses/widgets"
    assert [(lesson.number, lesson.title, lesson.link) for lesson in document.lessons] == [
        (0, "Welcome", "https://example.com/courses/widgets/0"),
        (1, "Choosing materials", None),
    ]
    assert [(block.heading, block.text) for block in document.blocks] == [
        (
            "Widget Making Basics",
            "Widget Making Basics\n\nA hands-on tour of how widgets are made.",
        ),
        (
            "Lesson 0: Welcome",
            "Lesson 0: Welcome\n\nWhat the course covers and how to follow along.",
        ),
        (
            "Lesson 1: Choosing materials",
            "Lesson 1: Choosing materials\n\nSteel or brass: the trade-offs.\n\n"
            "Brass resists corrosion but costs more.",
        ),
    ]


@pytest.fixture(scope="module")
def apple_fy2022_10k() -> ParsedDocument:
    return parse_document(require_shared_data(*APPLE_FY2022_10K_PDF))


def test_apple_10k_pdf_income_statement_is_one_table_with_its_figures(
    apple_fy2022_10k: ParsedDocument,
) -> None:
    statement_pages = {
        block.page
        for block in _texts(apple_fy2022_10k)
        if "CONSOLIDATED STATEMENTS OF OPERATIONS" in block.text
        and "Notes to Consolidated" not in block.text
    }
    (table,) = [
        block
        for block in _tables(apple_fy2022_10k)
        if block.page in statement_pages and "Total net sales" in block.text
    ]
    rows = table.text.splitlines()
    assert rows[1] == (
        "|  | Years ended September 24, 2022 | Years ended September 25, 2021"
        " | Years ended September 26, 2020 |"
    )
    for row in (
        "| Total net sales | 394,328 | 365,817 | 274,515 |",
        "| Gross margin | 170,782 | 152,836 | 104,956 |",
        "| Other income/(expense), net | (334) | 258 | 803 |",
        "| Net income | $99,803 | $94,680 | $57,411 |",
        "| Diluted | $6.11 | $5.61 | $3.28 |",
    ):
        assert row in rows
    loose = " ".join(block.text for block in _texts(apple_fy2022_10k, table.page))
    for figure in ("394,328", "365,817", "274,515", "99,803", "170,782"):
        assert figure not in loose
    assert table.heading == "CONSOLIDATED STATEMENTS OF OPERATIONS"
    assert apple_fy2022_10k.page_count == 80


def test_apple_10k_pdf_tables_are_numbered_in_order(apple_fy2022_10k: ParsedDocument) -> None:
    numbers = [block.table_number for block in _tables(apple_fy2022_10k)]
    assert numbers == list(range(1, len(numbers) + 1))
    assert len(numbers) >= 20


def test_apple_10k_edgar_html_income_statement_and_metadata() -> None:
    document = parse_document(require_shared_data(*APPLE_FY2024_10K_HTML))
    assert (document.form, document.fiscal_year, document.fiscal_quarter) == ("10-K", 2024, None)
    assert document.period_end == date(2024, 9, 28)
    assert (document.symbol, document.company) == ("AAPL", "Apple Inc.")
    statements = [block for block in _tables(document) if "| Total net sales |" in block.text]
    assert any(
        "| Total net sales | 391,035 | 383,285 | 394,328 |" in block.text
        and "| Other income/(expense), net | 269 | (565) | (334) |" in block.text
        for block in statements
    )
    assert all("fasb.org" not in block.text for block in document.blocks)
    assert document.page_count is not None and document.page_count > 50


def test_a_pathological_markdown_line_is_read_as_prose_at_once(tmp_path: Path) -> None:
    # A heading marker followed by 32 KB of spaces, and a 32 KB delimiter-looking row: the
    # old heading pattern backtracked for seconds on lines like these, freezing the process.
    path = tmp_path / "hostile.md"
    path.write_text(
        "# " + " " * 32_000 + "x\n\n| a | b |\n" + "| - " * 8_000 + "x\n\n# Real heading\n"
    )
    started = time.perf_counter()
    document = parse_document(path)
    assert time.perf_counter() - started < 5  # linear now; a regression hangs, not slows
    assert document.title == "Real heading"  # the 32 KB line is no heading
    assert any(block.heading == "Real heading" for block in document.blocks)
