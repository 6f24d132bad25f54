"""What crosses a process is typed: no field of a message in shared/contracts/ (nor of an
HTTP body, services/gateway/http_models.py) is a free `dict[str, Any]` (or `Any`), but for
an external format kept as JSON, each named here with why. Tool arguments, the route and
what the router read are typed models."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import CallOfTool, ToolCall
from shared.tools import (
    TOOL_SPECS,
    GetPortfolioActivityArgs,
    GetPricesArgs,
    SearchDocumentsArgs,
)

REPO = Path(__file__).resolve().parents[2]
# The stages' messages, and the gateway's HTTP bodies.
CONTRACTS = (
    *sorted((REPO / "shared" / "contracts").glob("*.py")),
    REPO / "services" / "gateway" / "http_models.py",
)

# (class, field): why it may stay free JSON.
EXTERNAL_JSON = {
    ("AnswerDrafted", "chart"): "a Vega-Lite chart specification",
    ("AnswerValidated", "chart"): "a Vega-Lite chart specification",
    ("AskResponse", "chart"): "a Vega-Lite chart specification",
    ("RequestLog", "validation"): "the query log's validation column as stored",
    ("RequestLog", "tokens"): "each stage's model usage, as the query log stores it",
    ("DocumentJob", "metadata"): "what a parser read of an uploaded file's own metadata",
}


def free_json_fields() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    nodes = [node for path in CONTRACTS for node in ast.walk(ast.parse(path.read_text()))]
    for node in nodes:
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and re.search(r"\bAny\b", ast.unparse(statement.annotation))
            ):
                found.add((node.name, statement.target.id))
    return found


def test_no_message_field_is_free_json_but_the_external_formats() -> None:
    assert free_json_fields() == set(EXTERNAL_JSON)


def test_every_tools_arguments_decode_into_its_own_model_on_the_far_side() -> None:
    for spec in TOOL_SPECS:
        assert spec.arguments in CallOfTool.model_fields["arguments"].annotation.__args__  # type: ignore[union-attr]
    call = ToolCall(tool="get_prices", arguments={"symbol": "AAPL", "start": "2022-01-03"})
    route = RouteDecided(question="q", intent="price", tool_calls=[call])
    decoded = RouteDecided.model_validate_json(route.model_dump_json())
    assert isinstance(decoded.tool_calls[0].arguments, GetPricesArgs)
    assert decoded == route


def test_a_tool_argument_with_a_nul_character_is_refused_before_the_database() -> None:
    # PostgreSQL's text cannot hold NUL; a model's garbled argument must be a refusal the
    # router can answer, not a stage that fails five times on the database.
    with pytest.raises(ValueError, match="NUL"):
        GetPortfolioActivityArgs(account="Roth\x00IRA")
    with pytest.raises(ValueError, match="NUL"):
        SearchDocumentsArgs(query="supply\x00risk")
    assert GetPortfolioActivityArgs(account="Roth IRA").account == "Roth IRA"
