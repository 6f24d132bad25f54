"""Answers quoted from filings: the sentence or table row that answers the question, chosen
over every passage search returned, quoted word for word with its page; and the search lifting
the table that holds a figure asked for.

The passages here are written for these tests (a made-up company, Northwind), shaped like a
10-K's human capital section, legal proceedings and segment tables. The last tests load
half of Apple's fiscal 2024 10-K from ../shared and skip without it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from services.answerer.passages import best_quote, compose_passages_answer
from services.ingest.document_model import ParsedDocument
from services.ingest.document_parsing import parse_document
from services.ingest.documents import ingest_file
from services.tools.document_search import (
    DocumentSearch,
    FigureAsk,
    figure_ask,
    rerank_tables,
    table_match,
)
from services.validator.checking import check_answer
from shared.contracts.tool_results import Passage, Source
from shared.db import create_pool
from shared.embeddings import MiniLMEmbedder
from shared.filing_text import asks, filing_phrases, parse_table
from shared.tools import FILINGS_COLLECTION, SearchDocumentsArgs
from tests.conftest import Servers, own_database
from tests.helpers import require_shared_data

PEOPLE = (
    "Our People\n\n"
    "Northwind believes its employees are central to its success and invests in their "
    "growth. As of June 30, 2031, Northwind had approximately 41,500 full-time equivalent "
    "employees. Employees may join mentoring circles."
)
RISK = (
    "The Company depends on the skills of its employees, and the loss of key employees "
    "could harm the Company's business and its results in fiscal 2031."
)
RECORD_HOLDERS = (
    "Northwind's common stock is traded on the Nasdaq Global Select Market under the symbol "
    "NWND. As of August 1, 2031, there were 12,345 shareholders of record."
)
LAWSUIT = (
    "Harbor Freight Lines\n\n"
    "Harbor Freight Lines filed a lawsuit against the Company alleging breach of a shipping "
    "contract. On March 3, 2031, the court ruled in favor of the Company on all counts. "
    "Harbor Freight Lines has appealed the ruling."
)
REGIONS = (
    "[TABLE 4]\n"
    "|  | 2031 | Change | 2030 |\n"
    "| --- | --- | --- | --- |\n"
    "| Americas | $10,100 | 3% | $9,800 |\n"
    "| Asia Pacific (1) | 5,200 | (8)% | 5,650 |\n"
    "| Total net sales | $15,300 | 1% | $15,450 |\n"
    "[END TABLE]"
)
SEGMENTS = (
    "[TABLE 9]\n"
    "|  | 2031 | 2030 | 2029 |\n"
    "| --- | --- | --- | --- |\n"
    "| Americas: |  |  |  |\n"
    "| Net sales | $10,100 | $9,800 | $9,100 |\n"
    "| Operating income | $4,040 | $3,700 | $3,300 |\n"
    "| Asia Pacific: |  |  |  |\n"
    "| Net sales | $5,200 | $5,650 | $5,500 |\n"
    "| Operating income | $2,090 | $2,310 | $2,250 |\n"
    "[END TABLE]"
)
OLD_SEGMENTS = SEGMENTS.replace("2031", "2028").replace("2030", "2027").replace("2029", "2026")


def passage(number: int, text: str, page: int, *, heading: str | None = None) -> Passage:
    return Passage(
        source_id=f"doc:northwind:{number}",
        document_id="northwind",
        title="Northwind 10-K",
        collection="filings",
        symbol="NWND",
        company="Northwind Inc.",
        form="10-K",
        fiscal_year=2031,
        period="FY2031",
        page=page,
        chunk_index=number,
        heading=heading,
        text=text,
        is_table=text.startswith("[TABLE"),
        score=0.03 - number * 0.001,
    )


def source_of(p: Passage) -> Source:
    return Source(
        source_id=p.source_id,
        label=f"Northwind's 10-K for FY2031, page {p.page}",
        form="10-K",
        fiscal_year=2031,
        page=p.page,
    )


def answer(question: str, passages: list[Passage]) -> tuple[str, list[str]]:
    """The answer, and the source ids it cites in order; checked by the validator."""
    text, citations = compose_passages_answer(question, passages, [source_of(p) for p in passages])
    validation = check_answer(
        text, [], citations, [source_of(p) for p in passages], [p.text for p in passages]
    )
    assert validation.passed, (text, validation.issues)
    return text, [c.source_id for c in citations]


def test_the_headcount_sentence_is_quoted_even_from_a_lower_passage() -> None:
    passages = [passage(0, RISK, 12), passage(1, RECORD_HOLDERS, 20), passage(2, PEOPLE, 7)]

    text, cited = answer("How many full-time equivalent employees did Northwind have?", passages)

    lead, first = text.splitlines()[:2]
    # The count asked first, read out of the quote beneath it.
    assert lead == "Approximately 41,500 full-time equivalent employees [1]."
    assert first == (
        "[1] Northwind's 10-K for FY2031, page 7: \"As of June 30, 2031, Northwind had "
        "approximately 41,500 full-time equivalent employees. Employees may join mentoring "
        'circles."'
    )
    assert cited[0] == "doc:northwind:2"


def test_a_question_in_other_words_finds_the_filings_wording() -> None:
    passages = [passage(0, PEOPLE, 7), passage(1, RECORD_HOLDERS, 20)]

    people, _ = answer("How many people work at Northwind?", passages)
    holders, _ = answer("How many holders of record does Northwind stock have?", passages)

    assert "41,500 full-time equivalent employees" in people.splitlines()[1]
    assert holders.splitlines()[0] == "12,345 shareholders of record [1]."
    assert "there were 12,345 shareholders of record" in holders.splitlines()[1]


def test_a_when_question_gets_the_sentence_with_the_date() -> None:
    passages = [passage(0, LAWSUIT, 19)]

    text, _ = answer("When did the court rule on the Harbor Freight Lines lawsuit?", passages)

    lead, quote = text.splitlines()[:2]
    assert lead == "March 3, 2031 [1]."
    assert quote.startswith(
        "[1] Northwind's 10-K for FY2031, page 19: \"On March 3, 2031, the court ruled"
    )


def test_a_segment_figure_is_the_row_under_its_group_in_the_period_asked() -> None:
    passages = [passage(0, REGIONS, 24), passage(1, SEGMENTS, 49)]

    text, cited = answer(
        "What was the operating income of Northwind's Asia Pacific segment in fiscal 2030?",
        passages,
    )

    assert cited == ["doc:northwind:1"]
    assert text.splitlines() == [
        # The asked figure first, as its row and column name it; the quote beneath.
        "Asia Pacific, Operating income, 2030: $2,310 [1].",
        "[1] Northwind's 10-K for FY2031, page 49, from the filing's table: "
        "Asia Pacific, Operating income, 2030: $2,310",
        "|  | 2031 | 2030 | 2029 |",
        "| --- | --- | --- | --- |",
        "| Asia Pacific: |  |  |  |",
        "| Operating income | $2,090 | $2,310 | $2,250 |",
    ]


def test_a_region_net_sales_question_gets_its_row_not_the_total() -> None:
    passages = [passage(0, REGIONS, 24)]

    text, _ = answer("Asia Pacific net sales 2031", passages)

    assert text.splitlines()[0] == "Asia Pacific, 2031: 5,200 [1]."
    assert text.splitlines()[1].endswith("from the filing's table: Asia Pacific, 2031: 5,200")
    assert "| Asia Pacific (1) | 5,200 | (8)% | 5,650 |" in text
    assert "Total net sales" not in text


def test_a_row_asked_to_compare_two_years_is_read_in_both_and_says_which_way_it_moved() -> None:
    passages = [passage(1, SEGMENTS, 49)]

    text, _ = answer(
        "Did Northwind's Asia Pacific operating income decline in 2031 compared to 2030? "
        "Give both numbers.",
        passages,
    )

    assert text.splitlines()[0] == (
        "Yes: Asia Pacific, Operating income fell from $2,310 in 2030 to $2,090 in 2031 [1]. "
        "Asia Pacific, Operating income, 2031: $2,090; 2030: $2,310 [1]."
    )


def test_a_yes_or_no_asked_the_other_way_is_answered_no_with_both_figures() -> None:
    text, _ = answer(
        "Were Americas net sales lower in 2031 than in 2030?", [passage(0, REGIONS, 24)]
    )

    assert text.splitlines()[0].startswith(
        "No: Americas rose from $9,800 in 2030 to $10,100 in 2031 [1]."
    )


def test_a_change_asked_of_one_year_sets_it_against_the_year_before() -> None:
    text, _ = answer("How did Americas net sales change yoy in 2031?", [passage(0, REGIONS, 24)])

    assert text.splitlines()[0].startswith(
        "Americas rose from $9,800 in 2030 to $10,100 in 2031 [1]."
    )


def test_a_table_without_the_period_asked_is_not_quoted() -> None:
    passages = [passage(0, OLD_SEGMENTS, 60), passage(1, SEGMENTS, 49)]

    text, cited = answer("Americas operating income in 2031", passages)

    assert cited == ["doc:northwind:1"]
    assert "Americas, Operating income, 2031: $4,040" in text


def test_at_most_three_quotes_each_citing_its_own_passage() -> None:
    passages = [passage(n, PEOPLE.replace("41,500", f"4{n},500"), n + 1) for n in range(5)]

    text, cited = answer("How many employees did Northwind have?", passages)

    assert len(cited) <= 3
    lead, *quotes = text.splitlines()
    assert lead == "Approximately 40,500 full-time equivalent employees [1]."
    assert [line[:3] for line in quotes] == [f"[{n}]" for n in range(1, len(cited) + 1)]


def test_best_quote_reads_one_passage() -> None:
    quote = best_quote("Where did the Harbor Freight Lines lawsuit end up?", passage(0, LAWSUIT, 3))

    assert quote.startswith("Harbor Freight Lines filed a lawsuit against the Company")


def test_a_table_is_read_with_its_header_and_the_group_row_above_each_row() -> None:
    table = parse_table(SEGMENTS)

    assert table is not None and table.header is not None
    assert table.header.values == ("2031", "2030", "2029")
    operating = [row for row in table.rows if row.label == "Operating income"]
    assert [row.group.label for row in operating if row.group] == ["Americas", "Asia Pacific"]
    assert all(row.numeric for row in operating)


def test_how_a_question_asks_is_read_from_its_words() -> None:
    assert asks("How many employees did Apple have?") == {"figure", "count"}
    assert asks("Greater China net sales 2024") == {"figure"}
    assert asks("When did the DOJ file its lawsuit?") == {"date"}
    assert "shareholders of record" in filing_phrases("How many holders of record are there?")
    assert "remaining performance obligations" in filing_phrases("What is the backlog?")


def test_the_table_holding_the_figure_asked_matches_and_others_do_not() -> None:
    ask = figure_ask("What were Northwind's Asia Pacific net sales in fiscal 2031?", {"northwind"})

    assert ask == FigureAsk(frozenset({"asia", "pacif", "net", "sal"}), (2031,))
    assert table_match(ask, REGIONS, "Segment Operating Performance") == 1.0
    assert table_match(ask, OLD_SEGMENTS, None) == 0.0  # not the year asked
    assert table_match(ask, PEOPLE, None) == 0.0
    assert figure_ask("What risks does Northwind describe?", set()) is None


def test_reranking_lifts_the_table_and_keeps_the_fused_order_otherwise() -> None:
    rows = [
        {"score": 0.030, "is_table": False, "text": RISK, "company": "Northwind"},
        {"score": 0.029, "is_table": False, "text": PEOPLE, "company": "Nw"},
        {"score": 0.020, "is_table": True, "text": REGIONS, "company": "Nw"},
    ]
    rows = [{**row, "heading": None, "symbol": "NWND"} for row in rows]

    figure = rerank_tables("Asia Pacific net sales in 2031", rows, limit=3)
    prose = rerank_tables("What do employees do?", rows, limit=2)

    assert [row["text"] for _, row in figure] == [REGIONS, RISK, PEOPLE]
    assert [row["text"] for _, row in prose] == [RISK, PEOPLE]


def test_reranking_lifts_the_passage_that_answers_the_count_asked_squarely() -> None:
    rows = [
        {"score": 0.030, "is_table": False, "text": RISK},
        {"score": 0.029, "is_table": False, "text": RECORD_HOLDERS},
        {"score": 0.020, "is_table": False, "text": PEOPLE},
    ]
    rows = [{**row, "heading": None, "symbol": "NWND", "company": "Northwind"} for row in rows]

    ranked = rerank_tables("Approximately how many staff did Northwind have?", rows, limit=3)

    assert ranked[0][1]["text"] == PEOPLE


# --- Apple's fiscal 2024 10-K, loaded into a database of this module's own -----------------

# Half of its 59 pages (about 150 of its 290 blocks), as embedding the whole filing cost a
# minute of CPU: the business section with human capital (1-8), the MD&A with its segment
# table (20-30) and the notes with the segment note (45-50). Both Greater China tables and
# the pages around each stay in, so search still chooses between them and their neighbours.
APPLE_FY2024_PAGES = frozenset({*range(1, 9), *range(20, 31), *range(45, 51)})


async def parse_kept_pages(path: Path, content_type: str | None) -> ParsedDocument:
    document = await asyncio.to_thread(parse_document, path, content_type=content_type)
    kept = [block for block in document.blocks if block.page in APPLE_FY2024_PAGES]
    return dataclasses.replace(document, blocks=kept)


@pytest.fixture(scope="module")
async def apple_fy2024(servers: Servers, minilm: MiniLMEmbedder) -> AsyncIterator[asyncpg.Pool]:
    path = require_shared_data("filings", "AAPL", "aapl-10-k-2024-11-01.html")
    async with own_database(servers, "t_document_answers_apple") as dsn:
        pool = await create_pool(dsn, min_size=1, max_size=2)
        try:
            await ingest_file(
                pool,
                minilm,
                path,
                collection=FILINGS_COLLECTION,
                folder_symbol="AAPL",
                parse=parse_kept_pages,
            )
            yield pool
        finally:
            await pool.close()


async def ask_apple_fy2024(
    pool: asyncpg.Pool, minilm: MiniLMEmbedder, question: str
) -> tuple[str, list[int | None]]:
    args = SearchDocumentsArgs(query=question, symbols=["AAPL"], forms=["10-K"], fiscal_year=2024)
    result = await DocumentSearch(minilm).search(pool, args)
    text, citations = compose_passages_answer(question, result.passages, result.sources)
    validation = check_answer(
        text, [], citations, result.sources, [p.text for p in result.passages]
    )
    assert validation.passed, (text, validation.issues)
    return text, [c.page for c in citations]


async def test_apples_headcount_is_quoted_with_its_page(
    apple_fy2024: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    text, pages = await ask_apple_fy2024(
        apple_fy2024, minilm, "How many full-time equivalent employees did Apple have?"
    )

    lead, first = text.splitlines()[:2]
    assert lead == "Approximately 164,000 full-time equivalent employees [1]."
    assert first.startswith("[1] Apple Inc.'s 10-K for FY2024, page 6, under “Human Capital”:")
    assert "As of September 28, 2024, the Company had approximately 164,000 full-time" in first
    assert pages[0] == 6


async def test_apples_greater_china_net_sales_come_from_the_segment_table(
    apple_fy2024: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    text, _ = await ask_apple_fy2024(
        apple_fy2024, minilm, "What were Apple's Greater China net sales in fiscal 2024?"
    )

    lead, first = text.splitlines()[:2]
    assert lead.startswith("Greater China") and "66,952 [1]" in lead
    assert "from the filing's table: " in first
    assert first.endswith("2024: $66,952") or first.endswith("2024: 66,952")
    assert "66,952" in text.splitlines()[1:][-1]  # the row itself, under its header


def test_two_quotes_from_one_passage_share_its_citation_line() -> None:
    text = (
        "Northwind had approximately 41,500 employees at the end of fiscal 2031.\n\n"
        "Store teams host workshops for schools and small businesses every month.\n\n"
        "Of its employees, approximately 9,800 worked in Northwind's retail stores."
    )

    answer_text, cited = answer("How many employees did Northwind have?", [passage(0, text, 8)])

    assert cited == ["doc:northwind:0"]
    assert answer_text == (
        "Approximately 41,500 employees [1].\n"
        "[1] Northwind's 10-K for FY2031, page 8: \"Northwind had approximately 41,500 "
        'employees at the end of fiscal 2031." … "Of its employees, approximately 9,800 '
        "worked in Northwind's retail stores.\""
    )


def test_two_things_named_from_one_table_get_a_row_each_and_the_larger_is_said_first() -> None:
    passages = [passage(0, REGIONS, 24)]

    text, cited = answer(
        "Which region had higher net sales in 2030, Americas or Asia Pacific?", passages
    )

    assert cited == ["doc:northwind:0"]
    assert text.splitlines()[0] == (
        "Americas is the larger: Asia Pacific, 2030: 5,650 [1]; Americas, 2030: $9,800 [1]."
    )
    assert "| Americas | $10,100 | 3% | $9,800 |" in text
    assert "| Asia Pacific (1) | 5,200 | (8)% | 5,650 |" in text
    assert "Total net sales" not in text


AUDIT_REPORT = (
    "In addition, we evaluated the Company's disclosure of the matter in Note 5.\n\n"
    "/s/ Harbor & Lane LLP\n\n"
    "We have served as Northwind Inc.'s auditor since 2004.\n\n"
    "Springfield, Ohio October 30, 2031"
)


def test_who_audits_is_answered_by_the_signature_beside_since_when() -> None:
    text, _ = answer(
        "Who is Northwind's independent auditor, and since what year has it served?",
        [passage(0, RISK, 12), passage(1, AUDIT_REPORT, 60)],
    )

    lead, quote = text.splitlines()[:2]
    assert lead == "Harbor & Lane LLP [1]; since 2004 [1]."
    assert "We have served as Northwind Inc.'s auditor since 2004." in quote


def test_a_sentence_off_the_topic_is_quoted_but_its_number_not_stated_as_the_answer() -> None:
    plan = (
        "Employees may buy shares through the purchase plan. Each offering period is about 24 "
        "months, divided into four purchase periods of six months."
    )

    text, _ = answer("Approximately how many employees did Northwind have?", [passage(0, plan, 64)])

    assert text.startswith("[1] Northwind's 10-K for FY2031, page 64:")
    assert "24" not in text.splitlines()[0].split(":")[0]
