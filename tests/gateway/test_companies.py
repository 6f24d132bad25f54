"""GET /v1/companies on the session's pipeline: the bundled companies by name, each with its
tickers, CIK, fiscal year end, the fiscal years of its figures and the days of its prices;
an upload naming a company is counted for its uploader and for no one else."""

from __future__ import annotations

import os
from typing import Any

import asyncpg
import httpx

from shared.identity import add_user
from tests.conftest import RunningFinq
from tests.helpers import wait_until

BUNDLED = {"AAPL", "AMZN", "FB", "GOOGL", "MSFT", "NVDA", "TSLA"}
# Reading an upload embeds it (the first one loads the model in the ingest stage).
INGEST_SECONDS = 240


async def new_user_key(finq: RunningFinq, name: str) -> str:
    conn = await asyncpg.connect(finq.servers.postgres.dsn)
    try:
        return (await add_user(conn, f"{name}-{os.urandom(3).hex()}"))[1]
    finally:
        await conn.close()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def by_symbol(response: httpx.Response) -> dict[str, dict[str, Any]]:
    assert response.status_code == 200, response.text
    return {company["symbol"]: company for company in response.json()["companies"]}


async def test_the_bundled_companies_come_by_name_with_what_finq_holds_of_each(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/v1/companies")
    listed = response.json()["companies"]
    companies = by_symbol(response)

    assert set(companies) >= BUNDLED
    names = [company["name"].lower() for company in listed]
    assert names == sorted(names)
    apple = companies["AAPL"]
    assert (apple["name"], apple["display_name"], apple["cik"]) == (
        "Apple Inc.",
        "Apple",
        "0000320193",
    )
    assert apple["tickers"] == ["AAPL"]
    assert apple["fiscal_year_end"] == {"month": 9, "day": 26}
    figures = apple["figures"]
    assert figures["first_fiscal_year"] == 2007 and figures["last_fiscal_year"] >= 2025
    assert 2023 in figures["annual_fiscal_years"] and figures["values"] > 1000
    assert apple["prices"]["first_day"] == "1980-12-12"
    assert companies["GOOGL"]["tickers"] == ["GOOGL", "GOOG"]
    # Held with prices only: no CIK, no fiscal year, no figures.
    amazon = companies["AMZN"]
    assert amazon["cik"] is None and amazon["fiscal_year_end"] is None
    assert amazon["figures"] is None and amazon["prices"]["first_day"] < "2000-01-01"
    # Held with figures only.
    assert companies["TSLA"]["prices"] is None and companies["TSLA"]["figures"] is not None
    assert all(c["documents"]["uploads"] >= 0 for c in listed)


async def test_an_upload_naming_a_company_counts_for_its_uploader_and_no_one_else(
    client: httpx.AsyncClient, finq: RunningFinq
) -> None:
    alice = await new_user_key(finq, "companies-alice")
    bob = await new_user_key(finq, "companies-bob")
    before = by_symbol(await client.get("/v1/companies", headers=bearer(alice)))
    assert before["TSLA"]["documents"]["uploads"] == 0

    notes = f"Tesla delivery notes {os.urandom(4).hex()}: deliveries rose.\n".encode()
    uploaded = await client.post(
        "/v1/documents",
        files={"file": ("tesla-notes.txt", notes, "text/plain")},
        data={"symbol": "TSLA"},
        headers=bearer(alice),
    )
    assert uploaded.status_code == 202, uploaded.text
    document_id = uploaded.json()["id"]

    async def read() -> bool:
        job = await client.get(f"/v1/documents/{document_id}", headers=bearer(alice))
        status = job.json()["status"]
        assert status != "failed", job.text
        return status == "ready"

    await wait_until(read, within=INGEST_SECONDS, every=0.25)

    hers = by_symbol(await client.get("/v1/companies", headers=bearer(alice)))["TSLA"]
    his = by_symbol(await client.get("/v1/companies", headers=bearer(bob)))["TSLA"]
    assert hers["documents"]["uploads"] == 1
    assert his["documents"]["uploads"] == 0
    assert hers["documents"]["filings"] == his["documents"]["filings"]


async def test_a_key_that_is_not_valid_is_refused_with_the_error_body(
    client: httpx.AsyncClient,
) -> None:
    refused = await client.get("/v1/companies", headers=bearer("finq_" + "A" * 43))

    assert refused.status_code == 401
    assert set(refused.json()) == {"code", "message"}
    assert refused.json()["code"] == "unauthorized"


async def test_the_route_is_in_the_openapi_schema_with_its_answer_and_refusals(
    client: httpx.AsyncClient,
) -> None:
    schema = (await client.get("/openapi.json")).json()
    operation = schema["paths"]["/v1/companies"]["get"]

    assert {"200", "401", "429", "503"} <= set(operation["responses"])
    answer = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert answer["$ref"].endswith("/CompanyList")
    holdings = schema["components"]["schemas"]["CompanyHoldings"]["properties"]
    assert {"name", "tickers", "cik", "fiscal_year_end", "figures", "prices", "documents"} <= set(
        holdings
    )
