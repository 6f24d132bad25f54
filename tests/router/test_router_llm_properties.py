"""The model layer takes whatever the schemas it offers allow: a stand-in model that calls
every tool with random schema-valid arguments (drawn from the strict schemas the router
sends) gets a typed route that decodes on the tools stage's side, or a clarifying
question, and never an exception. Through the five real processes, a model that picks each
tool in turn gets every question answered: no 502 and no dead letter."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI

from services.router.llm_selection import DECLINE, LlmToolSelector, tool_schemas
from services.router.routing import Router
from services.router.rules import CompanyDirectory, CompanyEntry, metric_finder
from shared.contracts.questions import QuestionAsked, RouteDecided
from shared.tools import TOOL_SPECS, tool_allowed
from tests.conftest import ModelPipeline
from tests.json_schema_values import smallest_of, values_of
from tests.openai_stand_in import OpenAIStandIn, ScriptedReply

# What the router offers the model, as the model reads it: the strict schemas.
OFFERED: dict[str, dict[str, Any]] = {
    definition["function"]["name"]: definition["function"]["parameters"]
    for definition in tool_schemas()
}
DIRECTORY = CompanyDirectory(
    (
        CompanyEntry("AAPL", "Apple", ("apple",), 2025),
        CompanyEntry("NVDA", "NVIDIA", ("nvidia",), 2025),
    )
)
# No cue of any intent: the rules are unsure, so the router asks the model.
UNREAD = "zqx blorp wibble"


def offered_calls() -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    return st.one_of(
        *(
            values_of(schema).map(lambda arguments, name=name: (name, arguments))
            for name, schema in OFFERED.items()
        )
    )


@pytest.fixture(scope="module")
async def model() -> AsyncIterator[OpenAIStandIn]:
    async with OpenAIStandIn([]) as server:
        yield server


def test_every_tool_is_offered_with_a_strict_closed_schema() -> None:
    assert set(OFFERED) >= {spec.name for spec in TOOL_SPECS}
    for spec in TOOL_SPECS:
        [definition] = [d for d in tool_schemas() if d["function"]["name"] == spec.name]
        assert definition["function"]["strict"] is True
        schema = definition["function"]["parameters"]
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) == set(schema["properties"])


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(call=offered_calls())
async def test_any_call_the_schemas_allow_becomes_a_typed_route_or_a_clarifying_question(
    model: OpenAIStandIn, call: tuple[str, dict[str, Any]]
) -> None:
    # The same call twice: a call the argument model refuses (a span that ends before it
    # starts, a figure no catalog names) gets one corrective retry.
    model.replies[:] = [ScriptedReply(tool_calls=[call]), ScriptedReply(tool_calls=[call])]
    client = AsyncOpenAI(api_key="test-key", base_url=model.base_url, max_retries=0)
    try:
        selector = LlmToolSelector(client, "scripted-model", "finq answers about Apple")
        router = Router(DIRECTORY, metric_finder(DIRECTORY), selector=selector)
        route = await router.route(QuestionAsked(question=UNREAD))
    finally:
        await client.close()
    # What the router stage publishes decodes as the tools stage reads it.
    decoded = RouteDecided.model_validate_json(route.model_dump_json())
    assert decoded == route
    name, _ = call
    assert route.decided_by == "llm"
    if name == DECLINE:
        assert (route.intent, route.tool_calls) == ("out_of_scope", [])
    elif route.tool_calls:
        [planned] = route.tool_calls
        assert planned.tool == name
        assert tool_allowed(route.intent, planned.tool)
    else:  # asked for, or after two calls the argument model refused
        assert route.intent == "clarify" and route.clarifying_question


def minimal_arguments(name: str, filled: bool) -> dict[str, Any]:
    """The smallest call of a tool that its schema allows: every optional argument null,
    or (`filled`) each at its smallest value. The same on every run, so the end-to-end test
    asks the same questions each time."""
    return smallest_of(OFFERED[name], filled=filled)  # type: ignore[no-any-return]


@pytest.mark.e2e
async def test_a_model_that_picks_each_tool_gets_every_question_answered(
    model_pipeline: ModelPipeline,
) -> None:
    calls = [
        (spec.name, minimal_arguments(spec.name, filled))
        for spec in TOOL_SPECS
        for filled in (False, True)
    ]
    client = model_pipeline.client
    for name, arguments in calls:
        # The router's call and its retry (a smallest call may be one the argument model
        # refuses); the answerer then finds no reply left (an HTTP 500) and falls back to
        # its template, which the validator checks as always.
        model_pipeline.script(*[ScriptedReply(tool_calls=[(name, arguments)])] * 2)
        response = await client.post("/v1/ask", json={"question": UNREAD})
        assert response.status_code == 200, (name, arguments, response.text)
        route = response.json()["route"]
        assert route["decided_by"] == "llm", (name, json.dumps(arguments))
        planned = [call["tool"] for call in route["tool_calls"]]
        assert planned == [name] or (planned, route["intent"]) == ([], "clarify")
    dead = await client.get("/v1/admin/dead-letters?limit=500")
    assert dead.status_code == 200
    assert dead.json()["dead_letters"] == []
