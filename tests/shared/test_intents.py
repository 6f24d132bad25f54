"""The intent registry is the one list of intents: the contract, the tools and the policy."""

from __future__ import annotations

import typing

from shared.contracts.understanding import Intent
from shared.intents import INTENT_NAMES, INTENTS, INTENTS_BY_NAME
from shared.tools import ALLOWED_TOOLS, TOOL_ARGUMENTS, TOOL_SPECS, tool_allowed, tools_of


def test_every_intent_in_the_contract_has_a_definition_and_no_other() -> None:
    assert set(typing.get_args(Intent)) == set(INTENTS_BY_NAME)
    assert len(INTENTS) == len(INTENTS_BY_NAME)


def test_every_tool_an_intent_allows_has_an_argument_schema() -> None:
    for intent in INTENTS:
        assert tools_of(intent.name) <= set(TOOL_ARGUMENTS), intent.name
    assert set(ALLOWED_TOOLS) == set(INTENT_NAMES)


def test_every_tool_serves_only_registered_intents() -> None:
    for spec in TOOL_SPECS:
        assert spec.intents, spec.name
        assert set(spec.intents) <= set(INTENTS_BY_NAME), spec.name
        for intent in spec.intents:
            assert spec.name in tools_of(intent), (spec.name, intent)


def test_intents_other_than_clarify_and_refusals_have_tools_and_examples() -> None:
    for intent in INTENTS:
        if intent.name in {"clarify", "out_of_scope"}:
            assert not tools_of(intent.name), intent.name
        else:
            assert tools_of(intent.name), intent.name
        if intent.name != "clarify":
            assert intent.examples, intent.name


def test_the_policy_allows_an_intents_own_tools_and_refuses_the_rest() -> None:
    assert tool_allowed("metric_lookup", "get_financial_metrics")
    assert not tool_allowed("metric_lookup", "get_prices")
    assert not tool_allowed("out_of_scope", "get_financial_metrics")
    assert not tool_allowed("portfolio_position", "get_financial_metrics")
    assert not tool_allowed("no_such_intent", "get_prices")
    assert tools_of("no_such_intent") == frozenset()
