"""The intent registry is the one list of intents: the contract, the tools and the policy."""

from __future__ import annotations

import typing

from shared.contracts import Intent
from shared.intents import INTENTS, INTENTS_BY_NAME, tool_allowed
from shared.tool_schemas import TOOL_ARGUMENTS


def test_every_intent_in_the_contract_has_a_definition_and_no_other() -> None:
    assert set(typing.get_args(Intent)) == set(INTENTS_BY_NAME)
    assert len(INTENTS) == len(INTENTS_BY_NAME)


def test_every_tool_an_intent_allows_has_an_argument_schema() -> None:
    for intent in INTENTS:
        assert intent.tools <= set(TOOL_ARGUMENTS), intent.name


def test_intents_other_than_clarify_and_refusals_have_tools_and_examples() -> None:
    for intent in INTENTS:
        if intent.name not in {"clarify", "out_of_scope"}:
            assert intent.tools, intent.name
        if intent.name != "clarify":
            assert intent.examples, intent.name


def test_the_policy_allows_an_intents_own_tools_and_refuses_the_rest() -> None:
    assert tool_allowed("metric_lookup", "get_financial_metrics")
    assert not tool_allowed("metric_lookup", "get_prices")
    assert not tool_allowed("out_of_scope", "get_financial_metrics")
    assert not tool_allowed("portfolio_position", "get_financial_metrics")
    assert not tool_allowed("no_such_intent", "get_prices")
