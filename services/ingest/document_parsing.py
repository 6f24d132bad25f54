"""Document parsers for filings and uploads: one entry point, one parser per format.

`parse_document` picks the parser from the content type or the file suffix: PDF
(PDFium and pdfplumber, `pdf_parsing`), HTML including EDGAR inline XBRL (lxml, `html_parsing`),
DOCX (python-docx), plain text, markdown, and the course format (a text file that
starts with `Course Title:`). Each returns a `ParsedDocument` whose blocks are prose or
whole tables written as numbered markdown (`block_building`).

Errors are typed: `UnsupportedDocument` for a format none of the parsers reads,
`DocumentParseError` for a file of a known format that cannot be read (corrupt,
encrypted, truncated). The library's own exception is kept as the cause for the logs;
callers only ever see these two.
"""

from __future__ import annotations

import re
from pathlib import Path

import docx
from docx.table import Table, _Row
from docx.text.paragraph import Paragraph
from lxml import etree

from services.ingest.block_building import BlockCollector, looks_like_heading
from services.ingest.document_model import Lesson, ParsedDocument
from services.ingest.html_parsing import read_html
from services.ingest.pdf_parsing import read_pdf

SUPPORTED = "PDF, HTML, DOCX, TXT, MD and course text files"

_SUFFIX_KINDS = {
    ".pdf": "pdf",
    ".htm": "html",
    ".html": "html",
    ".xhtml": "html",
    ".docx": "docx",
    ".txt": "txt",
    ".text": "txt",
    ".md": "md",
    ".markdown": "md",
}
_CONTENT_TYPE_KINDS = {
    "application/pdf": "pdf",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "text/plain": "txt",
    "text/markdown": "md",
    "text/x-markdown": "md",
}
# How far into a text file to look for NUL bytes, the mark of a binary file.
BINARY_SNIFF_BYTES = 8192

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
# A heading's text runs to its last character that is neither a space nor a closing #:
# written so no two quantifiers compete for the same spaces (the lazy `(.+?)\s*#*\s*` it
# replaces took seconds on one long line of spaces).
_MARKDOWN_HEADING = re.compile(r"#{1,6}[ \t]+([^ \t#](?:[^\n]*[^ \t#])?)[ \t#]*")
_MARKDOWN_TITLE = re.compile(r"#[ \t]+([^ \t#](?:[^\n]*[^ \t#])?)[ \t#]*")
# Lines longer than this are prose, never a heading or a table row: the patterns below are
# not even tried on them.
MAX_MARKUP_LINE = 2000
_MARKDOWN_FENCE = re.compile(r"\s*(```|~~~)")
_MARKDOWN_DELIMITER_ROW = re.compile(r"\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")
_COURSE_FIELD = re.compile(r"Course (Title|Link|Instructor)\s*:\s*(.*)", re.IGNORECASE)
_LESSON = re.compile(r"Lesson\s+(\d+)\s*:\s*(.*)", re.IGNORECASE)
_LESSON_LINK = re.compile(r"Lesson Link\s*:\s*(\S+)", re.IGNORECASE)


class UnsupportedDocument(ValueError):
    """A file of a type no parser reads (by content type and suffix)."""

    code = "unsupported_document"


class DocumentParseError(ValueError):
    """A file of a supported type that cannot be read: corrupt, encrypted or empty."""

    code = "document_unreadable"


def parse_document(path: Path, *, content_type: str | None = None) -> ParsedDocument:
    """Parse `path` with the parser its content type (if known) or suffix names."""
    kind = _kind(path, content_type)
    if kind == "pdf":
        return parse_pdf(path)
    if kind == "html":
        return parse_html(path)
    if kind == "docx":
        return parse_docx(path)
    if kind == "md":
        return parse_markdown(path)
    if _is_course(_read_text(path)):
        return parse_course(path)
    return parse_text(path)


def _kind(path: Path, content_type: str | None) -> str:
    if content_type:
        media_type = content_type.split(";", 1)[0].strip().lower()
        if media_type in _CONTENT_TYPE_KINDS:
            return _CONTENT_TYPE_KINDS[media_type]
    suffix = path.suffix.lower()
    if suffix in _SUFFIX_KINDS:
        return _SUFFIX_KINDS[suffix]
    described = ", ".join(
        part for part in (f"suffix {suffix!r}" if suffix else "", content_type or "") if part
    )
    raise UnsupportedDocument(
        f"{path.name}: unsupported document type ({described or 'no suffix, no content type'});"
        f" finq reads {SUPPORTED}"
    )


def parse_pdf(path: Path) -> ParsedDocument:
    """A PDF's pages as prose and markdown tables (see `pdf_parsing`)."""
    _check_readable(path)
    try:
        return read_pdf(path)
    # pdfminer reports a damaged file through a dozen unrelated exception types (its
    # own, KeyError, struct.error, …), raised at open or on any page.
    except Exception as error:
        if "password" in type(error).__name__.lower() or "encrypt" in str(error).lower():
            raise DocumentParseError(f"{path.name}: the PDF is encrypted") from error
        raise DocumentParseError(f"{path.name}: not a readable PDF ({_describe(error)})") from error


def parse_html(path: Path) -> ParsedDocument:
    """An HTML file (EDGAR inline XBRL included) as prose and markdown tables."""
    _check_readable(path)
    try:
        return read_html(path)
    except (etree.LxmlError, ValueError, UnicodeError) as error:
        raise DocumentParseError(f"{path.name}: not readable HTML ({_describe(error)})") from error


def parse_docx(path: Path) -> ParsedDocument:
    """A Word document: heading-styled paragraphs head blocks, tables become markdown."""
    _check_readable(path)
    try:
        document = docx.Document(str(path))
    # A .docx is a zip of XML parts: a damaged one fails in zipfile, lxml or python-docx.
    except Exception as error:
        message = f"{path.name}: not a readable DOCX ({_describe(error)})"
        raise DocumentParseError(message) from error
    collector = BlockCollector()
    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            style = item.style.name if item.style is not None else ""
            heading = bool(style) and (style.startswith("Heading") or style == "Title")
            collector.paragraph(item.text, None, heading=heading)
        elif isinstance(item, Table):
            rows = [_docx_row(row) for row in item.rows]
            if not collector.table(rows, None):
                collector.paragraph("\n".join(" ".join(c for c in row if c) for row in rows), None)
    title = (document.core_properties.title or "").strip() or path.name
    return ParsedDocument(title=title, doc_type="docx", blocks=collector.finish())


def _docx_row(row: _Row) -> list[str]:
    """A row's cells, a cell merged across columns counted once (python-docx repeats it)."""
    cells: list[str] = []
    previous = None
    for cell in row.cells:
        cells.append("" if cell._tc is previous else cell.text)
        previous = cell._tc
    return cells


def parse_text(path: Path) -> ParsedDocument:
    """Plain text: paragraphs at blank lines, a short title-cased line alone as a heading."""
    text = _read_text(path)
    collector = BlockCollector()
    for paragraph in _PARAGRAPH_BREAK.split(text):
        paragraph = paragraph.strip()
        single_line = "\n" not in paragraph
        heading = looks_like_heading(paragraph, standalone=single_line)
        collector.paragraph(paragraph, None, heading=heading)
    return ParsedDocument(title=path.name, doc_type="txt", blocks=collector.finish())


def parse_markdown(path: Path) -> ParsedDocument:
    """Markdown: `#` headings head blocks (the first level-1 one titles the document),
    pipe tables become table blocks, code fences are kept as they are."""
    lines = _read_text(path).splitlines()
    collector = BlockCollector()
    paragraph: list[str] = []

    def end_paragraph() -> None:
        collector.paragraph("\n".join(paragraph), None)
        paragraph.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        if _MARKDOWN_FENCE.match(line):
            end = next(
                (i for i in range(index + 1, len(lines)) if _MARKDOWN_FENCE.match(lines[i])),
                len(lines) - 1,
            )
            end_paragraph()
            collector.paragraph("\n".join(lines[index : end + 1]), None)
            index = end + 1
            continue
        heading = (
            _MARKDOWN_HEADING.fullmatch(line.strip()) if len(line) <= MAX_MARKUP_LINE else None
        )
        if heading:
            end_paragraph()
            collector.paragraph(line.strip(), None, heading=True, name=heading.group(1))
        elif _starts_pipe_table(lines, index):
            end_paragraph()
            end = index + 2
            while end < len(lines) and "|" in lines[end] and lines[end].strip():
                end += 1
            body = lines[index + 2 : end]
            rows = [_pipe_cells(lines[index]), *(_pipe_cells(row) for row in body)]
            if not collector.table(rows, None):
                collector.paragraph("\n".join(lines[index:end]), None)
            index = end
            continue
        elif line.strip():
            paragraph.append(line)
        else:
            end_paragraph()
        index += 1
    end_paragraph()
    title = next(
        (
            match.group(1)
            for line in lines
            if len(line) <= MAX_MARKUP_LINE and (match := _MARKDOWN_TITLE.fullmatch(line.strip()))
        ),
        path.name,
    )
    return ParsedDocument(title=title, doc_type="md", blocks=collector.finish())


def _starts_pipe_table(lines: list[str], index: int) -> bool:
    return (
        "|" in lines[index]
        and index + 1 < len(lines)
        and "-" in lines[index + 1]
        and len(lines[index + 1]) <= MAX_MARKUP_LINE
        and _MARKDOWN_DELIMITER_ROW.fullmatch(lines[index + 1]) is not None
    )


def _pipe_cells(line: str) -> list[str]:
    text = line.strip()
    text = text.removeprefix("|")
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    return [cell.strip().replace("\\|", "|") for cell in _UNESCAPED_PIPE.split(text)]


def parse_course(path: Path) -> ParsedDocument:
    """A course file: `Course Title/Link/Instructor:` lines, then lessons, each a
    `Lesson N: Title` line, an optional `Lesson Link:` line and the lesson's text."""
    lines = _read_text(path).splitlines()
    fields: dict[str, str] = {}
    lessons: list[Lesson] = []
    collector = BlockCollector()
    paragraph: list[str] = []
    course_heading_done = False

    def end_paragraph() -> None:
        collector.paragraph("\n".join(paragraph), None)
        paragraph.clear()

    index = 0
    while index < len(lines):
        line = lines[index].strip()
        header = _COURSE_FIELD.fullmatch(line) if not lessons else None
        lesson = _LESSON.fullmatch(line)
        if header:
            fields[header.group(1).lower()] = header.group(2).strip()
        elif lesson:
            end_paragraph()
            link = None
            following = _next_nonblank(lines, index + 1)
            if following is not None:
                link_match = _LESSON_LINK.fullmatch(lines[following].strip())
                if link_match:
                    link = link_match.group(1)
                    index = following
            number, title = int(lesson.group(1)), lesson.group(2).strip()
            lessons.append(Lesson(number=number, title=title, link=link))
            collector.paragraph(f"Lesson {number}: {title}", None, heading=True)
        elif line:
            if not lessons and not course_heading_done and fields.get("title"):
                # Text before the first lesson describes the course: file it under it.
                collector.paragraph(fields["title"], None, heading=True)
                course_heading_done = True
            paragraph.append(line)
        else:
            end_paragraph()
        index += 1
    end_paragraph()
    return ParsedDocument(
        title=fields.get("title") or path.name,
        doc_type="course",
        blocks=collector.finish(),
        source_url=fields.get("link") or None,
        instructor=fields.get("instructor") or None,
        lessons=lessons,
    )


def _next_nonblank(lines: list[str], start: int) -> int | None:
    return next((i for i in range(start, len(lines)) if lines[i].strip()), None)


def _is_course(text: str) -> bool:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first.lower().startswith("course title:")


def _read_text(path: Path) -> str:
    _check_readable(path)
    data = path.read_bytes()
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise DocumentParseError(f"{path.name}: binary data where text was expected")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        # Text saved by older Windows tools; cp1252 reads their curly quotes right.
        return data.decode("cp1252", errors="replace")


def _check_readable(path: Path) -> None:
    if not path.is_file():
        raise DocumentParseError(f"{path.name}: no such file")
    if path.stat().st_size == 0:
        raise DocumentParseError(f"{path.name}: the file is empty")


def _describe(error: BaseException) -> str:
    message = str(error).strip()
    return f"{type(error).__name__}: {message}" if message else type(error).__name__
