"""A company finq knows of from SEC's directory but holds no data for, through the live
pipeline: before the directory is loaded finq asks which company; once `finq ingest
directory` has loaded it, the running router hears of it and names the company and the
command that loads it; once that company's figures are loaded, the same question is
answered with its figure. No stage is restarted in between."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Servers, own_pipeline
from tests.helpers import run_finq, wait_until

pytestmark = pytest.mark.e2e

QUESTION = "What was Costco's revenue in fiscal 2023?"
COSTCO_CIK = 909832

# SEC's company_tickers.json in its own shape, cut to a few rows (written for this test).
DIRECTORY = {
    "0": {"cik_str": 1045810, "ticker": "NVDA", "title": "NVIDIA CORP"},
    "1": {"cik_str": 320193, "ticker": "AAPL", "title": "Apple Inc."},
    "2": {"cik_str": COSTCO_CIK, "ticker": "COST", "title": "COSTCO WHOLESALE CORP /NEW"},
}

# A companyfacts file in SEC's shape with one figure, made up for this test: fiscal 2023
# revenue of a 53-week year ending on 3 September 2023.
REVENUE = 242_290_000_000
COMPANYFACTS = {
    "cik": COSTCO_CIK,
    "entityName": "COSTCO WHOLESALE CORP /NEW",
    "facts": {
        "us-gaap": {
            "RevenueFromContractWithCustomerExcludingAssessedTax": {
                "units": {
                    "USD": [
                        {
                            "start": "2022-08-29",
                            "end": "2023-09-03",
                            "val": REVENUE,
                            "accn": "0000909832-23-000035",
                            "fy": 2023,
                            "fp": "FY",
                            "form": "10-K",
                            "filed": "2023-10-11",
                        }
                    ]
                }
            }
        }
    },
}


async def ask(client: httpx.AsyncClient, question: str) -> dict[str, Any]:
    response = await client.post("/v1/ask", json={"question": question})
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_known_company_is_named_with_its_load_command_then_answered_once_loaded(
    servers: Servers, tmp_path: Path
) -> None:
    name = "t_known_filers"
    async with own_pipeline(servers, tmp_path, name) as client:
        database = servers.postgres.dsn_for(name)

        before = await ask(client, QUESTION)
        assert before["route"]["intent"] == "clarify"
        assert "finq ingest sec" not in before["answer"]

        directory_file = tmp_path / "company_tickers.json"
        directory_file.write_text(json.dumps(DIRECTORY))
        code, _, err = await run_finq(
            "ingest", "directory", "--file", str(directory_file), database=database
        )
        assert code == 0, err

        named: dict[str, Any] = {}

        async def names_the_load_command() -> bool:
            named.update(await ask(client, QUESTION))
            return "`finq ingest sec COST`" in named["answer"]

        await wait_until(names_the_load_command, within=30, every=0.3)
        assert "COSTCO WHOLESALE CORP (COST)" in named["answer"]
        assert named["route"]["understood"]["filers_not_held"][0]["cik"] == COSTCO_CIK
        assert named["validation"]["passed"], named["validation"]

        facts_file = tmp_path / "CIK0000909832.json"
        facts_file.write_text(json.dumps(COMPANYFACTS))
        code, _, err = await run_finq(
            "ingest", "companyfacts", str(facts_file), "--symbol", "COST", database=database
        )
        assert code == 0, err

        answered: dict[str, Any] = {}

        async def answers_with_the_figure() -> bool:
            answered.update(await ask(client, QUESTION))
            return answered["route"]["intent"] == "metric_lookup"

        await wait_until(answers_with_the_figure, within=30, every=0.3)
        assert "$242.3 billion" in answered["answer"], answered["answer"]
        assert answered["validation"]["passed"], answered["validation"]
