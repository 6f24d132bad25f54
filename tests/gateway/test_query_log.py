"""The query log: one row per request with route, tools, validation, attempts and per-stage
timings, read back with GET /v1/requests/{request_id}."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.e2e


async def test_a_request_is_logged_with_its_route_tools_validation_and_timings(
    client: httpx.AsyncClient,
) -> None:
    asked = (
        await client.post("/v1/ask", json={"question": "What was Apple's revenue in fiscal 2023?"})
    ).json()
    response = await client.get(f"/v1/requests/{asked['request_id']}")
    assert response.status_code == 200
    log = response.json()
    assert log["question"] == "What was Apple's revenue in fiscal 2023?"
    assert log["conversation_id"] == asked["conversation_id"]
    assert (log["intent"], log["decided_by"], log["attempts"]) == ("metric_lookup", "rules", 1)
    assert log["route"]["tool_calls"][0]["arguments"]["fiscal_years"] == [2023]
    [tool] = log["tools"]
    assert (tool["tool"], tool["facts"], tool["error"]) == ("get_financial_metrics", 1, None)
    assert log["validation"]["passed"] is True
    assert set(log["timings_ms"]) == {"router", "tools", "answerer", "validator"}
    assert all(ms >= 0 for ms in log["timings_ms"].values())
    assert log["total_ms"] >= sum(log["timings_ms"].values()) - log["timings_ms"]["validator"]
    assert log["tokens"] == {} and log["cost_usd"] is None


async def test_a_refused_question_is_logged_with_no_tools(client: httpx.AsyncClient) -> None:
    asked = (await client.post("/v1/ask", json={"question": "Tell me a joke"})).json()
    log = (await client.get(f"/v1/requests/{asked['request_id']}")).json()
    assert (log["intent"], log["tools"]) == ("out_of_scope", [])


async def test_an_unknown_request_is_a_404_json_error(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/requests/not-a-request")
    assert response.status_code == 404
    assert response.json()["code"] == "request_not_found"
