"""search_documents: passages of filings and documents that answer a query, found by two
rankings fused (reciprocal rank fusion): the query's embedding against the chunks' (IVFFlat,
cosine) and its words against the chunks' `tsvector`. Filters (company, form, fiscal year
and quarter, period span, collection) apply inside both rankings, and pgvector's iterative
index scan keeps reading the index until enough filtered rows are found, so a narrow filter
does not starve the vector ranking.

A `collection` that is not a collection's name is read as a document's name ("the MCP
course", "Apple's 2021 annual report") and resolved against the catalog of documents first.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from services.tools.tool_deps import ToolDeps
from shared import vector_index
from shared.answer_spans import asked_thing, squarely_answered
from shared.change_words import GROWTH
from shared.contracts.tool_results import Passage, Source, ToolResult
from shared.db import ACT_AS_SQL
from shared.embeddings import Embedder
from shared.english import possessive
from shared.filing_text import (
    REQUEST_WORDS,
    MarkdownTable,
    asked_wordings,
    asked_years,
    asks,
    header_names_years,
    idf,
    parse_table,
    period_column,
    plain,
    terms,
    words,
)
from shared.identity import LOCAL_USER
from shared.tools import SEARCH_DOCUMENTS, SearchDocumentsArgs

# How far down each ranking fusion looks, and RRF's damping constant (the usual 60).
CANDIDATES = 50
RRF_K = 60
# The fused ranking's best rows that table-aware reranking may reorder.
RERANK_DEPTH = 50
# What a table holding the figure asked for gains: a first place in one ranking (1 / (60 +
# 1)), times the share of the question's words its row, heading and header hold.
TABLE_BOOST = 1.0 / (RRF_K + 1)
# What a passage holding a filing's wording of the answer to a common ask gains ("…there
# were 23,301 shareholders of record" for a question about the count of record holders).
WORDING_BOOST = 1.0 / (RRF_K + 1)
# What prose gains with a sentence that answers the thing asked squarely: on its topic, and
# holding the kind of answer asked ("…had a total of 463 retail stores" for how many stores),
# where a passage that repeats the topic's words ("retail stores require investment…") or
# the ask's ("employees may buy shares…") does not.
ANSWER_BOOST = 1.0 / (RRF_K + 1)
# The kinds of answer prose states; a figure is a table's, lifted by TABLE_BOOST.
_STATED_KINDS = frozenset({"count", "date", "name", "place"})

_WORD_RE = re.compile(r"[a-z0-9]+")
# Words that only say "find me something" carry no topic; the rest are OR-ed, so a passage
# with more of the question's words ranks higher without needing all of them.
_QUERY_NOISE = frozenset(
    {
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "did",
        "does",
        "do",
        "is",
        "are",
        "was",
        "were",
        "say",
        "said",
        "says",
        "tell",
        "me",
        "about",
        "describe",
        "described",
        "list",
        "listed",
        "its",
        "their",
        "the",
        "a",
        "an",
        "of",
        "in",
        "on",
        "for",
        "to",
        "and",
        "or",
        "from",
        "with",
        "by",
        "as",
        "at",
        "it",
        "this",
        "that",
        "these",
        "those",
        "company",
        "company's",
        "report",
        "filing",
        "document",
        "annual",
        "quarterly",
        "10",
        "k",
        "q",
    }
)

# The vector ranking: the $3 chunks nearest the query's embedding $1 that the filters let
# through (bench/search_scale.py measures this query on its own, and its recall).
NEAREST_SQL = """
        SELECT id, embedding <=> $1 AS distance FROM chunks c
        WHERE embedding IS NOT NULL AND {where}
        ORDER BY embedding <=> $1 LIMIT $3
"""
SEARCH_SQL = (
    """
WITH vector_hits AS (
    SELECT id, row_number() OVER (ORDER BY distance) AS rank
    FROM ("""
    + NEAREST_SQL
    + """    ) nearest
), keyword_hits AS (
    SELECT id, row_number() OVER (ORDER BY weight DESC, id) AS rank
    FROM (
        SELECT id, ts_rank_cd(tsv, query) AS weight
        FROM chunks c, to_tsquery('english', $2) query
        WHERE $2 <> '' AND {matches} AND {where}
        ORDER BY weight DESC LIMIT $3
    ) matching
), table_hits AS (
    SELECT id, row_number() OVER (ORDER BY weight DESC, id) AS rank
    FROM (
        SELECT id, ts_rank_cd(tsv, query) AS weight
        FROM chunks c, to_tsquery('english', $7) query
        WHERE $6::float8 > 0 AND $7 <> '' AND c.is_table AND {matches} AND {where}
        ORDER BY weight DESC LIMIT $3
    ) matching
), fused AS MATERIALIZED (
    -- Materialized, so its id is a plain column: under the services' row-level security,
    -- PostgreSQL would not look chunks up by "c.id = coalesce(v.id, k.id, t.id)" through
    -- the primary key (the expression is not known leakproof) and read every chunk instead
    -- (24 ms at 30,000 chunks, bench/search_scale.py).
    SELECT id, coalesce(1.0 / ($5 + v.rank), 0) + coalesce(1.0 / ($5 + k.rank), 0)
               + $6::float8 * coalesce(1.0 / ($5 + t.rank), 0) AS score
    FROM vector_hits v FULL OUTER JOIN keyword_hits k USING (id)
         FULL OUTER JOIN table_hits t USING (id)
)
SELECT f.score, c.document_id, c.chunk_index, c.page, c.page_end, c.heading, c.text, c.is_table,
       c.collection, c.symbol, c.form, c.fiscal_year, c.fiscal_quarter, c.period_end,
       d.title, d.company, d.source_url, d.source_name, d.filed, d.doc_type, d.public
FROM fused f JOIN chunks c ON c.id = f.id JOIN documents d ON d.id = c.document_id
ORDER BY f.score DESC, c.document_id, c.chunk_index
LIMIT $4
"""
)

# How a keyword ranking matches its words. Among few searched chunks (one company's), as
# a condition the keyword index cannot serve: PostgreSQL then reads those chunks through the
# filters' B-tree and matches each, where with the index it read every chunk of the table
# that holds a word ("retail": 132,000 of a million, 29 ms) to intersect them with the
# company's 2,000.
MATCH = "tsv @@ query"
FEW_MATCH = "(tsv @@ query) IS TRUE"

# The table a passage introduces ("Operating income (loss) by segment is as follows (in
# millions):"): the chunker keeps a table a chunk of its own, so the sentence that says what
# it holds ends the chunk before. One of the next two chunks, the first that is a table.
INTRODUCED_TABLES_SQL = """
SELECT DISTINCT ON (c.document_id, i.chunk_index)
       i.chunk_index AS introduced_by, c.document_id, c.chunk_index, c.page, c.page_end,
       c.heading, c.text, c.is_table, c.collection, c.symbol, c.form, c.fiscal_year,
       c.fiscal_quarter, c.period_end, d.title, d.company, d.source_url, d.source_name,
       d.filed, d.doc_type, d.public
FROM unnest($1::uuid[], $2::int[]) AS i(document_id, chunk_index)
JOIN chunks c ON c.document_id = i.document_id
             AND c.chunk_index BETWEEN i.chunk_index + 1 AND i.chunk_index + 2
JOIN documents d ON d.id = c.document_id
WHERE c.is_table
ORDER BY c.document_id, i.chunk_index, c.chunk_index
"""
# A passage ending in a colon introduces what follows it, with the table's scale after the
# colon at times ("… was as follows:\n\n(In millions)").
_INTRODUCES = re.compile(r":\s*(?:\([^()\n]{1,60}\)\s*)?$")
# The chunk before each table, whose last paragraph may introduce it.
CHUNKS_BEFORE_SQL = """
SELECT i.document_id, i.chunk_index, c.text
FROM unnest($1::uuid[], $2::int[]) AS i(document_id, chunk_index)
JOIN chunks c ON c.document_id = i.document_id AND c.chunk_index = i.chunk_index - 1
WHERE NOT c.is_table
"""
_PARAGRAPHS = re.compile(r"\n\s*\n")
_SCALE_NOTE = re.compile(r"\([^()\n]{1,60}\)")
MAX_CAPTION_CHARS = 400


def introduction(text: str) -> str | None:
    """The last paragraph of a prose chunk when it introduces what follows ("The following
    table presents iPhone net sales…:"), else None."""
    paragraphs = _PARAGRAPHS.split(text.strip())
    last = paragraphs[-1].strip()
    if _SCALE_NOTE.fullmatch(last) and len(paragraphs) > 1:
        # "… was as follows:" with the table's scale, "(In millions)", on a line of its own.
        last = f"{paragraphs[-2].strip()} {last}"
    if not _INTRODUCES.search(last) or len(last) > MAX_CAPTION_CHARS:
        return None
    return " ".join(last.split())


async def table_captions(conn: Any, rows: list[Any]) -> dict[tuple[Any, int], str]:
    """Each table row's introducing sentence, by (document id, chunk index): the chunker
    keeps a table a chunk of its own, so what it is about ("iPhone") may be said only in
    the sentence before it, whose chunk is another."""
    tables = [row for row in rows if row["is_table"]]
    if not tables:
        return {}
    before = await conn.fetch(
        CHUNKS_BEFORE_SQL,
        [row["document_id"] for row in tables],
        [row["chunk_index"] for row in tables],
    )
    return {
        (row["document_id"], row["chunk_index"]): caption
        for row in before
        if (caption := introduction(row["text"])) is not None
    }


# How many of the searched chunks hold each query word: the words most of them hold
# ("revenue" in a 10-K) say nothing of which chunk answers, and ts_rank_cd, which knows no
# word's rarity, would rank the chunks that repeat them above the one that names the rare
# word asked about ("LinkedIn", "Germany").
# How many of the searched chunks hold each query word: the words most of them hold
# ("revenue" in a 10-K) say nothing of which chunk answers, and ts_rank_cd, which knows no
# word's rarity, would rank the chunks that repeat them above the one that names the rare
# word asked about ("LinkedIn", "Germany"). The searched chunks are read once and every word
# matched against each: counting each word through the keyword index instead read its whole
# list of chunks over the table (85 ms for a question's words in one company's 2,000 chunks
# of a million).
WORD_COUNTS_SQL = """
WITH searched AS MATERIALIZED (
    SELECT c.tsv FROM chunks c WHERE {where} LIMIT $2
), asked AS MATERIALIZED (
    SELECT word, to_tsquery('english', word) AS query FROM unnest($1::text[]) AS word
)
SELECT a.word, (SELECT count(*) FROM searched) AS searched,
       count(*) FILTER (WHERE s.tsv @@ a.query) AS chunks
FROM asked a CROSS JOIN searched s
GROUP BY a.word
"""
# A word more than this share of the searched chunks hold is left out of the keyword query,
# when the query has rarer words.
COMMON_WORD_SHARE = 0.15
# And a word more chunks than this hold, whatever their share: the keyword ranking reads
# every chunk a word of the query matches and ts_rank_cd costs about 8 µs a chunk (plus 1.5
# to read it), so a word in 5,000 chunks costs more than the whole search may at a million
# chunks (bench/search_scale.py); and a word that common tells a chunk that answers from
# one that does not no better than the vector ranking does. When every word is as common,
# the keyword ranking is left out.
MAX_KEYWORD_CHUNKS = 1_000
# Up to this many searched chunks (by the statistics' estimate) the words are counted in
# them: 10 ms for 2,000 chunks and seven words. Over it, counting takes longer than the
# whole search may (35-65 ms for a question's words at 100,000 chunks), and the statistics'
# estimates stand in: ANALYZE's most common lexemes (migration 023 keeps 10,000 of them)
# with their shares, and for any other word less than the rarest of them holds.
COUNTED_SCOPE = 5_000
# The most searched chunks read to count words in, should the estimate have been low.
COUNTED_SCOPE_LIMIT = 2 * COUNTED_SCOPE
# How much a table's rank among the tables counts beside its ranks among all chunks, when a
# figure is asked: enough to bring a table prose outranks into view, not enough for every
# table to outrank the sentence that states the figure.
TABLE_RANK_WEIGHT = 0.5
# A 10-K states two or three years: a year with no filing of its own held is read from the
# comparative columns of the filings of the years after it.
LATER_FILING_YEARS = 2

CATALOG_SQL = "SELECT true FROM documents WHERE collection = $1 LIMIT 1"

# Documents whose title, file name or company-form-year names the phrase's words.
CATALOG_TITLES_SQL = """
SELECT id FROM documents
WHERE status = 'ready' AND (user_id IS NULL OR user_id = $2) AND (
    SELECT bool_and(
        lower(title || ' ' || coalesce(source_name, '') || ' ' || coalesce(company, '') || ' '
              || coalesce(form, '') || ' ' || coalesce(fiscal_year::text, '') || ' ' || doc_type)
        LIKE '%' || word || '%')
    FROM unnest($1::text[]) AS word
)
LIMIT 50
"""

_CATALOG_NOISE = frozenset(
    {
        "the",
        "a",
        "an",
        "its",
        "their",
        "of",
        "in",
        "on",
        "for",
        "to",
        "course",
        "courses",
        "document",
        "documents",
        "file",
        "report",
        "filing",
        "s",
    }
)
_CATALOG_SYNONYMS = {"annual": "10-k", "quarterly": "10-q"}


# How filings word what people ask by another name: the statements' titles, and the
# abbreviations analysts use for line items. Added to the keyword query, so "COGS" finds
# the "Cost of sales" row and "income statement" the CONSOLIDATED STATEMENTS OF OPERATIONS.
_FILING_WORDS: dict[str, str] = {
    "income statement": "consolidated statements operations income",
    "p&l": "consolidated statements operations income",
    "balance sheet": "consolidated balance sheets assets liabilities",
    "cash flow statement": "consolidated statements cash flows",
    "statement of cash flows": "consolidated statements cash flows",
    "cogs": "cost sales revenue",
    "capex": "payments acquisition property plant equipment",
    "sg&a": "selling general administrative",
    "r&d": "research development",
    "dpo": "accounts payable cost sales",
    "dso": "accounts receivable net sales",
    "eps": "earnings per share",
    "headcount": "employees",
    "buybacks": "repurchase",
    "buyback": "repurchase",
}
_FISCAL_YEAR_RE = re.compile(r"\bfy ?((?:19|20)?\d\d)\b")
_FILING_WORDS_RE = re.compile(
    r"(?<![\w&])(" + "|".join(re.escape(k) for k in _FILING_WORDS) + r")(?![\w&])",
    re.IGNORECASE,
)


def keyword_query(text: str, filtered: Collection[str] = ()) -> str:
    """The query's topic words OR-ed for `to_tsquery` ("supply | chain | risk"), with the
    words filings use for what it names; only [a-z0-9] words, so nothing in the text can
    reach the tsquery syntax. Words the filters already hold every passage to (`filtered`:
    the company's name, the fiscal year) are left out: every page footer of the filing says
    them, so they would rank footers, not answers."""
    extra = " ".join(_FILING_WORDS[m.group(1).lower()] for m in _FILING_WORDS_RE.finditer(text))
    # And the words of the sentence that answers a common ask ("holders of record" is
    # answered by "…shareholders of record"; a critical audit matter by its "Description
    # of the Matter").
    extra += " " + " ".join(say for w in asked_wordings(text) for say in w.answers)
    # "FY2016" is written "2016" (or "fiscal 2016") in filings.
    text = _FISCAL_YEAR_RE.sub(r"\1", f"{text} {extra}".lower())
    noise = _QUERY_NOISE | REQUEST_WORDS | set(filtered)
    words = [w for w in _WORD_RE.findall(text) if w not in noise and len(w) > 1]
    return " | ".join(dict.fromkeys(words))


COMPANY_NAMES_SQL = "SELECT DISTINCT company FROM documents WHERE symbol = ANY($1::text[])"


async def _filtered_words(conn: Any, args: SearchDocumentsArgs) -> set[str]:
    """The words of what the filters hold fixed: the fiscal year, the companies' names."""
    held: set[str] = set()
    if args.fiscal_year is not None:
        held |= {str(args.fiscal_year), "fiscal"}
    if args.symbols:
        names = await conn.fetch(COMPANY_NAMES_SQL, args.symbols)
        held |= {s.lower() for s in args.symbols}
        held |= {w for row in names for w in _WORD_RE.findall((row["company"] or "").lower())}
    return held - {"inc", "corp", "co", "the"}


def catalog_words(phrase: str) -> list[str]:
    """A document name's distinctive words: "Apple's 2021 annual report" → apple, 2021, 10-k."""
    words = re.findall(r"[a-z0-9][a-z0-9\-]*", phrase.lower().replace("'s", ""))
    return [_CATALOG_SYNONYMS.get(w, w) for w in words if w not in _CATALOG_NOISE]


@dataclass(frozen=True, slots=True)
class ChunkFilters:
    where: str
    values: list[Any]


def search_filters(
    args: SearchDocumentsArgs,
    document_ids: list[str] | None,
    first: int,
    user_id: str,
    later_filings: bool = False,
) -> ChunkFilters:
    """The WHERE clause over `chunks c` and its values, numbered from `$first`. Only the
    documents finq ingested for everyone and the asking user's own uploads are searched.
    With `later_filings`, a fiscal year is also found in the filings of the next
    `LATER_FILING_YEARS` years, in the passages that name it (their comparative columns)."""
    clauses: list[str] = []
    values: list[Any] = []

    def add(clause: str, value: Any) -> None:
        values.append(value)
        clauses.append(clause.format(f"${first + len(values) - 1}"))

    # On the chunk's own owner column (its document's, written with it), so the vector index
    # can order the chunks and filter as it goes: a join to documents here made PostgreSQL
    # rank every chunk by exact distance instead (243 ms over 50,000 chunks).
    add("(c.user_id IS NULL OR c.user_id = {})", user_id)

    if args.symbols:
        add("c.symbol = ANY({}::text[])", args.symbols)
    if args.forms:
        add("c.form = ANY({}::text[])", args.forms)
    if args.fiscal_year is not None and later_filings:
        add(
            "(c.fiscal_year IS NULL OR c.fiscal_year BETWEEN {0} AND {0} + "
            f"{LATER_FILING_YEARS}) AND (c.fiscal_year = {{0}} OR c.temporal @> "
            "jsonb_build_object('years', jsonb_build_array({0}::int)))",
            args.fiscal_year,
        )
    elif args.fiscal_year is not None:
        # A document of no stated fiscal year (an upload, notes) still counts for the years
        # its passage itself names, from the temporal metadata stored with each chunk.
        add(
            "(c.fiscal_year = {0} OR (c.fiscal_year IS NULL AND c.temporal @> "
            "jsonb_build_object('years', jsonb_build_array({0}::int))))",
            args.fiscal_year,
        )
    if args.fiscal_quarter is not None:
        add("c.fiscal_quarter = {}", args.fiscal_quarter)
    if args.from_date is not None:
        add("c.period_end >= {}", args.from_date)
    if args.to_date is not None:
        add("c.period_end <= {}", args.to_date)
    if document_ids is not None:
        add("c.document_id = ANY({}::uuid[])", document_ids)
    elif args.collection:
        add("c.collection = {}", args.collection)
    return ChunkFilters(" AND ".join(clauses) or "TRUE", values)


@dataclass(frozen=True, slots=True)
class FigureAsk:
    """What a question asking for a statement figure names: its words (without the
    company's name) and the fiscal years asked."""

    terms: frozenset[str]
    years: tuple[int, ...]


def figure_ask(query: str, company_words: set[str]) -> FigureAsk | None:
    """The figure a query asks for ("iPhone net sales at Apple, fiscal 2024?",
    "Greater China net sales 2024"), or None when it asks for something else."""
    if "figure" not in asks(query):
        return None
    # How the figure moved ("did it decline") is asked of it, not named by its table.
    named = terms(GROWTH.sub(" ", query), ignore=company_words)
    return FigureAsk(frozenset(named), tuple(asked_years(query))) if named else None


def table_match(
    ask: FigureAsk, text: str, heading: str | None, caption: str | None = None
) -> float:
    """How well a table chunk holds the figure asked, 0 to 1: a row the question names
    (with the group row above it), under a header with the period asked; the share of the
    question's words the row and what the table is about (heading, header, row names) hold,
    halved for each word of the row's name the question does not say ("Total …")."""
    table: MarkdownTable | None = parse_table(text)
    if table is None:
        return 0.0
    missing_period = ask.years and period_column(table.header, ask.years) is None
    if missing_period and header_names_years(table.header):
        return 0.0  # a table by period, without the one asked
    labels = [row.label for row in table.rows]
    context = terms(" ".join([heading or "", caption or "", *table.header_lines, *labels]))
    best = 0.0
    for row in table.rows:
        label = terms(row.label)
        if not row.numeric or not label & ask.terms:
            continue
        named = label | (terms(row.group.label) if row.group else set())
        share = len(ask.terms & (named | context)) / len(ask.terms)
        best = max(best, share * 0.5 ** len(label - ask.terms))
    return best


def rerank_tables(
    query: str,
    rows: list[Any],
    limit: int,
    captions: Mapping[tuple[Any, int], str] | None = None,
) -> list[tuple[float, Any]]:
    """The fused ranking with the tables that hold the figure asked, the passages that word
    the answer to a common ask as filings do, and those that answer the thing asked
    squarely, lifted; best first, the fused order kept for everything else."""
    company_words = {w for row in rows for w in words(row["company"] or "")}
    ask = figure_ask(query, company_words - {"inc", "corp"})
    answers = [say for wording in asked_wordings(query) for say in wording.answers]
    # The filer's name and ticker never answer what is asked of it.
    tickers = {w for row in rows for w in words(row["symbol"] or "")}
    asked = asked_thing(query, (company_words | tickers) - {"inc", "corp"})
    if asked is not None and not set(asked.kinds) & _STATED_KINDS:
        asked = None  # a figure: the tables that hold it are lifted by their own measure
    weights = idf([terms(row["text"]) & asked.topic for row in rows]) if asked else {}
    scored = []
    for row in rows:
        boost = 0.0
        if ask is not None and row["is_table"]:
            caption = captions.get((row["document_id"], row["chunk_index"])) if captions else None
            boost = TABLE_BOOST * table_match(ask, row["text"], row["heading"], caption)
        if answers and any(say in plain(row["text"]) for say in answers):
            boost += WORDING_BOOST
        if (
            asked is not None
            and not row["is_table"]
            and squarely_answered(asked, row["text"], weights)
        ):
            boost += ANSWER_BOOST
        scored.append((float(row["score"]) + boost, row))
    scored.sort(key=lambda pair: -pair[0])  # stable: ties keep the fused order
    return scored[:limit]


def period_label(fiscal_year: int | None, fiscal_quarter: int | None) -> str:
    if fiscal_year is None:
        return ""
    if fiscal_quarter:
        return f"Q{fiscal_quarter} FY{fiscal_year}"
    return f"FY{fiscal_year}"


def _passage(row: Any, score: float, caption: str | None = None) -> Passage:
    document_id = str(row["document_id"])
    # An upload links nowhere: the filing its metadata names may not be what it holds.
    link = row["source_url"] if row["public"] else None
    if link and row["page"] and row["doc_type"] == "pdf":
        link = f"{link}#page={row['page']}"
    return Passage(
        source_id=f"doc:{document_id}:{row['chunk_index']}",
        document_id=document_id,
        title=row["title"],
        collection=row["collection"],
        symbol=row["symbol"],
        company=row["company"],
        form=row["form"],
        fiscal_year=row["fiscal_year"],
        fiscal_quarter=row["fiscal_quarter"],
        period=period_label(row["fiscal_year"], row["fiscal_quarter"]) or None,
        page=row["page"],
        page_end=row["page_end"],
        source_name=row["source_name"],
        chunk_index=row["chunk_index"],
        heading=row["heading"],
        text=row["text"],
        is_table=row["is_table"],
        caption=caption,
        score=round(score, 6),
        link=link,
        public=row["public"],
    )


def passage_source(passage: Passage, filed: Any = None, period_end: Any = None) -> Source:
    """The citation target of a passage: its document, period and page. A user's upload is
    cited as their file, whatever company and form it says it is."""
    if not passage.public:
        name = f"your upload “{passage.title or passage.source_name}”"
    elif passage.company and passage.form:
        name = f"{possessive(passage.company)} {passage.form}"
        if passage.period:
            name += f" for {passage.period}"
    else:
        name = passage.title
    page = ""
    if passage.page and passage.page_end and passage.page_end != passage.page:
        page = f", pages {passage.page}–{passage.page_end}"
    elif passage.page:
        page = f", page {passage.page}"
    return Source(
        source_id=passage.source_id,
        label=f"{name}{page}",
        form=passage.form,
        url=passage.link,
        filed=filed,
        fiscal_year=passage.fiscal_year,
        fiscal_quarter=passage.fiscal_quarter,
        period_end=period_end,
        page=passage.page,
    )


def search_settings() -> list[str]:
    """The settings a search's transaction runs under (SET LOCAL)."""
    return [
        # Planned for the filter values and words at hand, every time: a plan made once for
        # any company would not know one company's chunks are few (and exact distances
        # cheap), nor could the statistics estimate a word it is not shown.
        "SET LOCAL plan_cache_mode = force_custom_plan",
        *vector_index.search_settings(),
    ]


@asynccontextmanager
async def _connection(db: Any) -> AsyncIterator[Any]:
    if hasattr(db, "acquire"):
        async with db.acquire() as conn:
            yield conn
    else:
        yield db


# How a search embeds its query: an async function of texts to their vectors. In the
# service it is the ingest stage's, asked over NATS (shared/embedding_service.py).
EmbedFunction = Callable[[Sequence[str]], Awaitable[npt.NDArray[np.float32]]]


class DocumentSearch:
    """The search tool with its way of embedding a query: created once per tools process.

    Give it `embed`, an async function (the service's RemoteEmbedder.encode); or a local
    `embedder`, run in a thread; or a `load`er of one, called at the first search, so a
    tools replica serves figures at once instead of waiting seconds for a model it may not
    need yet (the `openai` provider, whose embedder loads in no time anyway)."""

    def __init__(
        self,
        embedder: Embedder | None = None,
        load: Callable[[], Embedder] | None = None,
        *,
        embed: EmbedFunction | None = None,
    ) -> None:
        if embedder is None and load is None and embed is None:
            raise ValueError("DocumentSearch needs a way to embed: a function, or an embedder")
        self._embedder = embedder
        self._load = load
        self._embed = embed
        self._loading = asyncio.Lock()

    async def _local_embedder(self) -> Embedder:
        if self._embedder is None:
            async with self._loading:
                if self._embedder is None:
                    assert self._load is not None
                    self._embedder = await asyncio.to_thread(self._load)
        return self._embedder

    async def embed_query(self, query: str) -> Any:
        if self._embed is not None:
            vectors = await self._embed([query])
        else:
            embedder = await self._local_embedder()
            vectors = await asyncio.to_thread(embedder.encode, [query])
        return vectors[0]

    async def search(
        self, db: Any, args: SearchDocumentsArgs, user_id: str = LOCAL_USER
    ) -> ToolResult:
        """Passages for `args`, from public filings and `user_id`'s own uploads only."""
        vector = await self.embed_query(args.query)  # before taking a connection
        async with _connection(db) as conn, conn.transaction():
            # Row-level security shows this transaction the public documents and the
            # user's own uploads; the filters below say the same, in case of an owner's pool.
            await conn.execute(ACT_AS_SQL, user_id)
            document_ids = None
            if args.collection:
                known = await conn.fetchval(CATALOG_SQL, args.collection)
                if known is None:
                    words = catalog_words(args.collection)
                    rows = await conn.fetch(CATALOG_TITLES_SQL, words, user_id) if words else []
                    document_ids = [str(row["id"]) for row in rows]
                    if not document_ids:
                        return ToolResult(
                            tool=SEARCH_DOCUMENTS,
                            arguments=args,
                            missing=[f"a document or collection named {args.collection!r}"],
                        )
            for statement in search_settings():
                await conn.execute(statement)
            every_word = keyword_query(args.query, await _filtered_words(conn, args))
            rows = await _candidates(conn, args, vector, every_word, document_ids, user_id)
            if not rows and args.fiscal_year is not None:
                # No filing of the year asked is held: its figures stand in the comparative
                # columns of the filings after it.
                rows = await _candidates(
                    conn, args, vector, every_word, document_ids, user_id, later_filings=True
                )
            captions = await table_captions(conn, list(rows))
            ranked = rerank_tables(args.query, list(rows), args.limit, captions)
            ranked = await with_introduced_tables(conn, ranked, args.limit, captions)
        passages = [
            _passage(row, score, captions.get((row["document_id"], row["chunk_index"])))
            for score, row in ranked
        ]
        sources = [
            passage_source(p, row["filed"], row["period_end"])
            for p, (_, row) in zip(passages, ranked, strict=True)
        ]
        missing = [] if passages else [_nothing_found(args)]
        return ToolResult(
            tool=SEARCH_DOCUMENTS,
            arguments=args,
            passages=passages,
            sources=sources,
            missing=missing,
        )


async def _candidates(
    conn: Any,
    args: SearchDocumentsArgs,
    vector: Any,
    every_word: str,
    document_ids: list[str] | None,
    user_id: str,
    later_filings: bool = False,
) -> list[Any]:
    """The fused vector and keyword ranking of the chunks the filters let through;
    `every_word` is the query's keyword query before its common words are left out."""

    def scope(first: int) -> ChunkFilters:
        return search_filters(args, document_ids, first, user_id, later_filings)

    filters = scope(8)
    keywords, few_searched = await _rare_words(conn, every_word, scope)
    return await conn.fetch(
        SEARCH_SQL.format(where=filters.where, matches=FEW_MATCH if few_searched else MATCH),
        vector,
        keywords,
        CANDIDATES,
        max(args.limit, RERANK_DEPTH),
        RRF_K,
        # A figure asked is looked for among the tables too: a table names its row once,
        # where prose about it repeats the question's words and outranks it.
        TABLE_RANK_WEIGHT if figure_ask(args.query, set()) is not None else 0.0,
        # Tables by every word: the common ones ("operating", "international") are what
        # their rows are labelled with.
        every_word,
        *filters.values,
    )


async def with_introduced_tables(
    conn: Any,
    ranked: list[tuple[float, Any]],
    limit: int,
    captions: dict[tuple[Any, int], str] | None = None,
) -> list[tuple[float, Any]]:
    """The ranking with the table each prose passage introduces placed right after it (at
    its score), when the search did not find that table itself; at most `limit` passages.
    Each table brought is entered in `captions` under the sentence that introduced it."""
    introducing = [
        row for _, row in ranked if not row["is_table"] and _INTRODUCES.search(row["text"])
    ]
    if not introducing:
        return ranked
    tables = await conn.fetch(
        INTRODUCED_TABLES_SQL,
        [row["document_id"] for row in introducing],
        [row["chunk_index"] for row in introducing],
    )
    table_of = {(t["document_id"], t["introduced_by"]): t for t in tables}
    held = {(row["document_id"], row["chunk_index"]) for _, row in ranked}
    placed: list[tuple[float, Any]] = []
    for score, row in ranked:
        placed.append((score, row))
        table = table_of.get((row["document_id"], row["chunk_index"]))
        if table is not None and (table["document_id"], table["chunk_index"]) not in held:
            held.add((table["document_id"], table["chunk_index"]))
            placed.append((score, table))
            caption = introduction(row["text"])
            if captions is not None and caption is not None:
                captions[(table["document_id"], table["chunk_index"])] = caption
    return placed[:limit]


async def rare_words(conn: Any, query: str, scope: Callable[[int], ChunkFilters]) -> str:
    """The keyword query (words OR-ed) without the words most searched chunks hold, when it
    has rarer ones, and without the words more than MAX_KEYWORD_CHUNKS chunks hold; empty
    (no keyword ranking) when every word is that common. `scope(first)` is the search's
    filters, numbered from `$first`."""
    return (await _rare_words(conn, query, scope))[0]


async def _rare_words(
    conn: Any, query: str, scope: Callable[[int], ChunkFilters]
) -> tuple[str, bool]:
    """rare_words, and whether the search's filters let through few chunks (at most
    COUNTED_SCOPE, by the statistics' estimate)."""
    searched = scope(1)
    estimate = await estimated_chunks(conn, searched.where, searched.values)
    few = estimate <= COUNTED_SCOPE
    words = [word for word in query.split(" | ") if word]
    if not words:
        return query, few
    if few:
        total, counts = await _counted_words(conn, words, scope)
    else:
        total = estimate
        held = scope(2)
        counts = {}
        for word in words:
            counts[word] = await estimated_chunks(
                conn, f"{_HOLDS_WORD} AND {held.where}", [word, *held.values]
            )
    if not total:
        return query, few
    bounded = [word for word in words if counts[word] <= MAX_KEYWORD_CHUNKS]
    rare = [word for word in bounded if counts[word] <= COMMON_WORD_SHARE * total]
    return " | ".join(rare or bounded), few


async def _counted_words(
    conn: Any, words: list[str], scope: Callable[[int], ChunkFilters]
) -> tuple[int, dict[str, int]]:
    """The searched chunks (at most COUNTED_SCOPE_LIMIT of them) and how many of them hold
    each word, in one reading of them."""
    searched = scope(3)
    rows = await conn.fetch(
        WORD_COUNTS_SQL.format(where=searched.where),
        words,
        COUNTED_SCOPE_LIMIT,
        *searched.values,
    )
    total = rows[0]["searched"] if rows else 0
    return total, {row["word"]: row["chunks"] for row in rows}


_HOLDS_WORD = "c.tsv @@ to_tsquery('english', $1)"
ESTIMATE_SQL = "EXPLAIN (FORMAT JSON) SELECT FROM chunks c WHERE {where}"


async def estimated_chunks(conn: Any, where: str, values: Sequence[Any]) -> float:
    """How many chunks PostgreSQL's statistics say `where` lets through: ANALYZE's sample of
    the filter columns, and its most common lexemes of `tsv`, with their shares."""
    plan = await conn.fetchval(ESTIMATE_SQL.format(where=where), *values)
    return float(json.loads(plan)[0]["Plan"]["Plan Rows"])


def _nothing_found(args: SearchDocumentsArgs) -> str:
    scope = []
    if args.symbols:
        scope.append(", ".join(args.symbols))
    if args.forms:
        scope.append(" or ".join(args.forms))
    if args.fiscal_year:
        scope.append(f"fiscal {args.fiscal_year}")
    where = f" in the loaded {' '.join(scope)} documents" if scope else " in the loaded documents"
    return f"a passage about {args.query!r}{where}"


async def run(args: SearchDocumentsArgs, deps: ToolDeps) -> ToolResult:
    return await deps.search.search(deps.db, args, deps.user_id)
