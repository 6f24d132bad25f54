"""Chunking: a parsed document's blocks cut into retrieval-sized chunks, each scored.

Tables. A table block becomes one chunk of its own, exactly as the parser wrote it,
whatever its length: half a table answers no question, and a table glued to prose
would make neither one's embedding clean. Nothing is prepended; context is added later.

Prose. Consecutive text blocks (across pages too) are joined with a blank line and cut
into chunks of at most `size` characters. A chunk ends at the strongest separator that
still leaves it at least `MIN_FILL` of the room it had for new text, and the last such
separator of that strength; strongest first:

1. before a heading: a markdown `#` line, an SEC line such as "Item 1A. Risk Factors",
   "PART II" or "Note 5 — Leases", a short title-cased line standing alone, or a
   block whose parser-given heading differs from the previous block's;
2. a blank line (a paragraph break, and so every block boundary);
3. a line break before or after a list item;
4. a sentence end: `.`, `!` or `?` (closing quotes and brackets allowed) before a
   capital, digit or opening mark, but not after "U.S.", "Inc.", "No.", an initial or
   another abbreviation; a decimal such as "3.5" has no space to cut at;
5. any whitespace;
6. none found: the text is cut at exactly `size` characters (a URL longer than a chunk).

A whitespace run right after a heading line counts only as a word break, so a chunk
never ends on its own heading when any other break is at hand.

Overlap. A chunk after another in the same run of prose starts with up to `overlap`
characters of the previous chunk's end: from the earliest sentence start in that
tail, else the earliest word start, else nothing. The overlap is always a suffix of
the previous chunk and never its whole new text; it never reaches back past a heading
(a section starts clean), and tables end a run, so it never crosses a table.

Chunk metadata: `page` is the page of the chunk's first character, `page_end` of its
last; `heading` is the heading in effect where the chunk's new text starts (the
innermost one when it starts with several heading lines); `overlap_chars` is how many
leading characters repeat the previous chunk's end.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from itertools import pairwise

from services.ingest.document_model import TABLE_END, Block

DEFAULT_CHUNK_SIZE = 1000
DEFAULT_CHUNK_OVERLAP = 200

# Below this share of its room a chunk would be mostly a stub; a weaker separator
# further on is better than a strong one that leaves a fragment.
MIN_FILL = 0.3

# Prose below this length is scored down: it carries too little to answer anything.
FULL_LENGTH_CHARS = 200

MAX_HEADING_CHARS = 120
MAX_HEADING_WORDS = 16
MAX_CAPTION_CHARS = 200

_BLOCK_JOIN = "\n\n"


class _Separator(IntEnum):
    """Where prose may be cut, strongest first."""

    HEADING = 0
    PARAGRAPH = 1
    LIST_ITEM = 2
    SENTENCE = 3
    WORD = 4


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable piece of a document: a run of prose or one whole table.

    `overlap_chars` is how many leading characters of `text` repeat the end of the
    previous chunk (always 0 for a table and for the first prose chunk after one), so
    `text[overlap_chars:]` is what this chunk adds.
    """

    text: str
    chunk_index: int
    page: int | None
    page_end: int | None
    is_table: bool
    table_number: int | None
    heading: str | None
    quality: float
    overlap_chars: int = 0


_WHITESPACE = re.compile(r"\s+")
_LINE = re.compile(r"^[^\S\n]*(\S(?:[^\n]*\S)?)", re.MULTILINE)
_MARKDOWN_HEADING = re.compile(r"#{1,6}\s+(\S.*)")
_SEC_HEADING = re.compile(
    r"(?:PART|Part)\s+[IVX]+\b|(?:ITEM|Item)\s+\d{1,2}[A-Z]?\b|(?:NOTE|Note)\s+\d{1,2}\b"
)
_LIST_ITEM = re.compile(r"(?:[-*•▪◦‣·–]|\(?(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{2,5})[.)])\s+\S")
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*\Z")
_INITIALISM = re.compile(r"(?:[A-Za-z]\.){2,}|[A-Z]\.")
_CLOSERS = "\"'”’)]"
_OPENERS = "\"'“‘([$#•*-–"
_CAPTION_HINT = re.compile(r"\btables?\b|\bin (?:thousands|millions|billions)\b", re.IGNORECASE)

_TABLE_START_MARK = re.compile(r"\A\s*\[TABLE \d+\]")
_TABLE_END_MARK = re.compile(re.escape(TABLE_END) + r"\s*\Z")
_CELL_SEPARATOR = re.compile(r"(?<!\\)\|")
_RULE_CELL = re.compile(r"\s*:?-+:?\s*")

# Lowercased; a period after these rarely ends a sentence in a filing ("Apple Inc. and
# its subsidiaries", "No. 3"). "etc." is left out: it ends sentences as often as not.
_ABBREVIATIONS = frozenset(
    str.split(
        "inc. corp. co. ltd. llc. plc. bros. no. nos. mr. mrs. ms. dr. prof. sr. jr. st. mt. "
        "ft. vs. v. approx. est. dept. gov. sen. rep. gen. fig. figs. ref. sec. art. vol. ch. "
        "para. p. pp. cf. al. jan. feb. mar. apr. jun. jul. aug. sep. sept. oct. nov. dec."
    )
)
# Small words that stay lowercase in a title-cased heading.
_MINOR_WORDS = frozenset(
    str.split(
        "a an and as at but by for from in into nor of on or over per the to up upon via vs "
        "with within without than that under after before between through during about "
        "against among"
    )
)


@dataclass(frozen=True, slots=True)
class _Line:
    start: int
    end: int
    title: str | None  # the heading's text, when the line is a heading
    is_list_item: bool


@dataclass(frozen=True, slots=True)
class _Gap:
    start: int  # a chunk cut here ends at `start` ...
    end: int  # ... and the next one's new text starts at `end`
    separator: _Separator
    after_heading: bool


@dataclass(frozen=True, slots=True)
class _Layout:
    text_start: int
    text_end: int
    lines: tuple[_Line, ...]
    gaps: tuple[_Gap, ...]
    gap_starts: tuple[int, ...]
    gap_ends: tuple[int, ...]
    heading_starts: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Span:
    start: int  # first character of the chunk, overlap included
    fresh: int  # first character not already in the previous chunk
    end: int


def chunk_document(
    blocks: Sequence[Block],
    size: int = DEFAULT_CHUNK_SIZE,
    overlap: int = DEFAULT_CHUNK_OVERLAP,
) -> list[Chunk]:
    """Cut a document's blocks into chunks in reading order, indexed 0..N-1.

    Every table block with text becomes one chunk, however long; runs of text blocks
    are split by `split_text`'s rules, each chunk at most `size` characters. Blank
    blocks produce nothing.
    """
    _validate(size, overlap)
    chunks: list[Chunk] = []
    heading: str | None = None  # the heading in effect after the blocks read so far
    run: list[Block] = []
    heading_before_run: str | None = None
    previous: Block | None = None
    for block in blocks:
        if block.kind == "table":
            if run:
                prose, heading = _chunk_run(
                    run, heading, heading_before_run, size, overlap, len(chunks)
                )
                chunks.extend(prose)
                run = []
            if block.heading is not None:
                heading = block.heading
            if block.text.strip():
                context = heading or _caption(previous)
                chunks.append(
                    Chunk(
                        text=block.text,
                        chunk_index=len(chunks),
                        page=block.page,
                        page_end=block.page,
                        is_table=True,
                        table_number=block.table_number,
                        heading=heading,
                        quality=table_quality(block.text, context),
                    )
                )
        elif block.text.strip():
            if not run:
                heading_before_run = previous.heading if previous is not None else None
            run.append(block)
        previous = block
    if run:
        prose, _ = _chunk_run(run, heading, heading_before_run, size, overlap, len(chunks))
        chunks.extend(prose)
    return chunks


def split_text(text: str, size: int, overlap: int) -> list[str]:
    """Split prose into pieces of at most `size` characters, each but the first starting
    with up to `overlap` characters of the previous one's end (see the module docstring
    for where it cuts). Leading and trailing whitespace is dropped; blank text gives [].
    """
    _validate(size, overlap)
    layout = _layout(text, ())
    return [text[span.start : span.end] for span in _spans(layout, size, overlap)]


def text_quality(text: str) -> float:
    """How complete a prose chunk reads, in [0, 1].

    Cut into units at sentence ends, paragraph and list breaks and heading lines:

        quality = (0.25 * starts + 0.25 * ends + 0.5 * complete) * length

    - starts: 1 if the text starts with a capital, digit, bullet, `#` or opening mark,
      else 0 (a chunk starting mid-sentence);
    - ends: 1 if it ends with `.`, `!` or `?` (closing quotes or brackets allowed) or
      its last unit is a list item or heading; 0.5 for a trailing `:` or `;`; else 0;
    - complete: the share of units that start like a sentence and end like one (`:`
      counts, as before a list; a heading line and a list item need no punctuation);
    - length: min(1, 0.5 + characters / 400), so a tiny fragment scores at most half
      and anything from `FULL_LENGTH_CHARS` (200) characters up is not penalized.

    Blank text scores 0. Rounded to 3 decimals.
    """
    layout = _layout(text, ())
    if layout.text_start >= layout.text_end:
        return 0.0
    body = text[layout.text_start : layout.text_end]
    lines_by_start = {line.start: line for line in layout.lines}
    cuts = [gap for gap in layout.gaps if gap.separator <= _Separator.SENTENCE or gap.after_heading]
    bounds = [layout.text_start, *(edge for gap in cuts for edge in (gap.start, gap.end))]
    bounds.append(layout.text_end)
    complete = 0
    last_is_item_or_heading = False
    for unit_start, unit_end in zip(bounds[::2], bounds[1::2], strict=True):
        line = lines_by_start.get(unit_start)
        is_heading = line is not None and line.title is not None and line.end == unit_end
        is_item = line is not None and line.is_list_item
        unit = text[unit_start:unit_end]
        # A colon ends a sentence that introduces a list or table.
        ends_well = _SENTENCE_END.search(unit) is not None or unit.endswith(":")
        if _starts_like_sentence(unit) and (is_heading or is_item or ends_well):
            complete += 1
        last_is_item_or_heading = is_heading or is_item
    units = len(bounds) // 2

    starts = 1.0 if _starts_like_sentence(body) else 0.0
    if _SENTENCE_END.search(body) is not None or last_is_item_or_heading:
        ends = 1.0
    elif body[-1] in ":;":
        ends = 0.5
    else:
        ends = 0.0
    length = min(1.0, 0.5 + len(body) / (2 * FULL_LENGTH_CHARS))
    return round((0.25 * starts + 0.25 * ends + 0.5 * complete / units) * length, 3)


def table_quality(text: str, heading: str | None) -> float:
    """How usable a table chunk is, in [0, 1]; `heading` is whatever context is known
    for it (its heading, else a caption line just above it).

        quality = 0.3 * markers + 0.2 * header + 0.3 * consistent + 0.2 * context

    - markers: half for a leading `[TABLE n]`, half for a trailing `[END TABLE]`
      (a missing one means the parser lost part of the table);
    - header: 1 if the first row is followed by a `| --- |` rule of the same width,
      0.5 for a first row with no rule, 0 for no rows;
    - consistent: the share of body rows with as many cells as the first row (0 when
      there are no body rows: a lone header answers nothing);
    - context: 1 if `heading` is non-blank, else 0 (a bare grid of numbers does not
      say what it measures).

    Rounded to 3 decimals.
    """
    markers = 0.5 * (_TABLE_START_MARK.match(text) is not None) + 0.5 * (
        _TABLE_END_MARK.search(text) is not None
    )
    rows = [_cells(line) for line in text.splitlines() if line.strip().startswith("|")]
    header_score = 0.0
    consistent = 0.0
    if rows:
        width = len(rows[0])
        has_rule = (
            len(rows) > 1
            and len(rows[1]) == width
            and all(_RULE_CELL.fullmatch(cell) for cell in rows[1])
        )
        header_score = 1.0 if has_rule else 0.5
        body = rows[2:] if has_rule else rows[1:]
        if body:
            consistent = sum(len(row) == width for row in body) / len(body)
    context = 1.0 if heading and heading.strip() else 0.0
    return round(0.3 * markers + 0.2 * header_score + 0.3 * consistent + 0.2 * context, 3)


def _validate(size: int, overlap: int) -> None:
    if size <= 0:
        raise ValueError(f"chunk size must be a positive number of characters, got {size}")
    if not 0 <= overlap < size:
        raise ValueError(
            f"chunk overlap must be at least 0 and less than the chunk size ({size}), got {overlap}"
        )


def _chunk_run(
    run: Sequence[Block],
    heading: str | None,
    heading_before_run: str | None,
    size: int,
    overlap: int,
    first_index: int,
) -> tuple[list[Chunk], str | None]:
    """Chunk consecutive text blocks as one text; return the chunks and the heading in
    effect at the run's end."""
    texts = [block.text.strip() for block in run]
    block_starts: list[int] = []
    position = 0
    for block_text in texts:
        block_starts.append(position)
        position += len(block_text) + len(_BLOCK_JOIN)
    text = _BLOCK_JOIN.join(texts)

    # A parser-given heading that changes between blocks opens a section just as a
    # heading line does.
    marks: list[tuple[int, str]] = []
    prior = heading_before_run
    for block, start in zip(run, block_starts, strict=True):
        if block.heading is not None and block.heading != prior:
            marks.append((start, block.heading))
        prior = block.heading
    layout = _layout(text, [start for start, _ in marks])
    marks.extend((line.start, line.title) for line in layout.lines if line.title is not None)
    marks.sort(key=lambda mark: mark[0])  # stable: a heading line wins over its block's
    mark_positions = [start for start, _ in marks]

    def heading_at(position: int) -> str | None:
        index = bisect_right(mark_positions, position) - 1
        return marks[index][1] if index >= 0 else heading

    # Where the content under a heading line starts, to name a chunk that opens with
    # "PART II" / "Item 5. Market ..." after the innermost of the two.
    after_heading = {
        line.start: following.start
        for line, following in pairwise(layout.lines)
        if line.title is not None
    }

    chunks: list[Chunk] = []
    previous_end = 0
    for span in _spans(layout, size, overlap):
        content_start = span.fresh
        while content_start in after_heading and after_heading[content_start] < span.end:
            content_start = after_heading[content_start]
        chunk_text = text[span.start : span.end]
        chunks.append(
            Chunk(
                text=chunk_text,
                chunk_index=first_index + len(chunks),
                page=run[bisect_right(block_starts, span.start) - 1].page,
                page_end=run[bisect_right(block_starts, span.end - 1) - 1].page,
                is_table=False,
                table_number=None,
                heading=heading_at(content_start),
                quality=text_quality(chunk_text),
                overlap_chars=previous_end - span.start if span.start < span.fresh else 0,
            )
        )
        previous_end = span.end
    return chunks, heading_at(len(text))


def _spans(layout: _Layout, size: int, overlap: int) -> list[_Span]:
    if layout.text_start >= layout.text_end:
        return []
    spans: list[_Span] = []
    start = fresh = layout.text_start
    while True:
        if start + size <= fresh:
            # A long run of whitespace ate the room the overlap left: drop the overlap.
            start = fresh
        limit = start + size
        if layout.text_end <= limit:
            spans.append(_Span(start, fresh, layout.text_end))
            return spans
        end, next_fresh = _cut(layout, fresh, limit)
        spans.append(_Span(start, fresh, end))
        start = _overlap_start(layout, fresh, end, next_fresh, overlap)
        fresh = next_fresh


def _cut(layout: _Layout, fresh: int, limit: int) -> tuple[int, int]:
    """Where a chunk whose new text starts at `fresh` ends, at most at `limit`, and
    where the next chunk's new text starts."""
    first = bisect_right(layout.gap_starts, fresh)
    stop = bisect_right(layout.gap_starts, limit)
    if first == stop:
        return limit, limit
    min_end = fresh + math.ceil(MIN_FILL * (limit - fresh))
    filled = bisect_left(layout.gap_starts, min_end, first, stop)
    pool = layout.gaps[filled:stop] or layout.gaps[first:stop]
    strongest = min(gap.separator for gap in pool)
    chosen = next(gap for gap in reversed(pool) if gap.separator == strongest)
    return chosen.start, chosen.end


def _overlap_start(layout: _Layout, fresh: int, end: int, next_fresh: int, overlap: int) -> int:
    """Where the next chunk starts: inside the tail of the chunk [.., end) whose new text
    started at `fresh`, or at `next_fresh` when no tail qualifies."""
    if overlap == 0:
        return next_fresh
    heading_index = bisect_right(layout.heading_starts, next_fresh) - 1
    section_start = layout.heading_starts[heading_index] if heading_index >= 0 else 0
    lowest = max(fresh + 1, end - overlap, section_start)
    first = bisect_left(layout.gap_ends, lowest)
    stop = bisect_left(layout.gap_ends, end)
    candidates = layout.gaps[first:stop]
    for gap in candidates:
        if gap.separator <= _Separator.SENTENCE or gap.after_heading:
            return gap.end
    return candidates[0].end if candidates else next_fresh


def _layout(text: str, section_starts: Sequence[int]) -> _Layout:
    lines = _lines(text)
    heading_starts = {line.start for line in lines if line.title is not None}
    heading_starts.update(section_starts)
    heading_ends = {line.end for line in lines if line.title is not None}
    heading_spans = [(line.start, line.end) for line in lines if line.title is not None]
    heading_span_starts = [start for start, _ in heading_spans]
    item_starts = {line.start for line in lines if line.is_list_item}
    item_ends = {line.end for line in lines if line.is_list_item}
    text_end = len(text.rstrip())
    text_start = len(text) - len(text.lstrip())

    gaps: list[_Gap] = []
    token_start = text_start
    for match in _WHITESPACE.finditer(text, text_start, text_end):
        start, end = match.span()
        newlines = text.count("\n", start, end)
        after_heading = start in heading_ends
        line_index = bisect_right(heading_span_starts, start) - 1
        in_heading = line_index >= 0 and end < heading_spans[line_index][1]
        if after_heading or in_heading:
            # "Item 1A. Risk Factors" is one title, and a chunk ending on its heading
            # would leave the section's text without it.
            separator = _Separator.WORD
        elif end in heading_starts:
            separator = _Separator.HEADING
        elif newlines >= 2:
            separator = _Separator.PARAGRAPH
        elif newlines and (end in item_starts or start in item_ends):
            separator = _Separator.LIST_ITEM
        elif _ends_sentence(text[token_start:start]) and _starts_like_sentence(text[end]):
            separator = _Separator.SENTENCE
        else:
            separator = _Separator.WORD
        gaps.append(_Gap(start, end, separator, after_heading))
        token_start = end
    return _Layout(
        text_start=text_start,
        text_end=text_end,
        lines=tuple(lines),
        gaps=tuple(gaps),
        gap_starts=tuple(gap.start for gap in gaps),
        gap_ends=tuple(gap.end for gap in gaps),
        heading_starts=tuple(sorted(heading_starts)),
    )


def _lines(text: str) -> list[_Line]:
    lines: list[_Line] = []
    previous_end: int | None = None
    for match in _LINE.finditer(text):
        start, end = match.span(1)
        content = match.group(1)
        standalone = previous_end is None or text.count("\n", previous_end, start) >= 2
        title = _heading_title(content, standalone)
        is_item = title is None and _LIST_ITEM.match(content) is not None
        lines.append(_Line(start, end, title, is_item))
        previous_end = end
    return lines


def _heading_title(line: str, standalone: bool) -> str | None:
    """The heading a line spells, or None when it reads as prose."""
    markdown = _MARKDOWN_HEADING.fullmatch(line)
    if markdown is not None:
        return markdown.group(1)
    if len(line) > MAX_HEADING_CHARS or line[-1] in ",;" or not line[0].isupper():
        return None
    words = line.split()
    if len(words) > MAX_HEADING_WORDS or not all(
        not word[0].isalpha() or word[0].isupper() or word.lower() in _MINOR_WORDS for word in words
    ):
        return None
    if _SEC_HEADING.match(line) is not None:
        return line
    # A wrapped line of a paragraph is never preceded by a blank line unless it is the
    # paragraph's first, and a title does not end like a sentence.
    if standalone and line[-1] not in ".!?:":
        return line
    return None


def _ends_sentence(token: str) -> bool:
    if _SENTENCE_END.search(token) is None:
        return False
    core = token.rstrip(_CLOSERS).lstrip("\"'“‘([")
    if core.endswith("."):
        return core.lower() not in _ABBREVIATIONS and _INITIALISM.fullmatch(core) is None
    return True


def _starts_like_sentence(text: str) -> bool:
    first = text[:1]
    return first.isupper() or first.isdigit() or (first != "" and first in _OPENERS)


def _cells(row: str) -> list[str]:
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return _CELL_SEPARATOR.split(row)


def _caption(block: Block | None) -> str | None:
    """The last line of the text block just above a table, when it reads as a caption."""
    if block is None or block.kind != "text" or not block.text.strip():
        return None
    last = block.text.rstrip().rsplit("\n", 1)[-1].strip()
    if len(last) > MAX_CAPTION_CHARS:
        return None
    if (
        last.endswith(":")
        or _CAPTION_HINT.search(last) is not None
        or _heading_title(last, standalone=True) is not None
    ):
        return last
    return None
