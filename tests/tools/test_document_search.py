"""Document search on a real Postgres with pgvector: chunks stored with their embeddings and
filter fields, found by the fused vector and keyword rankings, filtered by company, form and
fiscal year without starving the vector ranking, and cited by document and page."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date

import asyncpg
import pytest
from openai import OpenAI

from services.answerer.passages import compose_passages_answer
from services.ingest.document_model import Block, ParsedDocument
from services.ingest.document_store import (
    EmbeddingDimensionMismatch,
    content_digest,
    store_document,
)
from services.ingest.documents import glossary_to_embed
from services.ingest.glossary import glossary_documents
from services.tools.document_search import (
    DocumentSearch,
    catalog_words,
    keyword_query,
    rare_words,
    search_filters,
)
from services.validator.checking import check_answer
from shared.db import create_pool
from shared.embeddings import Embedder, MiniLMEmbedder, OpenAIEmbedder
from shared.identity import LOCAL_USER
from shared.tools import SearchDocumentsArgs
from tests.conftest import Servers
from tests.openai_stand_in import OpenAIStandIn

# Text written for these tests, shaped like a 10-K's risk factors and notes.
SUPPLY_RISK = (
    "The Company depends on component suppliers in Asia. A disruption at a single supplier "
    "of custom displays could delay shipments of iPhone and lower net sales in fiscal {year}."
)
EMPLOYEES = (
    "As of the end of fiscal {year}, the Company had approximately {count} full-time employees."
)
FILLER = (
    "The Company's retail stores offer workshops on photography and music. Store teams host "
    "sessions for schools and small businesses. Topic {n} covers store operations."
)


def annual_report(year: int, employees: str, pages: int = 3) -> ParsedDocument:
    blocks = [
        Block(
            "text",
            "Item 1A. Risk Factors\n" + SUPPLY_RISK.format(year=year),
            page=1,
            heading="Item 1A. Risk Factors",
        ),
        Block(
            "text",
            "Human Capital\n" + EMPLOYEES.format(year=year, count=employees),
            page=2,
            heading="Human Capital",
        ),
        Block(
            "table",
            f"[TABLE 1]\n| | {year} | {year - 1} |\n| --- | --- | --- |\n"
            "| Net sales | 394,328 | 365,817 |\n| Cost of sales | 223,546 | 212,981 |\n[END TABLE]",
            page=3,
            table_number=1,
        ),
    ]
    return ParsedDocument(
        title=f"Apple 10-K FY{year}",
        doc_type="pdf",
        blocks=blocks[:pages],
        page_count=pages,
        nonempty_page_count=pages,
        symbol="AAPL",
        company="Apple",
        form="10-K",
        fiscal_year=year,
        period_end=date(year, 9, 24),
        source_name=f"APPLE_{year}_10K.pdf",
        source_url=f"https://www.sec.gov/example/{year}",
    )


@pytest.fixture
async def pool(database: str) -> AsyncIterator[asyncpg.Pool]:
    created = await create_pool(database, min_size=1, max_size=2)
    try:
        yield created
    finally:
        await created.close()


async def store(
    pool: asyncpg.Pool,
    embedder: Embedder,
    document: ParsedDocument,
    collection: str = "filings",
    size: int = 1000,
) -> str:
    digest = content_digest(repr(document).encode())
    stored = await store_document(
        pool, embedder, document, collection=collection, digest=digest, size=size, overlap=0
    )
    return stored.document_id


async def test_the_embedding_column_follows_the_embedder_and_gets_an_ivfflat_index(
    pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    await store(pool, minilm, annual_report(2022, "164,000"))

    typmod = await pool.fetchval(
        "SELECT atttypmod FROM pg_attribute "
        "WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'"
    )
    index = await pool.fetchval(
        "SELECT indexdef FROM pg_indexes WHERE indexname = 'chunks_embedding_ivfflat'"
    )
    assert typmod == minilm.dimensions == 384
    assert "ivfflat" in index and "vector_cosine_ops" in index


async def test_storing_the_same_document_again_replaces_its_chunks(
    pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    first = await store(pool, minilm, annual_report(2022, "164,000"))
    chunks = await pool.fetchval("SELECT count(*) FROM chunks")
    second = await store(pool, minilm, annual_report(2022, "164,000"))

    assert first == second
    assert chunks == 2  # the two short sections of prose in one chunk, and the table
    assert await pool.fetchval("SELECT count(*) FROM chunks") == 2
    assert await pool.fetchval("SELECT count(*) FROM documents") == 1


async def test_a_fiscal_year_filter_returns_only_that_years_passages(
    pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    for year, count in ((2020, "147,000"), (2021, "154,000"), (2022, "164,000")):
        await store(pool, minilm, annual_report(year, count))
    search = DocumentSearch(minilm)

    result = await search.search(
        pool,
        SearchDocumentsArgs(query="How many employees did Apple have?", fiscal_year=2021),
    )

    assert result.passages
    assert {p.fiscal_year for p in result.passages} == {2021}
    assert "154,000" in result.passages[0].text
    assert (result.passages[0].page, result.passages[0].page_end) == (1, 2)
    assert result.sources[0].label == "Apple's 10-K for FY2021, pages 1–2"


async def test_a_narrow_filter_still_gets_vector_hits_from_a_large_index(
    pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    # Hundreds of chunks closer to the query in one year, two in the year asked for: the
    # index scan's first candidates (ef_search 100) are all filtered out, and the iterative
    # scan keeps reading until the filter lets rows through.
    crowd = ParsedDocument(
        title="Store operations",
        doc_type="txt",
        blocks=[Block("text", FILLER.format(n=n)) for n in range(300)],
        symbol="AAPL",
        company="Apple",
        form="10-K",
        fiscal_year=2019,
    )
    await store(pool, minilm, crowd, size=200)
    await store(pool, minilm, annual_report(2022, "164,000"))
    assert await pool.fetchval("SELECT count(*) FROM chunks WHERE fiscal_year = 2019") >= 300
    search = DocumentSearch(minilm)

    result = await search.search(
        pool, SearchDocumentsArgs(query="store workshops for schools", fiscal_year=2022, limit=5)
    )

    assert len(result.passages) == 2  # every chunk of fiscal 2022
    assert {p.fiscal_year for p in result.passages} == {2022}


async def test_keywords_and_meaning_both_rank_and_a_table_is_one_passage(
    pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    await store(pool, minilm, annual_report(2022, "164,000"))
    search = DocumentSearch(minilm)

    result = await search.search(pool, SearchDocumentsArgs(query="net sales and cost of sales"))

    table = next(p for p in result.passages if p.is_table)
    assert table.text.startswith("[TABLE 1]") and table.text.endswith("[END TABLE]")
    assert "394,328" in table.text


async def test_a_document_named_in_the_question_is_found_in_the_catalog(
    pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    course = ParsedDocument(
        title="MCP: Build Rich-Context AI Apps",
        doc_type="course",
        blocks=[
            Block("text", "Servers expose tools and resources to a client.", heading="Lesson 1"),
        ],
    )
    await store(pool, minilm, course, collection="courses")
    await store(pool, minilm, annual_report(2022, "164,000"))
    search = DocumentSearch(minilm)

    found = await search.search(
        pool, SearchDocumentsArgs(query="what do servers expose", collection="MCP course")
    )
    unknown = await search.search(
        pool, SearchDocumentsArgs(query="anything", collection="the knitting course")
    )

    assert [p.title for p in found.passages] == ["MCP: Build Rich-Context AI Apps"]
    assert unknown.passages == [] and "knitting" in unknown.missing[0]


async def test_a_quoted_answer_passes_validation_and_cites_pages(
    pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    await store(pool, minilm, annual_report(2022, "164,000"))
    question = "How many full-time employees did Apple have in fiscal 2022?"
    result = await DocumentSearch(minilm).search(
        pool, SearchDocumentsArgs(query=question, symbols=["AAPL"], fiscal_year=2022)
    )

    text, citations = compose_passages_answer(question, result.passages, result.sources)
    validation = check_answer(
        text, [], citations, result.sources, [p.text for p in result.passages]
    )

    lead, quote = text.splitlines()[:2]
    assert lead == "Approximately 164,000 full-time employees [1]."
    assert quote.startswith("[1] Apple's 10-K for FY2022, pages 1–2")
    assert "164,000" in quote
    assert citations[0].page == 1
    assert validation.passed, validation.issues


def test_a_number_not_in_any_passage_fails_and_a_marker_past_the_citations_is_critical() -> None:
    passage = "The Company had approximately 164,000 full-time employees."
    validation = check_answer("It had 200,000 employees [2].", [], [], [], [passage])

    assert not validation.passed and validation.severity == "critical"
    assert {issue.kind for issue in validation.issues} == {"number", "citation"}


def test_the_keyword_query_keeps_topic_words_only() -> None:
    assert keyword_query("What did Apple say about supply-chain risk?") == (
        "apple | supply | chain | risk"
    )
    assert keyword_query("'; DROP TABLE chunks; --") == "drop | table | chunks"


def test_a_document_name_is_read_as_its_distinctive_words() -> None:
    assert catalog_words("Apple's 2021 annual report") == ["apple", "2021", "10-k"]
    assert catalog_words("the MCP course") == ["mcp"]


async def test_the_glossary_is_loaded_at_start_and_not_embedded_again(servers: Servers) -> None:
    shared = await create_pool(servers.postgres.dsn, min_size=1, max_size=1)
    try:
        held = await shared.fetchval(
            "SELECT count(*) FROM documents WHERE collection = 'glossary' AND status = 'ready'"
        )
        pending = await glossary_to_embed(shared)
    finally:
        await shared.close()

    assert held == len(glossary_documents())
    assert pending == []


async def test_an_openai_compatible_embedder_sets_the_dimension_and_finds_passages(
    pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    async with OpenAIStandIn([]) as server:
        client = OpenAI(api_key="test", base_url=server.base_url, max_retries=0)
        try:
            embedder = OpenAIEmbedder(client, "text-embedding-3-small", 64, batch_size=2)
            await store(pool, embedder, annual_report(2022, "164,000"))
            result = await DocumentSearch(embedder).search(
                pool, SearchDocumentsArgs(query="full-time employees Human Capital")
            )
        finally:
            client.close()
        typmod = await pool.fetchval(
            "SELECT atttypmod FROM pg_attribute "
            "WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'"
        )
        with pytest.raises(EmbeddingDimensionMismatch, match="64 dimensions"):
            await store(pool, minilm, annual_report(2021, "154,000"))

    assert typmod == 64
    assert all(r["dimensions"] == 64 for r in server.embedding_requests)
    assert len(server.embedding_requests) >= 2  # batches of two
    assert "164,000" in result.passages[0].text


async def test_a_document_without_a_fiscal_year_is_filtered_by_the_years_its_passages_name(
    pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    notes = ParsedDocument(
        title="Analyst notes",
        doc_type="md",
        blocks=[
            Block("text", "In fiscal 2021 the company opened new stores.", heading="2021"),
            Block("text", "Over 2019 the store count was flat.", heading="2019"),
        ],
    )
    await store(pool, minilm, notes, collection="uploads", size=60)
    search = DocumentSearch(minilm)

    found = await search.search(pool, SearchDocumentsArgs(query="stores", fiscal_year=2021))

    assert [p.text for p in found.passages] == ["In fiscal 2021 the company opened new stores."]


def test_the_keyword_query_adds_the_filings_wording_and_leaves_out_what_filters_hold() -> None:
    query = "How many holders of record did Apple have in fiscal 2024?"

    assert keyword_query(query, filtered={"apple", "2024", "fiscal"}) == (
        "many | holders | record | have | shareholders | stockholders"
    )
    assert "apple" in keyword_query(query)  # without filters the name still ranks


async def test_an_upload_is_searched_for_its_owner_only_and_public_filings_for_everyone(
    pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    await store(pool, minilm, annual_report(2021, "154,000"))  # ingested by finq: public
    forged = ParsedDocument(
        title="Apple 10-K (my copy)",
        doc_type="txt",
        blocks=[Block("text", "Apple had 999,999 full-time employees in fiscal 2021.")],
        symbol="AAPL",
        company="Apple Inc.",
        form="10-K",
        fiscal_year=2021,
        source_name="apple-10k.txt",
    )
    digest = content_digest(b"forged")
    await store_document(
        pool, minilm, forged, collection="uploads", digest=digest, overlap=0, user_id="mallory"
    )
    search = DocumentSearch(minilm)
    question = SearchDocumentsArgs(query="How many employees did Apple have?", fiscal_year=2021)

    theirs = await search.search(pool, question, user_id="mallory")
    mine = await search.search(pool, question, user_id="alice")

    assert any("999,999" in p.text for p in theirs.passages)
    assert mine.passages and not any("999,999" in p.text for p in mine.passages)
    assert any("154,000" in p.text for p in mine.passages)
    # Even to its uploader, a file that calls itself Apple's 10-K is cited as their upload,
    # with no link to the filing it claims to be; finq's own filings keep their names.
    labels = {p.source_id: s.label for p, s in zip(theirs.passages, theirs.sources, strict=True)}
    forged_labels = [labels[p.source_id] for p in theirs.passages if "999,999" in p.text]
    assert forged_labels == ["your upload “Apple 10-K (my copy)”"]
    assert all(p.link is None for p in theirs.passages if not p.public)
    assert all("10-K" in s.label for p, s in zip(mine.passages, mine.sources, strict=True))


REVENUE_PROSE = (
    "Revenue increased driven by cloud revenue. Product revenue and service revenue grew. "
    "Topic {n} explains revenue recognition."
)
PRODUCT_TABLE = (
    "[TABLE 5]\n| Year Ended June 30, | 2021 | 2020 |\n| --- | --- | --- |\n"
    "| Gaming | 15,370 | 11,575 |\n| LinkedIn | 10,289 | 8,077 |\n[END TABLE]"
)


async def test_a_word_most_searched_passages_hold_does_not_outrank_the_rare_word_asked(
    pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    # Forty passages repeat "revenue"; one table names LinkedIn. ts_rank_cd knows no word's
    # rarity, so with "revenue" in the keyword query the repeating passages ranked first.
    filing = ParsedDocument(
        title="Microsoft 10-K FY2021",
        doc_type="pdf",
        blocks=[Block("text", REVENUE_PROSE.format(n=n), page=n + 1) for n in range(40)]
        + [Block("table", PRODUCT_TABLE, page=95, table_number=5)],
        symbol="MSFT",
        company="Microsoft",
        form="10-K",
        fiscal_year=2021,
    )
    await store(pool, minilm, filing, size=200)
    search = DocumentSearch(minilm)

    result = await search.search(
        pool,
        SearchDocumentsArgs(
            query="How much revenue did LinkedIn bring Microsoft?", symbols=["MSFT"], limit=3
        ),
    )

    assert any("10,289" in p.text for p in result.passages)
    async with pool.acquire() as conn:
        words = await rare_words(
            conn,
            "revenue | linkedin",
            lambda first: search_filters(
                SearchDocumentsArgs(query="x", symbols=["MSFT"]), None, first, LOCAL_USER
            ),
        )
    assert words == "linkedin"


SEGMENT_INTRO = "Operating income (loss) by segment is as follows (in millions):"
SEGMENT_TABLE = (
    "[TABLE 7]\n| | 2016 | 2017 |\n| --- | --- | --- |\n| North America | 2,361 | 2,837 |\n"
    "| International | (1,283) | (3,062) |\n| AWS | 3,108 | 4,331 |\n[END TABLE]"
)
SEGMENT_PROSE = (
    "Segment results reflect the way the business is run. Topic {n}: operating expenses of "
    "each segment include fulfillment, marketing and technology costs allocated by usage."
)


async def test_a_passage_that_introduces_a_table_brings_the_table_after_it(
    pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    # The chunker keeps a table a chunk of its own, so "… by segment is as follows:" ends
    # the chunk before it; a search that finds the sentence must show what it introduces.
    filing = ParsedDocument(
        title="Amazon 10-K FY2017",
        doc_type="pdf",
        blocks=[Block("text", SEGMENT_PROSE.format(n=n), page=n + 1) for n in range(12)]
        + [
            Block("text", "Operating Income (Loss)\n" + SEGMENT_INTRO, page=25),
            Block("table", SEGMENT_TABLE, page=26, table_number=7),
        ],
        symbol="AMZN",
        company="Amazon",
        form="10-K",
        fiscal_year=2017,
    )
    await store(pool, minilm, filing, size=200)
    search = DocumentSearch(minilm)

    result = await search.search(
        pool,
        SearchDocumentsArgs(query="segment breakdown as follows", symbols=["AMZN"], limit=3),
    )

    texts = [p.text for p in result.passages]
    intro = next(i for i, text in enumerate(texts) if text.rstrip().endswith("(in millions):"))
    assert "(3,062)" in texts[intro + 1]
    assert result.passages[intro + 1].page == 26
    # The table carries the sentence that says what it holds.
    assert (result.passages[intro + 1].caption or "").endswith(SEGMENT_INTRO)

    # A figure asked is looked for among the tables too, and the table found on its own
    # carries its introduction as well.
    asked = await search.search(
        pool,
        SearchDocumentsArgs(
            query="Amazon International segment operating loss in 2017",
            symbols=["AMZN"],
            limit=3,
        ),
    )

    table = next(p for p in asked.passages if p.is_table)
    assert "(3,062)" in table.text
    assert (table.caption or "").endswith(SEGMENT_INTRO)
    assert len(result.passages) == 3
    answer, _ = compose_passages_answer(
        "What operating loss did Amazon's International segment post in 2017?",
        result.passages,
        result.sources,
    )
    assert answer.startswith("International, 2017: (3,062)"), answer
