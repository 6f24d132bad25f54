"""Document search at the scale of a large user: a million chunks, five years of 10-Ks and
10-Qs for 500 companies. How long the vector index takes to build and how much it holds, how
fast the raw vector query and finq's real search (DocumentSearch: vector + keyword, fused)
answer with no filter, by company, and by company and fiscal year, and how much of the exact
top ten the index finds.

    .venv/bin/python bench/search_scale.py [--chunks 1000000] [--companies 500]
                                           [--queries 200] [--recall-sample 100]
    make bench-search-scale

It starts its own PostgreSQL (the embedded one finq ships, with pgvector) on a free port
under a temporary folder, and removes the folder afterwards.

How the synthetic chunks are made, so their vectors are clustered as real ones are:

- 500 companies named from 60 name stems and 12 industries ("Harbor Semiconductor Corp.",
  ticker HSC), each with a one-sentence description of its business; 30 topics a 10-K
  talks about (supply chain, hedging, employees, buybacks, tax...), each with three
  sentences written with the company and the year in them.
- MiniLM embeds every company's description (500 texts) and every topic sentence (90):
  about 600 encodes, not a million.
- A chunk is one company's document (10-K, or a 10-Q for quarters 1-3; fiscal 2020-2024;
  10-Ks twice as long as 10-Qs) on a topic its industry talks about more often: its vector
  is the topic sentence's plus half the company's, plus a small per-document direction and
  Gaussian noise (norm about 0.5), normalised. Chunks on one topic lie close together, the
  same company's closer, one document's closer still, as real filings' passages do.
- Its text (about 450 characters) is the three sentences of its topic, one of another
  topic and a filer's stock sentence, with the company's name (in some sentences, as in a
  filing), the year and varied figures written in, so the keyword side meets the words
  ("company", "fiscal", "million") a filing repeats. As in finq's own chunks, the
  document's label ("Harbor Semiconductor Corp. 10-K FY2023") is not in the text.
- The queries are MiniLM embeddings of real questions ("What supply chain risks does
  Harbor Semiconductor describe?") about a random company and topic.

Measured: load (binary COPY), the vector index's build as finq sizes and builds it after
an ingest (shared/vector_index.py) and the index's size; the database's size per million
chunks; for each filter kind, p50 and p99 of the raw vector query (the one finq runs, with
its settings) and of finq's whole search end to end with the query's embedding (which is
also reported alone); recall@10 of the vector query against exact search (no vector index:
a sequential or B-tree scan with every distance computed) on a sample of the queries;
PostgreSQL's CPU milliseconds per search.

Figures go to stdout, to bench/out/search-scale-<timestamp>.json and into bench/RESULTS.md
between the markers of its section (nothing else in that file is touched).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
import psutil  # noqa: E402

from bench.percentiles import percentile  # noqa: E402
from bench.pipeline import git_commit  # noqa: E402
from bench.results_file import replace_block  # noqa: E402
from services.control.commands.database_setup import prepare_database  # noqa: E402
from services.control.servers import PostgresServer, free_port  # noqa: E402
from services.ingest.document_store import (  # noqa: E402
    CHUNK_COLUMNS,
    ensure_embedding_column,
)
from services.tools.document_search import (  # noqa: E402
    CANDIDATES,
    NEAREST_SQL,
    DocumentSearch,
    search_filters,
    search_settings,
)
from shared.db import ACT_AS_SQL, create_pool  # noqa: E402
from shared.embeddings import MiniLMEmbedder  # noqa: E402
from shared.identity import LOCAL_USER  # noqa: E402
from shared.tools import SearchDocumentsArgs  # noqa: E402
from shared.vector_index import (  # noqa: E402
    VECTOR_INDEX,
    drop_vector_index,
    index_lists,
    lists_for,
    maintain_vector_index,
    vector_index_sql,
)

OUT_DIR = REPO_ROOT / "bench" / "out"
RESULTS_MD = REPO_ROOT / "bench" / "RESULTS.md"
BEGIN_MARK = "<!-- scale:search:begin -->"
END_MARK = "<!-- scale:search:end -->"
YEARS = tuple(range(2020, 2025))
# A 10-K is about twice a 10-Q's length; a fiscal year has one 10-K and three 10-Qs.
FORMS: tuple[tuple[str, int | None, int], ...] = (
    ("10-K", None, 2),
    ("10-Q", 1, 1),
    ("10-Q", 2, 1),
    ("10-Q", 3, 1),
)
INDEX_MEMORY = "1GB"  # the keyword (GIN) and filter (B-tree) indexes' build
COPY_BATCH = 20_000
DIMENSIONS = 384

NAME_STEMS = (
    "Harbor", "Summit", "Granite", "Northwind", "Bluewater", "Redwood", "Ironclad", "Silverline",
    "Crescent", "Evergreen", "Lakeshore", "Pinnacle", "Meridian", "Keystone", "Frontier",
    "Cobalt", "Sterling", "Beacon", "Cascade", "Horizon", "Atlas", "Orion", "Vanguard",
    "Sequoia", "Tidewater", "Prairie", "Copperfield", "Westbrook", "Eastgate", "Highland",
    "Riverbend", "Stonebridge", "Clearwater", "Foxglove", "Juniper", "Magnolia", "Oakmont",
    "Pioneer", "Quarry", "Ridgeline", "Saltmarsh", "Thornbury", "Upland", "Vireo", "Willow",
    "Yellowstone", "Zephyr", "Alder", "Birchwood", "Cedar", "Driftwood", "Emberly", "Fairhaven",
    "Glacier", "Hollow", "Inlet", "Jasper", "Kestrel", "Larkspur", "Marlow",
)  # fmt: skip
# Industry: the word in its companies' names, what they do, and the topics they talk about
# more than others (indices into TOPICS).
INDUSTRIES: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("Semiconductor", "designs graphics processors and networking chips for data centers",
     (0, 4, 9, 20)),
    ("Software", "sells cloud subscriptions for enterprise resource planning and security",
     (2, 4, 12, 21)),
    ("Pharmaceuticals", "develops and markets prescription drugs for oncology and immunology",
     (5, 13, 14, 4)),
    ("Energy", "explores for and produces oil and natural gas in North America",
     (15, 16, 7, 22)),
    ("Retail", "operates department stores and an online marketplace for apparel",
     (0, 17, 6, 23)),
    ("Bancorp", "takes deposits and lends to households and small businesses",
     (18, 19, 7, 24)),
    ("Motors", "builds electric vehicles and batteries and sells them through dealers",
     (0, 20, 25, 4)),
    ("Airlines", "flies passengers and cargo on domestic and international routes",
     (16, 26, 6, 1)),
    ("Foods", "makes packaged snacks, cereals and beverages sold in grocery stores",
     (0, 17, 27, 1)),
    ("Telecom", "provides wireless, broadband and fiber network services",
     (28, 12, 3, 22)),
    ("Insurance", "writes property, casualty and life insurance policies",
     (19, 29, 7, 24)),
    ("Industrials", "manufactures aircraft engines, turbines and factory automation systems",
     (0, 25, 8, 26)),
)  # fmt: skip
SUFFIXES = ("Inc.", "Corp.", "Holdings", "Group", "Co.")
# Topic: the question a user asks, and three sentences a filing says about it.
TOPICS: tuple[tuple[str, tuple[str, str, str]], ...] = (
    ("What supply chain risks does {company} describe?", (
        "{company} depends on a limited number of suppliers in Asia for key components.",
        "A supplier's disruption could delay shipments and lower net sales in fiscal {year}.",
        "The company keeps inventory buffers of about {n} days to absorb component shortages.")),
    ("How does {company} hedge foreign currency?", (
        "{company} uses forward contracts and options to hedge revenue in euros and yen.",
        "A ten percent stronger dollar would have cut fiscal {year} revenue by ${n} million.",
        "Hedge gains and losses are deferred in other comprehensive income until the sale.")),
    ("Who are {company}'s main competitors?", (
        "The markets {company} serves are highly competitive and characterized by rapid change.",
        "Competitors include large firms and start-ups with aggressive pricing in {year}.",
        "{company} competes on product quality, price, service and the breadth of its ecosystem.")),
    ("What did {company} say about share buybacks?", (
        "{company} repurchased {n} million shares of its common stock during fiscal {year}.",
        "The board authorized an additional repurchase program and raised the quarterly dividend.",
        "Share repurchases are made in open market transactions and under accelerated programs.")),
    ("How much does {company} spend on research and development?", (
        "Research and development expense was ${n} million in fiscal {year}, up on the year.",
        "{company} invests in new products, platforms and engineering talent to stay competitive.",
        "Most research spending is on employee compensation for engineers and scientists.")),
    ("Which legal proceedings does {company} mention?", (
        "{company} is a defendant in patent infringement suits seeking damages and injunctions.",
        "Regulators opened an antitrust investigation into the company's practices in {year}.",
        "The outcome of litigation is uncertain and an adverse ruling could be material.")),
    ("How many employees does {company} have?", (
        "As of the end of fiscal {year}, {company} had approximately {n} full-time employees.",
        "The company invests in human capital programs, training and employee well-being.",
        "Attracting and retaining skilled employees is critical to the company's success.")),
    ("What is {company}'s effective tax rate?", (
        "{company}'s effective tax rate was {pct} percent in fiscal {year}.",
        "Unrecognized tax benefits of ${n} million would lower the rate if recognized.",
        "The rate differs from the statutory rate because of foreign earnings and tax credits.")),
    ("How are {company}'s net sales split by segment?", (
        "{company} reports its results in three reportable segments by geography and product.",
        "Net sales of the largest segment were ${n} million in fiscal {year}.",
        "Segment operating income excludes research and general corporate expenses.")),
    ("How did data center demand develop at {company}?", (
        "Data center revenue at {company} grew {pct} percent in fiscal {year} on AI computing.",
        "Cloud providers and enterprises bought systems for training and inference workloads.",
        "Demand for data center products may fluctuate with customers' capital spending.")),
    ("What cybersecurity risks does {company} describe?", (
        "{company} faces cyberattacks, ransomware and breaches of its information systems.",
        "A security incident in {year} could expose customer data and harm its reputation.",
        "The company maintains an incident response program overseen by the audit committee.")),
    ("What debt does {company} have outstanding?", (
        "{company} had ${n} million of senior notes outstanding at the end of fiscal {year}.",
        "The notes bear fixed interest rates and mature between 2027 and 2052.",
        "A revolving credit facility provides additional liquidity and was undrawn.")),
    ("How does {company} recognize subscription revenue?", (
        "{company} recognizes subscription revenue ratably over the contract term.",
        "Deferred revenue was ${n} million at the end of fiscal {year}.",
        "Remaining performance obligations are expected to be recognized over three years.")),
    ("What did {company} say about clinical trials?", (
        "{company} has {n} product candidates in phase two and phase three clinical trials.",
        "Trial results in {year} may fail to show safety or efficacy and delay approval.",
        "The company relies on contract research organizations to run its trials.")),
    ("Which regulatory approvals does {company} need?", (
        "{company}'s products require approval by the FDA and comparable foreign regulators.",
        "The approval process is lengthy, expensive and its outcome is uncertain.",
        "In fiscal {year} the company received approval for a new indication.")),
    ("What are {company}'s proved reserves?", (
        "{company} had proved reserves of {n} million barrels equivalent at year end {year}.",
        "Reserve estimates depend on commodity prices, drilling results and engineering judgment.",
        "Undeveloped reserves are expected to be converted within five years.")),
    ("How do fuel and commodity prices affect {company}?", (
        "Fuel and commodity prices are volatile and significantly affect {company}'s costs.",
        "A one dollar change in the price per barrel changes annual expense by ${n} million.",
        "The company hedges part of its expected fuel consumption for fiscal {year}.")),
    ("How did {company}'s store sales change?", (
        "Comparable store sales at {company} increased {pct} percent in fiscal {year}.",
        "The company opened {n} new stores and closed underperforming locations.",
        "Online sales grew as customers shifted to digital channels and pickup.")),
    ("What is {company}'s net interest margin?", (
        "{company}'s net interest margin was {pct} percent in fiscal {year}.",
        "Higher deposit costs offset the benefit of higher yields on loans.",
        "Net interest income depends on the level and shape of the yield curve.")),
    ("How large is {company}'s allowance for credit losses?", (
        "{company}'s allowance for credit losses was ${n} million at the end of {year}.",
        "The allowance reflects expected losses over the life of the loans.",
        "Provision expense rose on weaker economic forecasts and higher charge-offs.")),
    ("How much did {company} spend on capital expenditures?", (
        "{company}'s capital expenditures were ${n} million in fiscal {year}.",
        "Spending went to new manufacturing capacity and equipment.",
        "The company expects capital spending to rise as it expands production.")),
    ("How many customers does {company} serve?", (
        "{company} served more than {n} thousand customers at the end of fiscal {year}.",
        "Customer retention remained above ninety percent.",
        "Large enterprise customers account for a growing share of revenue.")),
    ("What environmental risks does {company} face?", (
        "{company} is subject to environmental laws on emissions, water and waste.",
        "Climate change regulations adopted in {year} may increase compliance costs.",
        "The company set targets to reduce greenhouse gas emissions by {pct} percent.")),
    ("How does {company} manage inventory?", (
        "{company} held inventory of ${n} million at the end of fiscal {year}.",
        "Inventory is valued at the lower of cost and net realizable value.",
        "Markdowns were taken on seasonal merchandise that did not sell.")),
    ("What are {company}'s capital ratios?", (
        "{company}'s common equity tier one ratio was {pct} percent at year end {year}.",
        "The company remains well capitalized under regulatory requirements.",
        "Stress test results determine the capital buffer the company must hold.")),
    ("What warranty obligations does {company} have?", (
        "{company} accrues warranty costs when products are sold, ${n} million in fiscal {year}.",
        "Warranty claims depend on product quality and repair costs.",
        "Recalls could require significant unplanned spending.")),
    ("How did labor agreements affect {company}?", (
        "Most of {company}'s employees are represented by unions under collective bargaining.",
        "A new labor agreement reached in {year} raised wages by {pct} percent.",
        "Strikes or work stoppages could disrupt operations.")),
    ("How does {company} advertise and market its brands?", (
        "{company} spent ${n} million on advertising and marketing in fiscal {year}.",
        "Brand recognition is important to maintain pricing and shelf space.",
        "Marketing shifted toward digital channels and social media.")),
    ("How much spectrum does {company} hold?", (
        "{company} holds spectrum licenses in low, mid and high bands.",
        "The company paid ${n} million for new licenses auctioned in {year}.",
        "Licenses are renewable and treated as indefinite-lived intangible assets.")),
    ("How are {company}'s insurance reserves set?", (
        "{company}'s reserves for losses and loss adjustment expenses were ${n} million in {year}.",
        "Reserves are estimates and actual claims may differ materially.",
        "Catastrophe losses from storms affected underwriting results.")),
)  # fmt: skip
FILER_WORDS = (
    "The company's results for the year are discussed in management's discussion and analysis.",
    "Forward-looking statements in this report are subject to risks and uncertainties.",
    "Amounts are in millions except per share data unless otherwise stated.",
    "See the notes to the consolidated financial statements for further information.",
)


@dataclass(frozen=True, slots=True)
class Company:
    symbol: str
    name: str
    short_name: str  # as a question names it: "Harbor Semiconductor"
    industry: int


def make_companies(count: int, rng: random.Random) -> list[Company]:
    """`count` companies with unique names and tickers, industries spread evenly."""
    companies: list[Company] = []
    taken: set[str] = set()
    pairs = [(stem, i) for stem in NAME_STEMS for i in range(len(INDUSTRIES))]
    rng.shuffle(pairs)
    for stem, industry in pairs[:count]:
        short = f"{stem} {INDUSTRIES[industry][0]}"
        symbol = (stem[:2] + INDUSTRIES[industry][0][0]).upper()
        extra = 0
        while symbol in taken:  # a fourth letter from the stem, then a counter's letter
            extra += 1
            symbol = (stem[:2] + INDUSTRIES[industry][0][0] + chr(64 + extra)).upper()
        taken.add(symbol)
        suffix = SUFFIXES[len(companies) % len(SUFFIXES)]
        companies.append(Company(symbol, f"{short} {suffix}", short, industry))
    if len(companies) < count:
        raise ValueError(f"at most {len(pairs)} companies can be named")
    return companies


@dataclass(frozen=True, slots=True)
class Document:
    id: uuid.UUID
    company: Company
    form: str
    fiscal_quarter: int | None
    fiscal_year: int
    chunks: int


def make_documents(companies: list[Company], chunks: int) -> list[Document]:
    """Every company's 10-K and three 10-Qs of each year, `chunks` chunks among them."""
    weight = sum(share for _, _, share in FORMS)
    per_company_year = chunks / (len(companies) * len(YEARS))
    documents: list[Document] = []
    for company in companies:
        for year in YEARS:
            for form, quarter, share in FORMS:
                documents.append(
                    Document(
                        uuid.uuid5(uuid.NAMESPACE_URL, f"{company.symbol}/{form}/{quarter}/{year}"),
                        company,
                        form,
                        quarter,
                        year,
                        int(per_company_year * share / weight),
                    )
                )
    short = chunks - sum(d.chunks for d in documents)
    for n in range(short):  # the rounding's remainder, one more chunk each to the first few
        d = documents[n % len(documents)]
        documents[n % len(documents)] = Document(
            d.id, d.company, d.form, d.fiscal_quarter, d.fiscal_year, d.chunks + 1
        )
    return documents


@dataclass(slots=True)
class Corpus:
    """The embeddings chunk vectors are made of, and how a chunk picks its topic."""

    companies: list[Company]
    company_vectors: npt.NDArray[np.float32]  # one per company
    sentence_vectors: npt.NDArray[np.float32]  # [topic, sentence, dimension]
    topic_weights: dict[int, list[float]] = field(default_factory=dict)  # by industry

    @classmethod
    def embed(cls, companies: list[Company], embedder: MiniLMEmbedder) -> Corpus:
        descriptions = [
            f"{c.name} {INDUSTRIES[c.industry][1]}." for c in companies
        ]  # one text per company
        sentences = [
            sentence.format(company="The company", year="2023", n="120", pct="15")
            for _, topic_sentences in TOPICS
            for sentence in topic_sentences
        ]
        company_vectors = embedder.encode(descriptions).astype(np.float32)
        sentence_vectors = embedder.encode(sentences).astype(np.float32)
        weights: dict[int, list[float]] = {}
        for index, (_, _, favoured) in enumerate(INDUSTRIES):
            # An industry's own topics take about half its chunks; the rest spread evenly.
            weights[index] = [8.0 if t in favoured else 1.0 for t in range(len(TOPICS))]
        return cls(
            companies,
            company_vectors,
            sentence_vectors.reshape(len(TOPICS), 3, DIMENSIONS),
            weights,
        )


# Per-dimension noise: a norm of about 0.5 over 384 dimensions, against unit-length topic
# sentences and half-length companies: chunks of one topic and company differ as real ones do.
NOISE_SIGMA = 0.5 / DIMENSIONS**0.5
DOCUMENT_SIGMA = 0.25 / DIMENSIONS**0.5


def chunk_rows(
    corpus: Corpus, documents: list[Document], seed: int
) -> Iterator[list[tuple[Any, ...]]]:
    """The chunks' rows for COPY, `COPY_BATCH` at a time, in CHUNK_COLUMNS' order."""
    rng = random.Random(seed)
    noise = np.random.default_rng(seed)
    company_index = {c.symbol: i for i, c in enumerate(corpus.companies)}
    batch: list[tuple[Any, ...]] = []
    for document in documents:
        company = document.company
        company_vector = corpus.company_vectors[company_index[company.symbol]]
        document_vector = noise.normal(0, DOCUMENT_SIGMA, DIMENSIONS).astype(np.float32)
        topics = rng.choices(
            range(len(TOPICS)), corpus.topic_weights[company.industry], k=document.chunks
        )
        sentences = noise.integers(0, 3, document.chunks)
        vectors = (
            corpus.sentence_vectors[topics, sentences]
            + 0.5 * company_vector
            + document_vector
            + noise.normal(0, NOISE_SIGMA, (document.chunks, DIMENSIONS)).astype(np.float32)
        )
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for index in range(document.chunks):
            topic = topics[index]
            other = TOPICS[rng.randrange(len(TOPICS))][1][rng.randrange(3)]
            said = [*TOPICS[topic][1], other, FILER_WORDS[rng.randrange(len(FILER_WORDS))]]
            figures = {
                "company": company.short_name,
                "year": str(document.fiscal_year),
                "n": str(rng.randrange(10, 90_000)),
                "pct": f"{rng.uniform(1, 40):.1f}",
            }
            text = " ".join(sentence.format(**figures) for sentence in said)
            batch.append(
                (
                    document.id, index, 1 + index // 3, 1 + index // 3, None, text, "", False,
                    None, 0.8, "{}", "filings", company.symbol, document.form,
                    document.fiscal_year, document.fiscal_quarter, None, vectors[index], None,
                )
            )  # fmt: skip
            if len(batch) == COPY_BATCH:
                yield batch
                batch = []
    if batch:
        yield batch


async def load_corpus(
    dsn: str, corpus: Corpus, documents: list[Document], seed: int
) -> dict[str, Any]:
    """The documents' rows and their chunks (binary COPY), then ANALYZE; no vector index."""
    pool = await create_pool(dsn, min_size=1, max_size=2, query_timeout_seconds=7200)
    started = time.perf_counter()
    try:
        async with pool.acquire() as conn:
            await ensure_embedding_column(conn, DIMENSIONS)
            # Built after the bulk load, as finq does after a large ingest (its lists sized
            # for the chunks then held). So are the keyword and filter indexes (the keys that
            # keep chunks unique stay).
            await drop_vector_index(conn)
            secondary = await conn.fetch(
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'chunks' "
                "AND indexname NOT IN ('chunks_pkey', 'chunks_document_id_chunk_index_key')"
            )
            for index in secondary:
                await conn.execute(f"DROP INDEX {index['indexname']}")
            await conn.copy_records_to_table(
                "documents",
                columns=(
                    "id", "collection", "title", "doc_type", "symbol", "company", "form",
                    "fiscal_year", "fiscal_quarter", "content_sha256", "status", "chunk_count",
                ),
                records=[
                    (
                        d.id, "filings",
                        f"{d.company.name} {d.form} FY{d.fiscal_year}", "pdf", d.company.symbol,
                        d.company.name, d.form, d.fiscal_year, d.fiscal_quarter, str(d.id),
                        "ready", d.chunks,
                    )
                    for d in documents
                ],
            )  # fmt: skip
            loaded = 0
            for batch in chunk_rows(corpus, documents, seed):
                await conn.copy_records_to_table("chunks", records=batch, columns=CHUNK_COLUMNS)
                loaded += len(batch)
                if loaded % 100_000 < COPY_BATCH:
                    elapsed = time.perf_counter() - started
                    print(f"  {loaded:,} chunks in {elapsed:.0f} s", flush=True)
            copied = time.perf_counter() - started
            await conn.execute(f"SET maintenance_work_mem = '{INDEX_MEMORY}'")
            for index in secondary:
                await conn.execute(index["indexdef"])
            indexed = time.perf_counter() - started
            await conn.execute("VACUUM ANALYZE chunks")
            await conn.execute("VACUUM ANALYZE documents")
    finally:
        await pool.close()
    return {
        "copy_s": round(copied, 1),
        "copy_chunks_per_s": round(sum(d.chunks for d in documents) / copied),
        "secondary_indexes_s": round(indexed - copied, 1),
        "secondary_indexes": [index["indexname"] for index in secondary],
        "vacuum_analyze_s": round(time.perf_counter() - started - indexed, 1),
    }


async def build_vector_index(dsn: str) -> dict[str, Any]:
    """The chunks' vector index built over the loaded chunks as finq builds it after an
    ingest (maintain_vector_index: lists sized for the chunks held, built concurrently
    beside any old one): seconds, lists and size."""
    pool = await create_pool(dsn, min_size=1, max_size=1, query_timeout_seconds=7200)
    try:
        async with pool.acquire() as conn:
            await drop_vector_index(conn)
            started = time.perf_counter()
            state = await maintain_vector_index(conn)
            seconds = time.perf_counter() - started
            lists = await index_lists(conn)
            size = await conn.fetchval("SELECT pg_relation_size($1::regclass)", VECTOR_INDEX)
    finally:
        await pool.close()
    return {
        "definition": vector_index_sql(lists or 0),
        "build_s": round(seconds, 1),
        "rows_estimated": state.rows,
        "lists": lists,
        "index_mb": round(size / 2**20, 1),
    }


async def database_sizes(dsn: str, chunks: int) -> dict[str, Any]:
    pool = await create_pool(dsn, min_size=1, max_size=1)
    try:
        async with pool.acquire() as conn:
            rows = await conn.fetch(
                "SELECT c.relname, pg_relation_size(c.oid) AS bytes FROM pg_index i "
                "JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE i.indrelid = 'chunks'::regclass ORDER BY bytes DESC"
            )
            table = await conn.fetchval("SELECT pg_table_size('chunks')")
            total = await conn.fetchval("SELECT pg_total_relation_size('chunks')")
            database = await conn.fetchval("SELECT pg_database_size(current_database())")
    finally:
        await pool.close()
    per_million = 1_000_000 / chunks
    return {
        "chunks_table_mb": round(table / 2**20, 1),
        "chunks_with_indexes_mb": round(total / 2**20, 1),
        "database_mb": round(database / 2**20, 1),
        "chunks_with_indexes_gb_per_million": round(total * per_million / 2**30, 2),
        "indexes_mb": {row["relname"]: round(row["bytes"] / 2**20, 1) for row in rows},
    }


@dataclass(frozen=True, slots=True)
class Question:
    kind: str
    text: str
    args: SearchDocumentsArgs


FILTER_KINDS = ("unfiltered", "company", "company+year")


def make_questions(companies: list[Company], count: int, rng: random.Random) -> list[Question]:
    """`count` questions of each filter kind, each about a random company and topic; the
    unfiltered ones name the company in their words, as a user would."""
    questions: list[Question] = []
    for kind in FILTER_KINDS:
        for _ in range(count):
            company = rng.choice(companies)
            text = rng.choice(TOPICS)[0].format(company=company.short_name)
            year = rng.choice(YEARS)
            filters: dict[str, Any] = {}
            if kind == "unfiltered":
                text = text.rstrip("?") + f" in fiscal {year}?"
            if kind in ("company", "company+year"):
                filters["symbols"] = [company.symbol]
            if kind == "company+year":
                filters["fiscal_year"] = year
            questions.append(
                Question(kind, text, SearchDocumentsArgs(query=text, limit=10, **filters))
            )
    return questions


# finq's vector ranking as the search runs it (its CANDIDATES nearest), of which the first
# ten by distance: what recall@10 is measured on.
RAW_VECTOR_SQL = (
    "SELECT id, distance FROM ("
    + NEAREST_SQL.replace("$3", str(CANDIDATES))
    + ") nearest ORDER BY distance LIMIT 10"
)


async def raw_vector_ids(
    conn: Any, vector: Any, args: SearchDocumentsArgs, exact: bool
) -> list[tuple[int, float]]:
    """The ten nearest chunks' ids by the vector query alone, under finq's settings; with
    `exact`, with the vector index forbidden, so every distance is computed."""
    filters = search_filters(args, None, 2, LOCAL_USER)
    async with conn.transaction():
        await conn.execute(ACT_AS_SQL, LOCAL_USER)
        for statement in search_settings():
            await conn.execute(statement)
        if exact:
            # Only an index scan can use the vector index; a bitmap scan of the B-trees still
            # serves the filters, and the ordering is a sort over every distance.
            await conn.execute("SET LOCAL enable_indexscan = off")
        rows = await conn.fetch(RAW_VECTOR_SQL.format(where=filters.where), vector, *filters.values)
    return [(row["id"], row["distance"]) for row in rows]


def postgres_cpu_seconds(server: PostgresServer) -> float:
    """CPU seconds the server and its backends have used so far."""
    assert server.process is not None
    root = psutil.Process(server.process.pid)
    total = 0.0
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def summary(timings: list[float]) -> dict[str, float]:
    ordered = sorted(timings)
    return {
        "p50_ms": round(percentile(ordered, 50), 2),
        "p99_ms": round(percentile(ordered, 99), 2),
        "mean_ms": round(statistics.fmean(ordered), 2),
    }


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = await call()
    return (time.perf_counter() - started) * 1000, result


async def measure_search(
    server: PostgresServer,
    service_dsn: str,
    embedder: MiniLMEmbedder,
    questions: list[Question],
    recall_sample: int,
) -> dict[str, Any]:
    """Per filter kind: the raw vector query's and the real search's latency, the query
    embedding's alone, PostgreSQL's CPU per real search, and recall@10 on a sample."""
    # As the tools stage connects: the services' role, under row-level security.
    pool = await create_pool(service_dsn, min_size=1, max_size=2, query_timeout_seconds=600)
    search = DocumentSearch(embedder)
    vectors = {
        q.text: v
        for q, v in zip(questions, embedder.encode([q.text for q in questions]), strict=True)
    }
    results: dict[str, Any] = {}
    try:
        async with pool.acquire() as conn:
            for question in questions[:5]:  # warm the caches and the model
                await raw_vector_ids(conn, vectors[question.text], question.args, exact=False)
        for question in questions[:5]:
            await search.search(pool, question.args)
        for kind in FILTER_KINDS:
            asked = [q for q in questions if q.kind == kind]
            raw_ms: list[float] = []
            async with pool.acquire() as conn:
                for question in asked:
                    elapsed, _ = await timed(
                        lambda q=question: raw_vector_ids(conn, vectors[q.text], q.args, False)
                    )
                    raw_ms.append(elapsed)
            search_ms: list[float] = []
            embed_ms: list[float] = []
            empty = 0
            cpu_before = postgres_cpu_seconds(server)
            own = psutil.Process()
            own_before = sum(own.cpu_times()[:2])
            for question in asked:
                elapsed, _ = await timed(lambda q=question: search.embed_query(q.text))
                embed_ms.append(elapsed)
                elapsed, result = await timed(lambda q=question: search.search(pool, q.args))
                search_ms.append(elapsed)
                empty += not result.passages
            cpu_ms = (postgres_cpu_seconds(server) - cpu_before) * 1000 / len(asked)
            # The embedding (twice: alone and within the search) and finq's Python around it.
            own_ms = (sum(own.cpu_times()[:2]) - own_before) * 1000 / len(asked)
            recalls: list[float] = []
            gaps: list[float] = []
            async with pool.acquire() as conn:
                for question in asked[:recall_sample]:
                    vector = vectors[question.text]
                    found = await raw_vector_ids(conn, vector, question.args, exact=False)
                    exact = await raw_vector_ids(conn, vector, question.args, exact=True)
                    if exact:
                        found_ids = {chunk for chunk, _ in found}
                        recalls.append(len(found_ids & {chunk for chunk, _ in exact}) / len(exact))
                        # How much farther the tenth chunk found is than the tenth nearest:
                        # what a miss costs when the chunks found instead are nearly as near.
                        gaps.append(found[-1][1] / exact[-1][1] - 1 if found else 1.0)
            results[kind] = {
                "raw_vector": summary(raw_ms),
                "search_end_to_end": summary(search_ms),
                "query_embedding": summary(embed_ms),
                "search_without_embedding_p50_ms": round(
                    percentile(sorted(s - e for s, e in zip(search_ms, embed_ms, strict=True)), 50),
                    2,
                ),
                "postgres_cpu_ms_per_search": round(cpu_ms, 2),
                "bench_process_cpu_ms_per_search": round(own_ms, 2),
                "searches_with_no_passage": empty,
                "recall_at_10": round(statistics.fmean(recalls), 4) if recalls else None,
                "recall_at_10_min": round(min(recalls), 2) if recalls else None,
                "recall_queries": len(recalls),
                "tenth_distance_excess_mean": round(statistics.fmean(gaps), 4) if gaps else None,
            }
            print(f"  {kind:<14} {json.dumps(results[kind])}", flush=True)
    finally:
        await pool.close()
    return results


def results_table(figures: dict[str, Any]) -> str:
    """The Markdown written between the section's markers."""
    build = figures.get("vector_index", {})
    load = figures.get("load", {})
    sizes = figures.get("sizes", {})
    search = figures.get("search", {})
    lines = [
        f"Run {figures['when']} at commit {figures['commit']}: {figures['chunks']:,} chunks, "
        f"{figures['companies']} companies, {figures['queries']} questions per filter kind, "
        f"recall on {figures['recall_sample']}; pgvector {figures['pgvector']}, "
        f"PostgreSQL {figures['postgres']}; raw JSON in `{figures['json']}` (not committed).",
        "",
        (
            f"This kept database was loaded at {figures['loaded_at']} and its vector index built "
            f"at {build.get('built_at', '–')}; those figures are from then. "
            if figures.get("loaded_at", figures["when"]) != figures["when"]
            else ""
        )
        + f"Load: {load.get('copy_s', '–')} s of binary COPY, "
        f"{load.get('secondary_indexes_s', '–')} s for the keyword and filter indexes, "
        f"{load.get('vacuum_analyze_s', '–')} s of VACUUM ANALYZE. "
        f"Vector index build, as finq sizes and builds it after an ingest (ANALYZE, then "
        f"CREATE INDEX CONCURRENTLY beside any old index): {build.get('build_s', '–')} s; "
        f"index {build.get('index_mb', '–')} MiB (`{build.get('definition', '')}`). "
        "Search settings: "
        + "; ".join(f"`{statement}`" for statement in figures.get("search_settings", []))
        + ".",
        "",
        f"Per unit, for a capacity plan: chunks with all their indexes take "
        f"{sizes.get('chunks_with_indexes_gb_per_million', '–')} GiB per million chunks "
        f"({sizes.get('chunks_with_indexes_mb', '–')} MiB here), of which the vector index "
        f"{build.get('index_mb', sizes.get('indexes_mb', {}).get(VECTOR_INDEX, '–'))}"
        " MiB, which a search reads from memory at its best (shared_buffers "
        f"{figures.get('shared_buffers', '–')} here, the rest from the OS page cache); a search "
        "costs PostgreSQL the CPU milliseconds below, and the client its query's embedding "
        "(MiniLM on CPU) and finq's Python around the queries.",
        "",
        "| filter | vector p50 ms | vector p99 ms | search p50 ms | search p99 ms "
        "| of which embedding p50 ms | PostgreSQL CPU ms / search | client CPU ms / search "
        "| recall@10 (min) | 10th found vs 10th nearest, distance |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind in FILTER_KINDS:
        row = search.get(kind)
        if row is None:
            continue
        lines.append(
            f"| {kind} | {row['raw_vector']['p50_ms']} | {row['raw_vector']['p99_ms']} "
            f"| {row['search_end_to_end']['p50_ms']} | {row['search_end_to_end']['p99_ms']} "
            f"| {row['query_embedding']['p50_ms']} | {row['postgres_cpu_ms_per_search']} "
            f"| {row['bench_process_cpu_ms_per_search']} "
            f"| {row['recall_at_10']} ({row['recall_at_10_min']}) "
            f"| +{100 * (row['tenth_distance_excess_mean'] or 0):.1f}% |"
        )
    lines += ["", "| index | MiB |", "|---|---|"]
    lines += [f"| {name} | {mb} |" for name, mb in sizes.get("indexes_mb", {}).items()]
    return "\n".join(lines)


SECTION_INTRO = f"""## Document search at a million chunks

`make bench-search-scale` (`bench/search_scale.py --chunks 1000000 --companies 500
--queries 200 --recall-sample 100`, under `flock /tmp/finq-heavy.lock`; about 25 minutes on
two cores: 4 to load, 2 for the vector index's build, the rest searching; `--keep-db DIR`
keeps the loaded database and reuses it, rebuilding the vector index only when the store
declares another). Synthetic 10-K and 10-Q chunks of 500 companies over five fiscal years,
with MiniLM vectors clustered by topic, company and document (the script's docstring says
how), searched as the tools stage searches: as the services' role, under row-level security.
For each filter kind: the vector query finq runs (its 50 nearest, the first ten of them) and
finq's whole search end to end (`DocumentSearch`: vector and keyword rankings fused, the
query's embedding included and shown alone), p50/p99 over the questions; recall@10 of the
vector query against exact search (no vector index) on a sample; the load, the vector
index's build time and size, and the database's size. The benchmark writes the block below
itself.

{BEGIN_MARK}
{END_MARK}
"""


def write_results(table: str) -> None:
    """Replace what stands between the section's markers (adding the section at the end
    the first time); other blocks of the file stay as they are."""
    replace_block(BEGIN_MARK, END_MARK, table, SECTION_INTRO.split(BEGIN_MARK)[0], RESULTS_MD)


async def loaded_chunks(dsn: str) -> int:
    pool = await create_pool(dsn, min_size=1, max_size=1)
    try:
        async with pool.acquire() as conn:
            return int(await conn.fetchval("SELECT count(*) FROM chunks"))
    finally:
        await pool.close()


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    keep = Path(args.keep_db) if args.keep_db else None
    home = keep or Path(tempfile.mkdtemp(prefix="finq-bench-search-scale-"))
    server = PostgresServer(home / "postgres", free_port(), durable=False)
    server.start()
    rng = random.Random(args.seed)
    companies = make_companies(args.companies, rng)
    documents = make_documents(companies, args.chunks)
    figures: dict[str, Any] = {
        "when": datetime.now().isoformat(timespec="minutes"),
        "commit": git_commit(),
        "chunks": args.chunks,
        "companies": args.companies,
        "documents": len(documents),
        "queries": args.queries,
        "recall_sample": args.recall_sample,
        "search_settings": search_settings(),
    }
    try:
        dsn = server.dsn_for("bench_search_scale")
        service_dsn = server.service_dsn_for("bench_search_scale")
        await prepare_database(dsn, load_default=False, service_dsn=service_dsn)
        pool = await create_pool(dsn, min_size=1, max_size=1)
        async with pool.acquire() as conn:
            figures["pgvector"] = await conn.fetchval(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            )
            figures["postgres"] = await conn.fetchval("SHOW server_version")
            figures["shared_buffers"] = await conn.fetchval("SHOW shared_buffers")
        await pool.close()
        embedder = await asyncio.to_thread(MiniLMEmbedder.load)
        # What a kept database was loaded and indexed with, and how long that took.
        kept = home / "search-scale-build.json"
        built: dict[str, Any] = json.loads(kept.read_text()) if kept.exists() else {}
        if await loaded_chunks(dsn) != args.chunks:
            started = time.perf_counter()
            corpus = await asyncio.to_thread(Corpus.embed, companies, embedder)
            built = {"corpus_embedding_s": round(time.perf_counter() - started, 1)}
            print(f"loading {args.chunks:,} chunks of {len(documents):,} documents", flush=True)
            built["load"] = await load_corpus(dsn, corpus, documents, args.seed)
            built["loaded_at"] = figures["when"]
            print(f"  {built['load']}", flush=True)
        else:
            print(f"reusing the {args.chunks:,} chunks loaded under {home}", flush=True)
        built.pop("hnsw", None)  # what a kept database's former index was built with
        declared = vector_index_sql(lists_for(args.chunks))
        if built.get("vector_index", {}).get("definition") != declared:
            print("building the vector index", flush=True)
            built["vector_index"] = await build_vector_index(dsn)
            built["vector_index"]["built_at"] = datetime.now().isoformat(timespec="minutes")
            print(f"  {built['vector_index']}", flush=True)
        kept.write_text(json.dumps(built, indent=2))
        figures.update(built)
        figures["sizes"] = await database_sizes(dsn, args.chunks)
        print(f"  {figures['sizes']}", flush=True)
        questions = make_questions(companies, args.queries, rng)
        print("searching", flush=True)
        figures["search"] = await measure_search(
            server, service_dsn, embedder, questions, args.recall_sample
        )
    finally:
        server.stop()
        if keep is None:
            shutil.rmtree(home, ignore_errors=True)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--companies", type=int, default=500)
    parser.add_argument("--queries", type=int, default=200, help="per filter kind")
    parser.add_argument("--recall-sample", type=int, default=100, help="per filter kind")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument(
        "--keep-db",
        help="a folder to keep the loaded PostgreSQL in, and to reuse it from when it holds "
        "as many chunks (the load and the build are then not measured again)",
    )
    parser.add_argument(
        "--no-results-md", action="store_true", help="leave bench/RESULTS.md as it is"
    )
    args = parser.parse_args()
    figures = asyncio.run(main_async(args))
    OUT_DIR.mkdir(exist_ok=True)
    out = OUT_DIR / f"search-scale-{datetime.now():%Y%m%d-%H%M%S}.json"
    figures["json"] = str(out.relative_to(REPO_ROOT))
    out.write_text(json.dumps(figures, indent=2))
    table = results_table(figures)
    print(table)
    if not args.no_results_md:
        write_results(table)
        print(f"wrote {out} and bench/RESULTS.md")
    else:
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
