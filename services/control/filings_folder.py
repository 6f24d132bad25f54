"""`finq up` with FINQ_FILINGS_DIR: the user's folder of filings loaded at start, as `finq
ingest filings DIR` would load it. A file already held as it is is kept without parsing or
embedding, and the embedding model is loaded only when some file is new, so a restart over
the same folder takes a second."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from services.control.progress import Progress
from services.ingest.documents import DocumentSettings, document_files, ingest_file, stored_as_is
from shared.db import create_pool
from shared.embeddings import Embedder, EmbeddingSettings, load_embedder
from shared.tools import FILINGS_COLLECTION


def _digest(path: Path) -> str:
    from services.ingest.document_store import content_digest

    return content_digest(path.read_bytes())


async def ingest_filings_dir(
    dsn: str,
    folder: Path,
    say: Callable[[str], None] | None = None,
    progress: Progress | None = None,
) -> tuple[int, int, int]:
    """Every filing under `folder` (a sub-folder named for a ticker says whose they are),
    with a line per file (`say`, stdout by default) and the count on `progress`; a file
    that cannot be read is reported and skipped. Returns how many were loaded, kept as
    held, and failed."""
    progress = progress or Progress.silent()
    say = say or progress.above
    if not await asyncio.to_thread(folder.is_dir):
        say(f"FINQ_FILINGS_DIR {folder} is not a folder: no filings loaded")
        return 0, 0, 0
    files = await asyncio.to_thread(document_files, [folder])
    say(f"filings in {folder}: {len(files)} files")
    settings = DocumentSettings()
    embedder: Embedder | None = None
    loaded = held = failed = 0
    step = progress.step("ingesting filings", total=len(files))
    pool = await create_pool(dsn, min_size=1, max_size=2)
    try:
        for number, path in enumerate(files, start=1):
            where = f"[{number}/{len(files)}] {path.relative_to(folder)}"
            step.start(str(path.relative_to(folder)))
            digest = await asyncio.to_thread(_digest, path)
            if await stored_as_is(pool, FILINGS_COLLECTION, digest) is not None:
                held += 1
                say(f"{where}: held")
                continue
            if embedder is None:
                say("loading the embedding model")
                step.detail("loading the embedding model")
                embedder = await asyncio.to_thread(load_embedder, EmbeddingSettings())
                step.detail("")
            parent = path.parent.name.upper() if path.parent != folder else None
            try:
                stored = await ingest_file(
                    pool,
                    embedder,
                    path,
                    collection=FILINGS_COLLECTION,
                    settings=settings,
                    folder_symbol=parent,
                )
            except Exception as error:  # one unreadable file must not keep finq from starting
                failed += 1
                say(f"{where}: not loaded ({type(error).__name__}: {error})")
                continue
            loaded += 1
            say(f"{where}: {stored.chunks} chunks, {stored.tables} tables ({stored.seconds:.1f} s)")
    finally:
        step.finish()
        await pool.close()
    say(f"filings: {loaded} loaded, {held} already held, {failed} failed")
    return loaded, held, failed
