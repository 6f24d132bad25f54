"""Every tool finq runs, declared once as a `ToolSpec` in its family's module and listed in
`TOOL_SPECS`; everything else about tools is derived from that list.

Adding a tool is its spec (name, argument model, runner, needs, intents) in a module here,
its runner in the tools stage, and one line in `TOOL_SPECS`. The wire type of a call
(`shared.contracts.ToolCall`), the whitelist of each intent, the model's function
schemas, dispatch in the tools stage, the policy gate, and which intent a call answers are
all read from the specs.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from shared.intents import INTENT_NAMES
from shared.tools.documents import (
    COURSES_COLLECTION,
    FILINGS_COLLECTION,
    GLOSSARY_COLLECTION,
    SEARCH_DOCUMENTS,
    SEARCH_DOCUMENTS_SPEC,
    UPLOADS_COLLECTION,
    SearchDocumentsArgs,
)
from shared.tools.figures import (
    GET_FINANCIAL_METRICS,
    GET_FINANCIAL_METRICS_SPEC,
    LIST_METRICS,
    LIST_METRICS_SPEC,
    AsFiled,
    FilingForm,
    GetFinancialMetricsArgs,
    ListMetricsArgs,
    catalog_ids,
)
from shared.tools.market import (
    GET_PRICES,
    GET_PRICES_SPEC,
    GET_RECENT_FILINGS,
    GET_RECENT_FILINGS_SPEC,
    GetPricesArgs,
    GetRecentFilingsArgs,
)
from shared.tools.portfolio import (
    GET_ACCOUNT_VALUE,
    GET_ACCOUNT_VALUE_SPEC,
    GET_CASH_BALANCE,
    GET_CASH_BALANCE_SPEC,
    GET_PORTFOLIO_ACTIVITY,
    GET_PORTFOLIO_ACTIVITY_SPEC,
    GET_PORTFOLIO_PERFORMANCE,
    GET_PORTFOLIO_PERFORMANCE_SPEC,
    GET_POSITIONS,
    GET_POSITIONS_SPEC,
    RANK_HOLDINGS,
    RANK_HOLDINGS_SPEC,
    SCREEN_HOLDINGS,
    SCREEN_HOLDINGS_SPEC,
    SEARCH_HOLDINGS_DOCUMENTS,
    SEARCH_HOLDINGS_DOCUMENTS_SPEC,
    AccountPhrase,
    ActivityKindName,
    AssetClassName,
    GetAccountValueArgs,
    GetCashBalanceArgs,
    GetPortfolioActivityArgs,
    GetPortfolioPerformanceArgs,
    GetPositionsArgs,
    PortfolioArgs,
    RankByName,
    RankHoldingsArgs,
    ScreenHoldingsArgs,
    SearchHoldingsDocumentsArgs,
    TimeframeArgs,
)
from shared.tools.spec import (
    Dependency,
    FiscalYear,
    Symbol,
    ToolArguments,
    ToolSpec,
    forms_as_sec_spells_them,
)

# The registry, in the order the model is offered the tools.
TOOL_SPECS: tuple[ToolSpec[Any], ...] = (
    GET_FINANCIAL_METRICS_SPEC,
    GET_PRICES_SPEC,
    GET_RECENT_FILINGS_SPEC,
    LIST_METRICS_SPEC,
    SEARCH_DOCUMENTS_SPEC,
    GET_POSITIONS_SPEC,
    GET_PORTFOLIO_ACTIVITY_SPEC,
    GET_PORTFOLIO_PERFORMANCE_SPEC,
    RANK_HOLDINGS_SPEC,
    GET_ACCOUNT_VALUE_SPEC,
    GET_CASH_BALANCE_SPEC,
    SCREEN_HOLDINGS_SPEC,
    SEARCH_HOLDINGS_DOCUMENTS_SPEC,
)

TOOL_SPECS_BY_NAME: dict[str, ToolSpec[Any]] = {spec.name: spec for spec in TOOL_SPECS}
TOOL_NAMES: tuple[str, ...] = tuple(TOOL_SPECS_BY_NAME)
# The wire name of a tool: the registered names, so a call naming any other fails to decode.
ToolName = Literal[TOOL_NAMES]  # type: ignore[valid-type]
# Any tool's arguments; `shared.contracts.ToolCall` picks the one its `tool` names.
AnyToolArguments = Union[tuple(spec.arguments for spec in TOOL_SPECS)]  # type: ignore[valid-type]  # noqa: UP007
TOOL_ARGUMENTS: dict[str, type[ToolArguments]] = {spec.name: spec.arguments for spec in TOOL_SPECS}


def _checked_registry() -> None:
    """A spec that names an intent nobody registered, or two specs of one name or one
    argument model, fail at import: at start, not at the first question."""
    if len(TOOL_SPECS_BY_NAME) != len(TOOL_SPECS):
        raise ValueError("two tool specs share a name")
    if len({spec.arguments for spec in TOOL_SPECS}) != len(TOOL_SPECS):
        raise ValueError("two tool specs share an argument model")
    for spec in TOOL_SPECS:
        unknown = set(spec.intents) - set(INTENT_NAMES)
        if unknown:
            raise ValueError(f"the tool {spec.name} serves unregistered intents {unknown}")


_checked_registry()

# Which tools each intent may call: the router plans only these, the model is offered only
# these, and the tools stage refuses anything else.
ALLOWED_TOOLS: dict[str, frozenset[str]] = {
    intent: frozenset(spec.name for spec in TOOL_SPECS if intent in spec.intents)
    for intent in INTENT_NAMES
}


def tool_allowed(intent: str, tool: str) -> bool:
    """The policy, in one place: a call may answer an intent only when its tool serves it."""
    return tool in ALLOWED_TOOLS.get(intent, frozenset())


def tools_of(intent: str) -> frozenset[str]:
    return ALLOWED_TOOLS.get(intent, frozenset())


__all__ = [
    "ALLOWED_TOOLS",
    "COURSES_COLLECTION",
    "FILINGS_COLLECTION",
    "GET_ACCOUNT_VALUE",
    "GET_CASH_BALANCE",
    "GET_FINANCIAL_METRICS",
    "GET_PORTFOLIO_ACTIVITY",
    "GET_PORTFOLIO_PERFORMANCE",
    "GET_POSITIONS",
    "GET_PRICES",
    "GET_RECENT_FILINGS",
    "GLOSSARY_COLLECTION",
    "LIST_METRICS",
    "RANK_HOLDINGS",
    "SCREEN_HOLDINGS",
    "SEARCH_DOCUMENTS",
    "SEARCH_HOLDINGS_DOCUMENTS",
    "TOOL_ARGUMENTS",
    "TOOL_NAMES",
    "TOOL_SPECS",
    "TOOL_SPECS_BY_NAME",
    "UPLOADS_COLLECTION",
    "AccountPhrase",
    "ActivityKindName",
    "AnyToolArguments",
    "AsFiled",
    "AssetClassName",
    "Dependency",
    "FilingForm",
    "FiscalYear",
    "GetAccountValueArgs",
    "GetCashBalanceArgs",
    "GetFinancialMetricsArgs",
    "GetPortfolioActivityArgs",
    "GetPortfolioPerformanceArgs",
    "GetPositionsArgs",
    "GetPricesArgs",
    "GetRecentFilingsArgs",
    "ListMetricsArgs",
    "PortfolioArgs",
    "RankByName",
    "RankHoldingsArgs",
    "ScreenHoldingsArgs",
    "SearchDocumentsArgs",
    "SearchHoldingsDocumentsArgs",
    "Symbol",
    "TimeframeArgs",
    "ToolArguments",
    "ToolName",
    "ToolSpec",
    "catalog_ids",
    "forms_as_sec_spells_them",
    "tool_allowed",
    "tools_of",
]
