"""Document benchmarks: ingest throughput on real 10-K PDFs, and search latency on a large
index.

    .venv/bin/python bench/documents.py [--data-dir ../shared/data] [--chunks 50000]
                                        [--queries 200] [--skip-ingest] [--skip-search]

It starts its own PostgreSQL on a free port under a temporary folder.

- Ingest: every Apple 10-K PDF under DATA/filings/AAPL through parse → chunk → temporal
  context → MiniLM embedding → COPY into `chunks`; pages/s and chunks/s per stage and in all.
- Search: N synthetic chunks (text from a few templates with varied companies, years and
  topics; vectors from MiniLM for a few hundred distinct texts, reused with noise so 50,000
  rows do not take 50,000 encodes), indexed as finq sizes it after an ingest (IVFFlat,
  shared/vector_index.py); then search_documents end to end
  (query embedding included) with no filter, a fiscal-year filter and a company+form+year
  filter: p50/p95/p99 milliseconds.

Figures go to stdout and to bench/out/documents-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import numpy as np  # noqa: E402

from services.control.commands.database_setup import prepare_database  # noqa: E402
from services.control.servers import PostgresServer, free_port  # noqa: E402
from services.ingest.document_parsing import parse_document  # noqa: E402
from services.ingest.document_store import (  # noqa: E402
    CHUNK_COLUMNS,
    ensure_embedding_column,
    prepare_chunks,
    store_document,
)
from services.ingest.documents import complete_metadata, load_companies  # noqa: E402
from services.tools.document_search import DocumentSearch  # noqa: E402
from shared.db import create_pool  # noqa: E402
from shared.embeddings import MiniLMEmbedder  # noqa: E402
from shared.tools import SearchDocumentsArgs  # noqa: E402
from shared.vector_index import maintain_vector_index  # noqa: E402

OUT_DIR = Path(__file__).resolve().parent / "out"
SYMBOLS = ("AAPL", "MSFT", "NVDA", "GOOGL", "AMZN", "TSLA", "FB")
TOPICS = (
    "supply chain concentration in Asia and the risk of component shortages",
    "foreign exchange exposure and hedging of forecasted revenue",
    "competition in smartphones, personal computers and cloud services",
    "share repurchases and quarterly dividends returned to shareholders",
    "research and development spending on silicon and software",
    "legal proceedings about patents and antitrust claims",
    "the number of full-time employees and human capital programs",
    "income taxes, the effective tax rate and unrecognized tax benefits",
    "net sales by reportable segment and by product category",
    "data center demand for accelerated computing",
)
QUERIES = (
    "What supply chain risks does the company describe?",
    "How does the company hedge foreign currency?",
    "How many employees does it have?",
    "What did it say about share buybacks?",
    "Which legal proceedings are mentioned?",
    "How did data center revenue develop?",
    "What is the effective tax rate?",
    "Who are the main competitors?",
)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def bench_ingest(dsn: str, data_dir: Path, embedder: MiniLMEmbedder) -> dict[str, Any]:
    files = sorted((data_dir / "filings" / "AAPL").glob("APPLE_*_10K.pdf"))
    if not files:
        return {"skipped": f"no Apple 10-K PDFs under {data_dir}/filings/AAPL"}
    pool = await create_pool(dsn, min_size=1, max_size=2)
    totals = {"pages": 0, "chunks": 0, "parse_s": 0.0, "chunk_s": 0.0, "embed_store_s": 0.0}
    per_file: list[dict[str, Any]] = []
    try:
        companies = await load_companies(pool)
        for path in files:
            started = time.perf_counter()
            document = await asyncio.to_thread(parse_document, path)
            parsed = time.perf_counter()
            async with pool.acquire() as conn:
                document = await complete_metadata(conn, document, path.name, companies, "AAPL")
            chunks = await asyncio.to_thread(prepare_chunks, document, 1000, 200, 9)
            chunked = time.perf_counter()
            stored = await store_document(
                pool, embedder, document, collection="filings", digest=path.name, prepared=chunks
            )
            done = time.perf_counter()
            pages = document.page_count or 0
            totals["pages"] += pages
            totals["chunks"] += len(chunks)
            totals["parse_s"] += parsed - started
            totals["chunk_s"] += chunked - parsed
            totals["embed_store_s"] += done - chunked
            per_file.append(
                {
                    "file": path.name,
                    "pages": pages,
                    "tables": document.table_count,
                    "chunks": stored.chunks,
                    "seconds": round(done - started, 2),
                }
            )
            print(
                f"  {path.name}: {pages} pages, {document.table_count} tables, "
                f"{stored.chunks} chunks in {done - started:.1f} s",
                flush=True,
            )
    finally:
        await pool.close()
    total_s = totals["parse_s"] + totals["chunk_s"] + totals["embed_store_s"]
    return {
        "files": len(files),
        **{k: round(v, 2) if isinstance(v, float) else v for k, v in totals.items()},
        "pages_per_s": round(totals["pages"] / total_s, 2),
        "chunks_per_s": round(totals["chunks"] / total_s, 2),
        "parse_pages_per_s": round(totals["pages"] / totals["parse_s"], 2),
        "embed_store_chunks_per_s": round(totals["chunks"] / totals["embed_store_s"], 2),
        "per_file": per_file,
    }


async def fill_synthetic(dsn: str, embedder: MiniLMEmbedder, count: int) -> float:
    rng = random.Random(7)
    texts = [
        f"{symbol} fiscal {year}: the company discussed {topic}."
        for symbol in SYMBOLS
        for year in range(2015, 2025)
        for topic in TOPICS[:4]
    ]
    base = embedder.encode(texts)
    # Building the index over 50,000 vectors takes longer than the services let a query run.
    pool = await create_pool(dsn, min_size=1, max_size=2, query_timeout_seconds=900)
    started = time.perf_counter()
    try:
        async with pool.acquire() as conn:
            await ensure_embedding_column(conn, embedder.dimensions)
            docs: list[tuple[uuid.UUID, str, int]] = []
            for symbol in SYMBOLS:
                for year in range(2015, 2025):
                    doc_id = uuid.uuid4()
                    docs.append((doc_id, symbol, year))
                    await conn.execute(
                        "INSERT INTO documents (id, collection, title, doc_type, symbol, company,"
                        " form, fiscal_year, content_sha256, status) VALUES ($1, 'filings', $2,"
                        " 'pdf', $3, $3, '10-K', $4, $5, 'ready')",
                        doc_id,
                        f"{symbol} 10-K FY{year}",
                        symbol,
                        year,
                        str(doc_id),
                    )
            records = []
            for index in range(count):
                doc_id, symbol, year = docs[index % len(docs)]
                topic = TOPICS[rng.randrange(len(TOPICS))]
                vector = base[rng.randrange(len(base))] + rng.gauss(0, 0.02) * np.ones(
                    embedder.dimensions, dtype=np.float32
                )
                noise = np.random.default_rng(index).normal(0, 0.05, embedder.dimensions)
                vector = (vector + noise).astype(np.float32)
                vector /= np.linalg.norm(vector)
                text = (
                    f"In fiscal {year}, {symbol} described {topic}. Passage {index} adds detail "
                    "on the business, its risks and its results for the year."
                )
                records.append(
                    (
                        doc_id, index // len(docs), 1 + index % 90, 1 + index % 90, None, text,
                        "", False, None, 0.8, "{}", "filings", symbol, "10-K", year, None, None,
                        vector, None,  # user_id: filings finq ingested for everyone
                    )
                )  # fmt: skip
            await conn.copy_records_to_table("chunks", records=records, columns=CHUNK_COLUMNS)
            # Sized for the chunks now held, as finq does after an ingest (and analyzed).
            await maintain_vector_index(conn)
    finally:
        await pool.close()
    return time.perf_counter() - started


async def bench_search(dsn: str, embedder: MiniLMEmbedder, queries: int) -> dict[str, Any]:
    pool = await create_pool(dsn, min_size=1, max_size=2)
    search = DocumentSearch(embedder)
    cases = {
        "no filter": {},
        "fiscal year": {"fiscal_year": 2021},
        "company+form+year": {"symbols": ["MSFT"], "forms": ["10-K"], "fiscal_year": 2019},
    }
    results: dict[str, Any] = {}
    try:
        for name, filters in cases.items():
            for query in QUERIES[:3]:  # warm up caches and the embedder
                await search.search(pool, SearchDocumentsArgs(query=query, **filters))
            timings: list[float] = []
            returned: list[int] = []
            for n in range(queries):
                args = SearchDocumentsArgs(query=QUERIES[n % len(QUERIES)], limit=10, **filters)
                started = time.perf_counter()
                result = await search.search(pool, args)
                timings.append((time.perf_counter() - started) * 1000)
                returned.append(len(result.passages))
            results[name] = {
                "p50_ms": round(percentile(timings, 0.5), 2),
                "p95_ms": round(percentile(timings, 0.95), 2),
                "p99_ms": round(percentile(timings, 0.99), 2),
                "mean_ms": round(statistics.fmean(timings), 2),
                "min_results": min(returned),
            }
            print(f"  {name:<20} {results[name]}", flush=True)
        embed_ms = []
        for n in range(queries):
            started = time.perf_counter()
            await search.embed_query(QUERIES[n % len(QUERIES)])
            embed_ms.append((time.perf_counter() - started) * 1000)
        results["query embedding alone"] = {
            "p50_ms": round(percentile(embed_ms, 0.5), 2),
            "p95_ms": round(percentile(embed_ms, 0.95), 2),
        }
        print(f"  {'query embedding':<20} {results['query embedding alone']}", flush=True)
    finally:
        await pool.close()
    return results


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="finq-bench-documents-"))
    postgres = PostgresServer(home / "postgres", free_port())
    postgres.start()
    figures: dict[str, Any] = {"when": datetime.now().isoformat(timespec="seconds")}
    try:
        await prepare_database(postgres.dsn, load_glossary=False)
        embedder = await asyncio.to_thread(MiniLMEmbedder.load)
        figures["model_load_s"] = round(embedder.load_seconds, 2)
        if not args.skip_ingest:
            print("ingest: Apple 10-K PDFs", flush=True)
            figures["ingest"] = await bench_ingest(postgres.dsn, Path(args.data_dir), embedder)
            print(
                "  total: "
                + json.dumps({k: v for k, v in figures["ingest"].items() if k != "per_file"}),
                flush=True,
            )
        if not args.skip_search:
            bench_db = postgres.dsn_for("bench_search")
            await prepare_database(bench_db, load_default=False)
            print(f"search: filling {args.chunks:,} synthetic chunks", flush=True)
            fill_s = await fill_synthetic(bench_db, embedder, args.chunks)
            print(f"  filled and indexed in {fill_s:.1f} s", flush=True)
            figures["search"] = {
                "chunks": args.chunks,
                "fill_and_index_s": round(fill_s, 1),
                **await bench_search(bench_db, embedder, args.queries),
            }
    finally:
        postgres.stop()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=str(REPO_ROOT.parent / "shared" / "data"))
    parser.add_argument("--chunks", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--skip-ingest", action="store_true")
    parser.add_argument("--skip-search", action="store_true")
    args = parser.parse_args()
    figures = asyncio.run(main_async(args))
    OUT_DIR.mkdir(exist_ok=True)
    out = OUT_DIR / f"documents-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(figures, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
