"""Chunking: invariants over seeded random documents, then the cutting rules, quality
scores and settings one by one, and a made-up annual report read end to end."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from itertools import pairwise

import pytest

from services.ingest.chunking import (
    Chunk,
    chunk_document,
    split_text,
    table_quality,
    text_quality,
)
from services.ingest.document_model import Block

# --- builders -----------------------------------------------------------------------

WORDS = tuple(
    str.split(
        "revenue margin segment customers products services growth demand supply costs "
        "operating income net cash flow capital expenditure dividends shares guidance quarter "
        "fiscal year currency exchange rates inventory suppliers competition regulation tax "
        "liabilities assets leases debt interest the of and in to for with"
    )
)
MIDDLES = ("in the U.S. market", "by 3.5 percent", "at Acme Inc. plants", "under No. 4 plan")
TITLES = (
    "# Overview",
    "Item 7. Management's Discussion and Analysis",
    "RISK FACTORS",
    "Liquidity and Capital Resources",
)


def sentence(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(3, 18))
    if rng.random() < 0.3:
        words.insert(rng.randint(1, len(words)), rng.choice(MIDDLES))
    return " ".join(words).capitalize() + rng.choice("..?")


def paragraph(rng: random.Random) -> str:
    # Some paragraphs come wrapped, as PDF text does.
    joiner = " " if rng.random() < 0.7 else "\n"
    return joiner.join(sentence(rng) for _ in range(rng.randint(1, 6)))


def prose(rng: random.Random) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(1, 5)):
        roll = rng.random()
        if roll < 0.15:
            parts.append(rng.choice(TITLES))
        elif roll < 0.25:
            parts.append("\n".join(f"- {sentence(rng)}" for _ in range(rng.randint(2, 4))))
        elif roll < 0.3:
            parts.append(f"See https://example.com/{'x' * rng.randint(20, 400)} for more.")
        else:
            parts.append(paragraph(rng))
    return "\n\n".join(parts)


def table(rng: random.Random, number: int) -> str:
    columns = rng.randint(1, 5)
    rows = rng.randint(1, 60)
    lines = [
        f"[TABLE {number}]",
        "| " + " | ".join(f"h{c}" for c in range(columns)) + " |",
        "| " + " | ".join("---" for _ in range(columns)) + " |",
    ]
    lines += [
        "| " + " | ".join(str(rng.randint(0, 99_999)) for _ in range(columns)) + " |"
        for _ in range(rows)
    ]
    lines.append("[END TABLE]")
    return "\n".join(lines)


def document(rng: random.Random) -> list[Block]:
    blocks: list[Block] = []
    paged = rng.random() < 0.8
    page = 1
    tables = 0
    for _ in range(rng.randint(1, 12)):
        if rng.random() < 0.4:
            page += 1
        heading = rng.choice((None, None, "Item 8. Financial Statements", "Notes"))
        blank = rng.random() < 0.05
        if rng.random() < 0.3:
            tables += 1
            text = "  \n " if blank else table(rng, tables)
            block = Block("table", text, page if paged else None, tables, heading)
        else:
            text = "  \n " if blank else prose(rng)
            block = Block("text", text, page if paged else None, None, heading)
        blocks.append(block)
    return blocks


@dataclass(frozen=True)
class Case:
    seed: int
    blocks: list[Block]
    size: int
    overlap: int
    chunks: list[Chunk]


@cache
def generated_cases() -> tuple[Case, ...]:
    cases: list[Case] = []
    for seed in range(150):
        rng = random.Random(seed)
        size = rng.choice((30, 60, 120, 250, 500, 1000, 1500))
        overlap = rng.choice((0, size // 5, size // 2, size - 1, rng.randrange(size)))
        blocks = document(rng)
        cases.append(Case(seed, blocks, size, overlap, chunk_document(blocks, size, overlap)))
    return tuple(cases)


def prose_runs(chunks: list[Chunk]) -> Iterator[list[Chunk]]:
    """Consecutive prose chunks, which a table (or nothing) separates."""
    run: list[Chunk] = []
    for chunk in chunks:
        if chunk.is_table:
            if run:
                yield run
            run = []
        else:
            run.append(chunk)
    if run:
        yield run


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def fresh_text(chunk: Chunk) -> str:
    return chunk.text[chunk.overlap_chars :]


def prose_text(blocks: list[Block]) -> str:
    return "\n\n".join(block.text for block in blocks if block.kind == "text")


# --- invariants over generated documents --------------------------------------------


def test_every_prose_chunk_fits_the_size_and_only_a_lone_table_may_exceed_it() -> None:
    for case in generated_cases():
        for chunk in case.chunks:
            assert chunk.is_table or 0 < len(chunk.text) <= case.size, case.seed


def test_every_table_appears_once_whole_in_its_own_chunk() -> None:
    for case in generated_cases():
        tables = [block.text for block in case.blocks if block.kind == "table"]
        tables = [text for text in tables if text.strip()]
        table_chunks = [chunk for chunk in case.chunks if chunk.is_table]
        assert [chunk.text for chunk in table_chunks] == tables, case.seed
        for chunk in table_chunks:
            assert chunk.overlap_chars == 0
            assert chunk.table_number is not None
            assert sum(chunk.text in other.text for other in case.chunks) == 1


def test_no_chunk_mixes_table_and_prose() -> None:
    for case in generated_cases():
        for chunk in case.chunks:
            if not chunk.is_table:
                assert "[TABLE" not in chunk.text and "[END TABLE]" not in chunk.text
                assert "| --- |" not in chunk.text and chunk.table_number is None


def test_the_overlap_of_a_prose_chunk_is_a_word_aligned_suffix_of_the_previous_one() -> None:
    overlapping = 0
    for case in generated_cases():
        for run in prose_runs(case.chunks):
            assert run[0].overlap_chars == 0, case.seed
            for before, after in pairwise(run):
                shared = after.overlap_chars
                assert 0 <= shared <= case.overlap, case.seed
                if shared:
                    overlapping += 1
                    assert shared < len(before.text)
                    assert after.text[:shared] == before.text[-shared:], case.seed
                    assert before.text[-shared - 1].isspace()
    assert overlapping > 100  # the cases do exercise overlap


def test_no_overlap_crosses_a_table() -> None:
    for case in generated_cases():
        for before, after in pairwise(case.chunks):
            if before.is_table or after.is_table:
                assert after.overlap_chars == 0, case.seed


def test_prose_chunks_without_their_overlap_give_back_all_the_prose_in_order() -> None:
    for case in generated_cases():
        rebuilt = "".join(fresh_text(chunk) for chunk in case.chunks if not chunk.is_table)
        assert squash(rebuilt) == squash(prose_text(case.blocks)), case.seed


def test_prose_words_come_back_whole_when_every_word_fits_in_a_chunk() -> None:
    checked = 0
    for case in generated_cases():
        words = prose_text(case.blocks).split()
        if words and max(map(len, words)) > case.size - case.overlap - 2:
            continue  # such a word must be cut by characters
        checked += 1
        rebuilt = [
            word
            for chunk in case.chunks
            if not chunk.is_table
            for word in fresh_text(chunk).split()
        ]
        assert rebuilt == words, case.seed
    assert checked > 30


def test_chunk_indexes_run_from_zero_without_gaps() -> None:
    for case in generated_cases():
        assert [chunk.chunk_index for chunk in case.chunks] == list(range(len(case.chunks)))


def test_pages_never_go_backwards() -> None:
    # A chunk may start on an earlier page than the previous one ended on, when its
    # overlap reaches back across the page break; starts and ends each only go forward.
    for case in generated_cases():
        starts = [chunk.page for chunk in case.chunks if chunk.page is not None]
        ends = [chunk.page_end for chunk in case.chunks if chunk.page_end is not None]
        assert starts == sorted(starts) and ends == sorted(ends), case.seed
        for chunk in case.chunks:
            assert (chunk.page is None) == (chunk.page_end is None)
            if chunk.page is not None and chunk.page_end is not None:
                assert chunk.page <= chunk.page_end


def test_quality_is_always_between_zero_and_one() -> None:
    for case in generated_cases():
        for chunk in case.chunks:
            assert 0.0 <= chunk.quality <= 1.0


# --- tables -------------------------------------------------------------------------


def small_table(number: int = 1) -> str:
    return f"[TABLE {number}]\n| Segment | 2023 |\n| --- | --- |\n| Americas | 162 |\n[END TABLE]"


def test_an_oversized_table_stays_one_chunk_and_is_not_merged() -> None:
    big = table(random.Random(1), 1)
    assert len(big) > 300
    blocks = [
        Block("text", "Revenue rose in every segment.", page=1),
        Block("table", big, page=2, table_number=1),
        Block("text", "Margins held steady.", page=3),
    ]
    chunks = chunk_document(blocks, size=100, overlap=20)
    assert [chunk.text for chunk in chunks] == [
        "Revenue rose in every segment.",
        big,
        "Margins held steady.",
    ]
    assert [chunk.is_table for chunk in chunks] == [False, True, False]
    assert (chunks[1].page, chunks[1].page_end, chunks[1].table_number) == (2, 2, 1)


def test_a_small_table_is_its_own_chunk_between_prose_chunks() -> None:
    blocks = [
        Block("text", "Net sales by segment were as follows.", page=4),
        Block("table", small_table(), page=4, table_number=1),
        Block("text", "Americas grew the most.", page=4),
    ]
    chunks = chunk_document(blocks)
    assert len(chunks) == 3
    assert chunks[1].text == small_table() and chunks[1].is_table
    assert chunks[2].overlap_chars == 0


def test_a_blank_table_or_text_block_gives_no_chunk() -> None:
    blocks = [Block("text", " \n "), Block("table", "", table_number=1)]
    assert chunk_document(blocks) == []
    assert chunk_document([]) == []


# --- prose splitting ----------------------------------------------------------------

ABBREVIATED = (
    "Sales in the U.S. rose 3.5 percent on stronger demand.",
    "Acme Inc. bought Plant No. 7 from its supplier for cash.",
    "Dr. Smith joined the board of J. Doe Holdings last year.",
    "Costs fell by 2.25 percent after the move to U.S. plants.",
    "Shipments were approx. 40 percent higher than expected.",
)


def test_sentences_are_not_split_at_abbreviations_or_decimals() -> None:
    text = " ".join(ABBREVIATED[i % len(ABBREVIATED)] for i in range(40))
    for overlap in (0, 30):
        pieces = split_text(text, size=130, overlap=overlap)
        assert len(pieces) > 10
        for piece in pieces:
            assert piece.endswith(ABBREVIATED), piece
            if overlap == 0:
                assert piece.startswith(ABBREVIATED), piece


def test_the_overlap_starts_at_the_earliest_sentence_start_in_the_tail() -> None:
    sentences = [f"Sentence number {n} says a little more." for n in range(30)]
    pieces = split_text(" ".join(sentences), size=200, overlap=90)
    for before, after in pairwise(pieces):
        assert after.startswith("Sentence number")
        shared = next(n for n in range(len(after), 0, -1) if before.endswith(after[:n]))
        # Each sentence is 38-39 characters, so 90 characters hold two whole ones.
        assert shared > 60 and after[:shared].count("Sentence") == 2


def test_a_heading_starts_a_new_chunk_without_overlap() -> None:
    first = " ".join(["Our stores performed well this year."] * 9)
    second = " ".join(["The company leases its offices."] * 9)
    text = f"{first}\n\nItem 2. Properties\n\n{second}"
    pieces = split_text(text, size=500, overlap=100)
    assert pieces[0] == first
    assert pieces[1].startswith("Item 2. Properties\n\nThe company")


def test_a_paragraph_that_fits_is_kept_whole_rather_than_filling_the_chunk() -> None:
    first = " ".join(["Demand was strong in every region."] * 12)
    second = " ".join(["Gross margin improved on a better mix."] * 16)
    assert 400 < len(first) < 500 and len(second) < 1000 < len(first) + len(second)
    assert split_text(f"{first}\n\n{second}", size=1000, overlap=0) == [first, second]


def test_list_items_are_split_between_items() -> None:
    items = "\n".join(f"- risk factor {n} could hurt our results" for n in range(20))
    pieces = split_text(f"We face these risks:\n{items}", size=150, overlap=0)
    for piece in pieces[1:]:
        assert piece.startswith("- risk factor")
        assert piece.endswith("could hurt our results")


def test_text_without_sentences_is_split_between_words() -> None:
    words = [f"word{n}" for n in range(400)]
    pieces = split_text(" ".join(words), size=100, overlap=30)
    assert all(len(piece) <= 100 for piece in pieces)
    for piece in pieces:
        assert set(piece.split()) <= set(words)
    assert pieces[0].split()[0] == "word0" and pieces[-1].split()[-1] == "word399"


def test_a_word_longer_than_the_size_is_cut_by_characters() -> None:
    assert split_text("x" * 250, size=100, overlap=20) == ["x" * 100, "x" * 100, "x" * 50]


def test_blank_text_gives_no_pieces() -> None:
    assert split_text(" \n\t ", size=100, overlap=10) == []


def test_consecutive_blocks_merge_across_pages_and_keep_both_pages() -> None:
    blocks = [
        Block("text", "Revenue grew in fiscal 2023.", page=7),
        Block("text", "Margins also improved.", page=8),
    ]
    [chunk] = chunk_document(blocks)
    assert chunk.text == "Revenue grew in fiscal 2023.\n\nMargins also improved."
    assert (chunk.page, chunk.page_end, chunk.chunk_index) == (7, 8, 0)


def test_a_chunk_is_named_after_the_innermost_heading_it_starts_under() -> None:
    text = "PART II\n\nItem 5. Market for Common Equity\n\nOur shares trade on Nasdaq."
    [chunk] = chunk_document([Block("text", text, page=1)])
    assert chunk.heading == "Item 5. Market for Common Equity"


def test_parser_headings_name_chunks_and_carry_over_to_tables() -> None:
    blocks = [
        Block("text", "Sales rose.", heading="Results of Operations"),
        Block("text", "Cash was ample.", heading="Liquidity"),
        Block("table", small_table(), table_number=1),
    ]
    chunks = chunk_document(blocks, size=20, overlap=5)
    assert [chunk.heading for chunk in chunks] == [
        "Results of Operations",
        "Liquidity",
        "Liquidity",
    ]
    assert chunks[1].overlap_chars == 0  # a new section starts clean


@pytest.mark.parametrize(
    ("size", "overlap", "message"),
    [(0, 0, "size"), (-5, 0, "size"), (100, 100, "overlap"), (100, -1, "overlap")],
)
def test_a_bad_size_or_overlap_is_refused(size: int, overlap: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        chunk_document([Block("text", "Revenue grew.")], size=size, overlap=overlap)
    with pytest.raises(ValueError, match=message):
        split_text("Revenue grew.", size=size, overlap=overlap)


# --- quality ------------------------------------------------------------------------

CLEAN = (
    "Net sales increased 8 percent in fiscal 2023, driven by higher sales of services. "
    "Gross margin rose to 44 percent as the product mix improved. Operating expenses "
    "grew more slowly than sales. The company returned cash to shareholders."
)


def test_a_clean_paragraph_scores_higher_than_a_mid_sentence_fragment() -> None:
    fragment = CLEAN[30:150]
    assert text_quality(CLEAN) > 0.9
    assert text_quality(fragment) < 0.5
    assert text_quality(CLEAN) > text_quality(fragment)


def test_a_tiny_fragment_scores_lower_than_a_full_paragraph() -> None:
    assert text_quality("Sales rose.") < text_quality(CLEAN)
    assert text_quality("   ") == 0.0


def test_a_table_missing_its_end_marker_scores_lower() -> None:
    whole = small_table()
    cut = whole.removesuffix("\n[END TABLE]")
    assert table_quality(cut, "Net sales") < table_quality(whole, "Net sales") == 1.0


def test_a_table_with_ragged_rows_or_no_header_rule_scores_lower() -> None:
    ragged = "[TABLE 1]\n| a | b |\n| --- | --- |\n| 1 | 2 | 3 |\n| 4 |\n[END TABLE]"
    no_rule = "[TABLE 1]\n| a | b |\n| 1 | 2 |\n[END TABLE]"
    assert table_quality(ragged, "Leases") < table_quality(small_table(), "Leases")
    assert table_quality(no_rule, "Leases") < table_quality(small_table(), "Leases")


def test_a_table_with_a_heading_or_caption_scores_higher_than_a_bare_one() -> None:
    assert table_quality(small_table(), None) < table_quality(small_table(), "Net sales")
    captioned = chunk_document(
        [
            Block("text", "Net sales by segment were (in millions):"),
            Block("table", small_table(), table_number=1),
        ]
    )
    bare = chunk_document([Block("table", small_table(), table_number=1)])
    assert captioned[1].quality > bare[0].quality


# --- a made-up annual report --------------------------------------------------------

ANNUAL_REPORT_PAGES = (
    """PART I

Item 1. Business

Northwind Devices Inc. designs, manufactures and sells home networking equipment. \
The Company sells its products in the U.S. and in 40 other countries through retailers, \
carriers and its own online store. Fiscal 2023 ended on September 30, 2023.

Products

The Company's main product lines are routers, mesh systems and network storage. \
Routers made up 52 percent of net sales in fiscal 2023, compared with 55 percent in \
fiscal 2022. Mesh systems grew fastest, rising 3.5 percent as a share of net sales.

Item 1A. Risk Factors

The following risks could materially affect the Company's business, results of \
operations and financial condition:

- The Company depends on a few contract manufacturers in Asia.
- Component shortages could delay shipments and raise costs.
- Changes in trade policy between the U.S. and other countries could raise tariffs.
- The Company faces strong price competition from larger rivals.""",
    """Global economic conditions could reduce demand. Consumers tend to delay purchases \
of home equipment when inflation is high or when they expect a downturn. A stronger \
U.S. dollar lowers the value of sales made in other currencies, and the Company hedges \
only part of that exposure.

Item 7. Management's Discussion and Analysis of Financial Condition and Results of \
Operations

Net sales rose 6 percent to $2.4 billion in fiscal 2023. Higher unit sales of mesh \
systems more than offset lower average selling prices for routers. Gross margin \
improved to 38.2 percent from 36.9 percent, mainly because freight costs fell.

Operating expenses grew 4 percent. Research and development spending rose as the \
Company hired engineers for its next generation of products, while selling expenses \
were flat. Net sales by region were as follows (in millions):""",
)


LIQUIDITY = """Liquidity and Capital Resources

Cash and cash equivalents were $610 million at year end. The Company believes that its \
cash, together with cash from operations and its unused credit line, will cover its \
needs for at least the next 12 months."""


def annual_report() -> list[Block]:
    first, second = ANNUAL_REPORT_PAGES
    report_table = (
        "[TABLE 1]\n| Region | 2023 | 2022 |\n| --- | --- | --- |\n"
        "| Americas | 1,310 | 1,240 |\n| Europe | 690 | 660 |\n| Asia | 400 | 365 |\n"
        "[END TABLE]"
    )
    return [
        Block("text", first, page=1),
        Block("text", second, page=2),
        Block("table", report_table, page=2, table_number=1),
        Block("text", LIQUIDITY, page=3),
    ]


def test_an_annual_report_is_chunked_by_section_with_clean_sentences() -> None:
    chunks = chunk_document(annual_report(), size=600, overlap=120)
    prose = [chunk for chunk in chunks if not chunk.is_table]

    starts = [chunk.text.split("\n", 1)[0] for chunk in prose if chunk.overlap_chars == 0]
    assert "Item 1A. Risk Factors" in starts
    assert any(start.startswith("Item 7.") for start in starts)
    for chunk in prose:
        assert len(chunk.text) <= 600
        assert re.search(r"[.:]\Z", chunk.text) or chunk.text.endswith("rivals.")
        assert not chunk.text.endswith(("U.S.", "Inc.", "3."))
        assert chunk.quality >= 0.7, chunk.text

    risk = next(chunk for chunk in prose if chunk.text.startswith("Item 1A."))
    assert risk.heading == "Item 1A. Risk Factors" and risk.page == 1
    spanning = [chunk for chunk in prose if chunk.page != chunk.page_end]
    assert all((chunk.page, chunk.page_end) == (1, 2) for chunk in spanning)

    [table_chunk] = [chunk for chunk in chunks if chunk.is_table]
    assert table_chunk.heading is not None and table_chunk.heading.startswith("Item 7.")
    assert table_chunk.quality == 1.0
    assert chunks[-1].heading == "Liquidity and Capital Resources"
    assert chunks[-1].overlap_chars == 0
