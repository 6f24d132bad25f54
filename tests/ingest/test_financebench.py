"""FinanceBench (the open-source 150, ../shared/data/qa/financebench; licensed for
non-commercial use, so read from ../shared and never copied here): the rows whose filings
finq holds in ../shared/data/filings, asked through the five processes once those filings'
statements are read. finq holds no XBRL figures for Amazon or Microsoft, so every figure
comes from the filing's own income statement, balance sheet or cash-flow statement, and
each answer cites the statement's page.

The filings are held as finq's ingest reads them (services/ingest/statement_store.py),
without their text index: these questions ask for figures, which the statements answer.
A row counts as right when the answer states its figure, to the precision the answer
shows, and cites a statement page."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest

from services.control.stated_figures import KIND_OF_UNIT, stated_numbers
from services.ingest.documents import hints_from_name
from services.ingest.statement_store import replace_statement_figures, statement_rows
from tests.conftest import RunningFinq
from tests.helpers import parsed_filing, require_shared_data, shared_data_dir

pytestmark = pytest.mark.e2e

# What each answer must state, read from FinanceBench's own answer: the figure, in its unit.
_FIGURE = re.compile(r"-?\$?(\d[\d,]*(?:\.\d+)?)\s*(%|bn|billion)?")


@dataclass(frozen=True)
class Row:
    id: str
    question: str
    answer: str
    symbol: str
    file_name: str


def held_rows() -> list[Row]:
    """The rows whose filing stands under ../shared/data/filings, by its document name."""
    path = require_shared_data("qa", "financebench", "financebench_open_source.jsonl")
    filings = shared_data_dir() / "filings"
    rows: list[Row] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for held in filings.glob(f"*/{row['doc_name']}.pdf"):
            rows.append(
                Row(
                    row["financebench_id"],
                    row["question"],
                    str(row["answer"]),
                    held.parent.name,
                    held.name,
                )
            )
    return rows


@dataclass(frozen=True)
class Expected:
    value: float
    unit: str | None
    step: float  # the unit of the expected figure's last digit: 0.1e9 for "$2.5bn"


def expected_value(answer: str) -> Expected:
    """FinanceBench's figure, unit and precision: "93.86", "30.8%", "$11588.00" (USD
    millions, as the questions ask), "decreased its debt by $2.5bn"."""
    match = _FIGURE.search(answer)
    assert match is not None, answer
    digits = match.group(1).replace(",", "")
    value = float(digits)
    step = 10.0 ** -len(digits.partition(".")[2])
    unit = match.group(2)
    if unit in ("bn", "billion"):
        return Expected(value * 1e9, "USD", step * 1e9)
    if unit == "%":
        return Expected(value, "%", step)
    if "$" in match.group(0):
        return Expected(value * 1e6, "USD", step * 1e6)
    return Expected(value, None, step)


def states(answer: str, expected: Expected) -> bool:
    """Whether the answer states the figure (its sign aside: "decreased by $2.5bn" is a
    change of −$2.5 billion) to the coarser of its precision and the expected one's."""
    for number in stated_numbers(answer):
        if expected.unit and number.kind and number.kind != KIND_OF_UNIT.get(expected.unit):
            continue
        allowed = max(float(number.step), expected.step) / 2
        if min(abs(float(number.value) - v) for v in (expected.value, -expected.value)) <= (
            allowed + 1e-9 * abs(expected.value)
        ):
            return True
    return False


@pytest.fixture(scope="module")
async def held_filings(finq: RunningFinq) -> AsyncIterator[list[Row]]:
    """The rows' filings held as public filings with their statements read; removed after."""
    rows = held_rows()
    owner = await asyncpg.connect(finq.servers.postgres.dsn)
    ids: list[uuid.UUID] = []
    try:
        for symbol, name in sorted({(row.symbol, row.file_name) for row in rows}):
            document = copy.copy(parsed_filing(symbol, name))
            hints = hints_from_name(name)
            document.symbol, document.form = symbol, hints.form
            document.fiscal_year = document.fiscal_year or hints.fiscal_year
            document_id = uuid.uuid4()
            await owner.execute(
                "INSERT INTO documents (id, collection, title, doc_type, symbol, form, "
                "fiscal_year, content_sha256, page_count, status, progress, user_id) "
                "VALUES ($1, 'filings', $2, 'pdf', $3, $4, $5, $6, $7, 'ready', 1, NULL)",
                document_id,
                f"{symbol} {hints.form} FY{document.fiscal_year}",
                symbol,
                hints.form,
                document.fiscal_year,
                hashlib.sha256(f"financebench:{name}:{document_id}".encode()).hexdigest(),
                document.page_count,
            )
            await replace_statement_figures(
                owner, document_id, statement_rows(document, document_id, None)
            )
            ids.append(document_id)
        yield rows
    finally:
        await owner.execute("DELETE FROM documents WHERE id = ANY($1::uuid[])", ids)
        await owner.close()


async def test_financebench_rows_whose_filings_finq_holds_are_answered_from_the_statements(
    held_filings: list[Row], client: httpx.AsyncClient
) -> None:
    assert len(held_filings) == 5, [row.id for row in held_filings]
    right: list[str] = []
    report: list[str] = []
    for row in held_filings:
        response = await client.post("/v1/ask", json={"question": row.question})
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        pages = [c.get("page") for c in body.get("citations", []) if c.get("page")]
        ok = (
            states(body["answer"], expected_value(row.answer))
            and bool(pages)
            and body["validation"]["passed"]
        )
        if ok:
            right.append(row.id)
        verdict = "right" if ok else "WRONG"
        report.append(f"{row.id} {verdict} pages {pages}: {body['answer'][:300]}")
    print("\n".join(report))
    # All five, each citing the statement page (the bar was four): Days payable
    # outstanding by the formula the question gives, from the balance sheet and income
    # statement cells it names.
    assert len(right) == 5, "\n".join(report)
