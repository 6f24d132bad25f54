"""What finq can be asked: every intent as data, one module each, found through `INTENTS`.

Adding an intent is one module here, holding its `IntentDefinition` (cues, examples, and
the kinds of planner and drafter that serve it), and one line in `INTENTS`; the tools that
answer it name it in their specs (`shared.tools`).
Nothing else changes: `shared.contracts.Intent` is the set of registered names, the router
scores questions with the cues and plans with the planner of that kind, the classifier
trains on the examples, the LLM layer offers only the tools that serve an intent, the tools service
refuses any other tool call, and the answerer drafts with the drafter of that kind.

Examples are templates: `{company}`, `{metric}`, `{year}`, `{quarter}`, `{form}`, `{date}`,
`{n}`, `{category}` and `{term}` are slots the training set fills in; everything else is
written as people ask.
"""

from __future__ import annotations

from shared.intents import (
    clarify,
    definition,
    document_search,
    filings,
    list_metrics,
    metric_comparison,
    metric_lookup,
    metric_trend,
    out_of_scope,
    portfolio_activity,
    portfolio_cash,
    portfolio_overview,
    portfolio_performance,
    portfolio_position,
    portfolio_ranking,
    portfolio_screen,
    price,
)
from shared.intents.intent_definition import (
    Cue,
    DrafterKind,
    IntentDefinition,
    PlannerKind,
    cue,
)

# The registry, in the order the router breaks ties between equal cue scores.
INTENTS: tuple[IntentDefinition, ...] = (
    metric_lookup.DEFINITION,
    metric_comparison.DEFINITION,
    metric_trend.DEFINITION,
    price.DEFINITION,
    filings.DEFINITION,
    document_search.DEFINITION,
    definition.DEFINITION,
    list_metrics.DEFINITION,
    portfolio_overview.DEFINITION,
    portfolio_position.DEFINITION,
    portfolio_activity.DEFINITION,
    portfolio_performance.DEFINITION,
    portfolio_ranking.DEFINITION,
    portfolio_cash.DEFINITION,
    portfolio_screen.DEFINITION,
    clarify.DEFINITION,
    out_of_scope.DEFINITION,
)

INTENT_NAMES: tuple[str, ...] = tuple(intent.name for intent in INTENTS)
INTENTS_BY_NAME: dict[str, IntentDefinition] = {intent.name: intent for intent in INTENTS}

__all__ = [
    "INTENTS",
    "INTENTS_BY_NAME",
    "INTENT_NAMES",
    "Cue",
    "DrafterKind",
    "IntentDefinition",
    "PlannerKind",
    "cue",
]
