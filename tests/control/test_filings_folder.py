"""`finq up` with FINQ_FILINGS_DIR loads the user's folder of filings after the dataset, as
`finq ingest filings DIR` does; a restart over the same folder keeps what is held without
loading the embedding model."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from services.control.filings_folder import ingest_filings_dir
from services.control.settings import ControlSettings
from tests.conftest import Servers, own_database
from tests.helpers import run_finq

NOTE = (
    "Notes on the annual report for fiscal 2031.\n\n"
    "As of June 30, 2031, the Company had approximately 41,500 full-time equivalent employees."
)


def test_the_filings_folder_is_unset_by_default_and_read_from_the_environment(
    monkeypatch: object,
) -> None:
    assert ControlSettings().filings_dir is None
    monkeypatch.setenv("FINQ_FILINGS_DIR", "/data/filings")  # type: ignore[attr-defined]
    assert ControlSettings().filings_dir == Path("/data/filings")


async def test_a_folder_of_filings_is_loaded_once_and_kept_on_restart(
    servers: Servers, tmp_path: Path
) -> None:
    (tmp_path / "AAPL").mkdir()
    (tmp_path / "AAPL" / "notes-2031.txt").write_text(NOTE, encoding="utf-8")
    (tmp_path / "AAPL" / "broken.pdf").write_bytes(b"not a pdf")
    first: list[str] = []
    again: list[str] = []

    async with own_database(servers, "t_filings_folder") as dsn:
        counts = await ingest_filings_dir(dsn, tmp_path, first.append)
        (tmp_path / "AAPL" / "broken.pdf").unlink()  # a file that failed is tried again
        restart = await ingest_filings_dir(dsn, tmp_path, again.append)
        conn = await asyncpg.connect(dsn)
        try:
            held = await conn.fetch("SELECT collection, source_name FROM documents")
        finally:
            await conn.close()

    assert counts == (1, 0, 1)
    assert restart == (0, 1, 0)
    assert [(r["collection"], r["source_name"]) for r in held] == [("filings", "notes-2031.txt")]
    assert first[0] == f"filings in {tmp_path}: 2 files"
    assert any("broken.pdf: not loaded" in line for line in first)
    assert "loading the embedding model" in first
    assert "loading the embedding model" not in again
    assert "[1/1] AAPL/notes-2031.txt: held" in again


async def test_finq_ingest_filings_counts_the_files_by_name_on_stderr(
    database: str, tmp_path: Path
) -> None:
    (tmp_path / "AAPL").mkdir()
    (tmp_path / "AAPL" / "notes-2031.txt").write_text(NOTE, encoding="utf-8")
    (tmp_path / "AAPL" / "notes-2032.txt").write_text(NOTE.replace("2031", "2032"), "utf-8")

    code, out, err = await run_finq("ingest", "filings", str(tmp_path), database=database)

    assert code == 0, err
    progress = err.splitlines()
    assert any(line.startswith("ingesting filings: 1/2 AAPL/notes-2031.txt") for line in progress)
    assert any(line.startswith("ingesting filings: 2/2 AAPL/notes-2032.txt") for line in progress)
    assert any(line.startswith("ingesting filings: 2/2 done in") for line in progress), err
    # stdout is what it was: the model being loaded, then a line per document stored.
    lines = out.splitlines()
    assert lines[0] == "loading the embedding model"
    assert len(lines) == 3 and all("chunks" in line for line in lines[1:]), out
    assert "ingesting filings" not in out
