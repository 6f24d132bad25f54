"""Document ingest: files (filings, uploads, course material, the glossary) parsed, their
metadata completed from the file name and the filings index, then chunked, embedded and
stored (`document_store`).

What a filing is (company, form, fiscal year and quarter, period end, filed date, link)
comes first from the file itself (an EDGAR inline-XBRL document says it in its `dei`
facts), then from its name (`APPLE_2022_10K.pdf`, `APPLE_2023Q3_10Q.pdf`,
`aapl-10-k-2024-11-01.html`, `aapl-20250329.htm`), then from the filings index, which gives
the EDGAR link and whatever is still missing. What an upload request states wins over all.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

import asyncpg
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.ingest.document_model import ParsedDocument
from services.ingest.document_parsing import parse_document
from services.ingest.document_store import (
    StoredDocument,
    content_digest,
    fiscal_year_end_month,
    prepare_chunks,
    store_document,
)
from services.ingest.glossary import glossary_documents
from shared.db import DatabasePool
from shared.embeddings import Embedder
from shared.settings import ENV_PREFIX
from shared.tools import (
    COURSES_COLLECTION,
    FILINGS_COLLECTION,
    GLOSSARY_COLLECTION,
    UPLOADS_COLLECTION,
)

DOCUMENT_SUFFIXES = frozenset({".pdf", ".htm", ".html", ".docx", ".txt", ".md"})

_PDF_NAME_RE = re.compile(
    r"^(?P<company>[A-Za-z]+)_(?P<year>\d{4})(?:Q(?P<quarter>[1-4]))?_(?P<form>10-?K|10-?Q)\b",
    re.IGNORECASE,
)
_EDGAR_NAME_RE = re.compile(
    r"^(?P<ticker>[a-z]{1,5})-(?P<form>10-?k|10-?q)-(?P<filed>\d{4}-\d{2}-\d{2})", re.IGNORECASE
)
_EDGAR_PERIOD_RE = re.compile(r"^(?P<ticker>[a-z]{1,5})-(?P<period>\d{8})\.html?$", re.IGNORECASE)
_EMBEDDED_FORM_RE = re.compile(r"\b(10-?K|10-?Q)\b", re.IGNORECASE)


def _form(raw: str) -> str:
    raw = raw.upper()
    return raw if "-" in raw else f"{raw[:2]}-{raw[2:]}"


@dataclass(frozen=True, slots=True)
class NameHints:
    """What a file's name says about the filing in it."""

    company_word: str | None = None
    symbol: str | None = None
    form: str | None = None
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    filed: date | None = None
    period_end: date | None = None


def hints_from_name(name: str) -> NameHints:
    """ "APPLE_2023Q3_10Q.pdf" → Apple, 10-Q, FY2023 Q3; "aapl-10-k-2024-11-01.html" → AAPL,
    10-K, filed 2024-11-01; "aapl-20250329.htm" → AAPL, period ended 2025-03-29."""
    if match := _PDF_NAME_RE.match(name):
        quarter = match.group("quarter")
        return NameHints(
            company_word=match.group("company").lower(),
            form=_form(match.group("form")),
            fiscal_year=int(match.group("year")),
            fiscal_quarter=int(quarter) if quarter else None,
        )
    if match := _EDGAR_NAME_RE.match(name):
        return NameHints(
            symbol=match.group("ticker").upper(),
            form=_form(match.group("form")),
            filed=date.fromisoformat(match.group("filed")),
        )
    if match := _EDGAR_PERIOD_RE.match(name):
        period = match.group("period")
        return NameHints(
            symbol=match.group("ticker").upper(),
            period_end=date(int(period[:4]), int(period[4:6]), int(period[6:])),
        )
    form = _EMBEDDED_FORM_RE.search(name)
    return NameHints(form=_form(form.group(1)) if form else None)


@dataclass(frozen=True, slots=True)
class Company:
    symbol: str
    name: str
    display_name: str
    fiscal_year_end: str | None


async def load_companies(conn: Any) -> dict[str, Company]:
    rows = await conn.fetch("SELECT symbol, name, display_name, fiscal_year_end FROM companies")
    return {
        row["symbol"]: Company(
            row["symbol"], row["name"], row["display_name"], row["fiscal_year_end"]
        )
        for row in rows
    }


def _company_for(
    word: str | None, symbol: str | None, companies: Mapping[str, Company]
) -> Company | None:
    if symbol and symbol.upper() in companies:
        return companies[symbol.upper()]
    if word:
        for company in companies.values():
            if word in {company.display_name.lower(), company.name.lower().split()[0]}:
                return company
    return None


FILING_LOOKUP_SQL = """
SELECT accession, form, filed, report_date, fiscal_year, fiscal_quarter, url
FROM filings
WHERE symbol = $1 AND form = $2
  AND ($3::int IS NULL OR fiscal_year = $3)
  AND ($4::int IS NULL OR fiscal_quarter = $4)
  AND ($5::date IS NULL OR filed = $5)
  AND ($6::date IS NULL OR report_date = $6)
ORDER BY filed DESC
LIMIT 1
"""


async def complete_metadata(
    conn: Any,
    document: ParsedDocument,
    file_name: str,
    companies: Mapping[str, Company],
    folder_symbol: str | None = None,
) -> ParsedDocument:
    """`document` with its company, form, fiscal period, dates and link filled from its
    name and the filings index where the file did not say them."""
    hints = hints_from_name(file_name)
    company = _company_for(
        hints.company_word, document.symbol or hints.symbol or folder_symbol, companies
    )
    symbol = company.symbol if company else (document.symbol or hints.symbol)
    form = document.form or hints.form
    fiscal_year = document.fiscal_year or hints.fiscal_year
    fiscal_quarter = document.fiscal_quarter or hints.fiscal_quarter
    period_end = document.period_end or hints.period_end
    filed = document.filed or hints.filed
    source_url = document.source_url
    if symbol and form:
        row = await conn.fetchrow(
            FILING_LOOKUP_SQL,
            symbol,
            form,
            fiscal_year if not (filed or period_end) else None,
            (fiscal_quarter or 0) if form == "10-Q" and fiscal_quarter else None,
            filed,
            period_end if not filed else None,
        )
        if row is not None:
            fiscal_year = fiscal_year or row["fiscal_year"]
            if form == "10-Q" and not fiscal_quarter and row["fiscal_quarter"]:
                fiscal_quarter = row["fiscal_quarter"]
            period_end = period_end or row["report_date"]
            filed = filed or row["filed"]
            source_url = source_url or row["url"]
    title = document.title
    if company and form and fiscal_year:
        quarter = f" Q{fiscal_quarter}" if fiscal_quarter and form == "10-Q" else ""
        title = f"{company.display_name} {form} FY{fiscal_year}{quarter}"
    return replace(
        document,
        title=title,
        symbol=symbol,
        company=company.display_name if company else document.company,
        form=form,
        fiscal_year=fiscal_year,
        fiscal_quarter=fiscal_quarter if form == "10-Q" else None,
        period_end=period_end,
        filed=filed,
        source_name=document.source_name or file_name,
        source_url=source_url,
    )


class DocumentSettings(BaseSettings):
    """How documents are cut (FINQ_DOCUMENT_*)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    document_chunk_size: int = Field(default=1000, ge=100, le=20000)
    document_chunk_overlap: int = Field(default=200, ge=0, le=5000)


def document_files(paths: Iterable[Path]) -> list[Path]:
    """The ingestible files among `paths`, folders searched recursively, in name order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                p for p in sorted(path.rglob("*")) if p.suffix.lower() in DOCUMENT_SUFFIXES
            )
        else:
            found.append(path)
    return found


# Reads a file into a document: (path, content type) → ParsedDocument.
DocumentReader = Callable[[Path, str | None], Awaitable[ParsedDocument]]


async def _parse_here(path: Path, content_type: str | None) -> ParsedDocument:
    return await asyncio.to_thread(parse_document, path, content_type=content_type)


async def ingest_file(
    pool: DatabasePool,
    embedder: Embedder,
    path: Path,
    *,
    collection: str | None = None,
    settings: DocumentSettings | None = None,
    overrides: Mapping[str, Any] | None = None,
    folder_symbol: str | None = None,
    user_id: str | None = None,
    document_id: str | None = None,
    content_type: str | None = None,
    display_name: str | None = None,
    show_progress_bar: bool = False,
    force: bool = False,
    parse: DocumentReader | None = None,
) -> StoredDocument:
    """Parse, complete, chunk, embed and store one file; a file stored before as it is
    now is not embedded again unless `force`. Without a `collection`, course material goes
    to "courses" and anything else to "uploads". `parse` reads the file (by default here,
    off the event loop; the ingest stage reads untrusted uploads in a child process)."""
    settings = settings or DocumentSettings()
    data = await asyncio.to_thread(path.read_bytes)
    digest = content_digest(data)
    if collection is not None and not force and document_id is None:
        held = await stored_as_is(pool, collection, digest)
        if held is not None:
            return held
    document = await (parse or _parse_here)(path, content_type)
    if collection is None:
        # Course material is its own collection, so "the MCP course" finds it by name.
        collection = COURSES_COLLECTION if document.doc_type == "course" else UPLOADS_COLLECTION
        if not force and document_id is None:
            held = await stored_as_is(pool, collection, digest)
            if held is not None:
                return held
    name = display_name or path.name
    async with pool.acquire() as conn:
        companies = await load_companies(conn)
        document = await complete_metadata(conn, document, name, companies, folder_symbol)
    if overrides:
        document = replace(document, **{k: v for k, v in overrides.items() if v is not None})
    company = companies.get(document.symbol or "")
    return await store_document(
        pool,
        embedder,
        document,
        collection=collection,
        digest=digest,
        size=settings.document_chunk_size,
        overlap=settings.document_chunk_overlap,
        year_end_month=fiscal_year_end_month(company.fiscal_year_end if company else None),
        user_id=user_id,
        document_id=document_id,
        show_progress_bar=show_progress_bar,
    )


async def ingest_filings_folder(
    pool: asyncpg.Pool,
    embedder: Embedder,
    folder: Path,
    settings: DocumentSettings | None = None,
    show_progress_bar: bool = False,
    force: bool = False,
    on_file: Callable[[int, int, Path], None] | None = None,
) -> list[StoredDocument]:
    """Every filing under `folder`; a sub-folder named for a ticker says whose they are
    (filings/AAPL/APPLE_2022_10K.pdf). `on_file` hears (number, count, path) as each file's
    turn comes, for progress."""
    stored: list[StoredDocument] = []
    files = document_files([folder])
    for number, path in enumerate(files, start=1):
        if on_file is not None:
            on_file(number, len(files), path)
        parent = path.parent.name.upper() if path.parent != folder else None
        stored.append(
            await ingest_file(
                pool,
                embedder,
                path,
                collection=FILINGS_COLLECTION,
                settings=settings,
                folder_symbol=parent,
                show_progress_bar=show_progress_bar,
                force=force,
            )
        )
    return stored


def _glossary_digest(document: ParsedDocument) -> str:
    text = "\n".join(block.text for block in document.blocks)
    return content_digest(f"{document.title}\n{text}".encode())


async def glossary_to_embed(pool: asyncpg.Pool) -> list[tuple[str, ParsedDocument]]:
    """The bundled glossary documents not stored as they are now (digest, document), after
    dropping glossary documents no longer shipped: at most starts, nothing."""
    digests = {_glossary_digest(document): document for document in glossary_documents()}
    async with pool.acquire() as conn:
        await conn.execute(
            "DELETE FROM documents WHERE collection = $1 AND NOT content_sha256 = ANY($2)",
            GLOSSARY_COLLECTION,
            list(digests),
        )
        held = {
            row["content_sha256"]
            for row in await conn.fetch(
                "SELECT content_sha256 FROM documents WHERE collection = $1 AND status = 'ready'",
                GLOSSARY_COLLECTION,
            )
        }
    return [(digest, document) for digest, document in digests.items() if digest not in held]


async def load_glossary(
    pool: asyncpg.Pool,
    embedder: Embedder,
    pending: list[tuple[str, ParsedDocument]] | None = None,
    settings: DocumentSettings | None = None,
) -> list[StoredDocument]:
    """Embed and store the glossary documents that changed (`pending`, else all that
    `glossary_to_embed` finds)."""
    settings = settings or DocumentSettings()
    if pending is None:
        pending = await glossary_to_embed(pool)
    return [
        await store_document(
            pool,
            embedder,
            document,
            collection=GLOSSARY_COLLECTION,
            digest=digest,
            size=settings.document_chunk_size,
            overlap=settings.document_chunk_overlap,
        )
        for digest, document in pending
    ]


def glossary_passages(settings: DocumentSettings | None = None) -> list[str]:
    """The bundled glossary's passages as `load_glossary` embeds them (the texts finq ships
    MiniLM's vectors of: shared/stored_vectors.py)."""
    settings = settings or DocumentSettings()
    return [
        item.embedded_text
        for document in glossary_documents()
        for item in prepare_chunks(
            document, settings.document_chunk_size, settings.document_chunk_overlap
        )
    ]


STORED_SQL = """
SELECT id, title, chunk_count, table_count, page_count, nonempty_page_count
FROM documents WHERE collection = $1 AND content_sha256 = $2 AND status = 'ready'
"""


async def stored_as_is(pool: DatabasePool, collection: str, digest: str) -> StoredDocument | None:
    row = await pool.fetchrow(STORED_SQL, collection, digest)
    if row is None:
        return None
    return StoredDocument(
        document_id=str(row["id"]),
        title=row["title"],
        chunks=row["chunk_count"],
        tables=row["table_count"],
        pages=row["page_count"],
        nonempty_pages=row["nonempty_page_count"],
        seconds=0.0,
        reused=True,
    )
