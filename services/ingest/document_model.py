"""What a parsed document is, between the parsers (PDF, EDGAR HTML, DOCX, TXT, MD, course
files) and the chunker: pages of blocks in reading order, each block either prose or one
whole table already written as a numbered markdown block.

The parsers decide what a table is; the chunker only has to keep a table block whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Literal

BlockKind = Literal["text", "table"]

TABLE_START = "[TABLE {number}]"
TABLE_END = "[END TABLE]"


@dataclass(frozen=True, slots=True)
class Block:
    """One run of prose, or one table as `[TABLE n]\\n| … |\\n[END TABLE]`.

    `page` is 1-based, or None for formats without pages (TXT, MD, a course lesson).
    `heading` is the nearest heading above the block, when the format marks headings.
    """

    kind: BlockKind
    text: str
    page: int | None = None
    table_number: int | None = None
    heading: str | None = None


@dataclass(frozen=True, slots=True)
class Lesson:
    """A lesson of a course document: its number, title and link."""

    number: int
    title: str
    link: str | None = None


@dataclass(slots=True)
class ParsedDocument:
    """A document's blocks in reading order and what is known about it.

    Metadata comes from the file itself, the filings index or the upload request; fields
    nobody could tell stay None.
    """

    title: str
    doc_type: str  # "pdf", "html", "docx", "txt", "md", "course"
    blocks: list[Block] = field(default_factory=list)
    page_count: int | None = None
    nonempty_page_count: int | None = None
    symbol: str | None = None
    company: str | None = None
    form: str | None = None
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    period_end: date | None = None
    filed: date | None = None
    source_name: str | None = None
    source_url: str | None = None
    # Course documents only.
    instructor: str | None = None
    lessons: list[Lesson] = field(default_factory=list)

    @property
    def table_count(self) -> int:
        return sum(1 for block in self.blocks if block.kind == "table")
