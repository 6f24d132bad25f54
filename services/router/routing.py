"""The router's layers in order: rules (with the conversation), the trained classifier when
rules are unsure, the LLM when both are unsure and one is configured; then the policy gate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from services.router.metric_finding import MetricFinder
from services.router.rules import (
    CompanyDirectory,
    IntentPredictor,
    RuleThresholds,
    capabilities,
    route_question,
)
from shared.contracts import ConversationTurn, QuestionAsked, RouteDecided
from shared.intents import tool_allowed

log = structlog.get_logger()


class ToolSelector(Protocol):
    """Layer 3: chooses a whitelisted tool call for a question rules and classifier left open;
    None when it cannot (no answer in time, an error)."""

    async def select(
        self, question: str, history: Sequence[ConversationTurn], hints: dict[str, Any]
    ) -> RouteDecided | None: ...


@dataclass
class Router:
    directory: CompanyDirectory
    finder: MetricFinder
    classifier: IntentPredictor | None = None
    selector: ToolSelector | None = None
    thresholds: RuleThresholds = field(default_factory=RuleThresholds)
    classifier_threshold: float = 0.6
    classifier_min_margin: float = 0.2
    classifier_override: float = 0.9

    async def route(self, asked: QuestionAsked) -> RouteDecided:
        route = route_question(
            asked.question,
            self.directory,
            self.finder,
            asked.history,
            self.classifier,
            self.thresholds,
            self.classifier_threshold,
            self.classifier_min_margin,
            self.classifier_override,
        )
        unsure = bool(route.entities.pop("unsure", False))
        if unsure and self.selector is not None:
            hints = {
                key: route.entities[key]
                for key in ("symbols", "companies", "metrics", "fiscal_years")
                if route.entities.get(key)
            }
            periods = route.entities.get("periods", {})
            if any(key != "spans_several" for key in periods):
                hints["periods"] = periods
            chosen = await self.selector.select(asked.question, asked.history, hints)
            if chosen is not None:
                chosen.entities = {**route.entities, **chosen.entities}
                route = chosen
        return enforce_policy(route, self.directory)


def enforce_policy(route: RouteDecided, directory: CompanyDirectory) -> RouteDecided:
    """A plan naming a tool outside its intent's whitelist is refused whole, whichever layer
    made it: the tools service would refuse it too, but it never gets that far."""
    refused = [call.tool for call in route.tool_calls if not tool_allowed(route.intent, call.tool)]
    if not refused:
        return route
    log.warning("refused a plan outside its intent's tools", intent=route.intent, tools=refused)
    return RouteDecided(
        question=route.question,
        intent="out_of_scope",
        entities={
            **route.entities,
            "refused_tools": refused,
            "capabilities": capabilities(directory),
        },
        decided_by=route.decided_by,
        confidence=route.confidence,
    )
