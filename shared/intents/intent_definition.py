"""What an intent is, as data: its cue words, its examples, and which planner
and drafter serve it.

A planner (the router's `PLANNERS`) turns what a question was understood to ask into tool
calls; a drafter (the answerer's `DRAFTERS`) turns what the tools fetched into an answer.
Both are registered by kind, so an intent that is planned or drafted like another (a
comparison drafts its figures like a lookup) names that kind and brings no code of its
own; a new kind adds one function and one registry line in each service.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

# How a route is planned: figures of companies, prices, the filings index, a search of the
# filings' text, a definition, the metric catalog, no tools at all, or a clarifying question.
PlannerKind = Literal[
    "figures",
    "prices",
    "filings_index",
    "filing_search",
    "definition",
    "metric_list",
    "no_tools",
    "clarification",
    "portfolio",
]
# How an answer is drafted from what was fetched.
DrafterKind = Literal[
    "figures",
    "series",
    "prices",
    "filings_index",
    "documents",
    "definition",
    "metric_list",
    "refusal",
    "clarification",
    "portfolio",
]


@dataclass(frozen=True)
class Cue:
    """A pattern that speaks for an intent, and how much."""

    pattern: re.Pattern[str]
    weight: float


def cue(pattern: str, weight: float = 1.0) -> Cue:
    return Cue(re.compile(pattern, re.IGNORECASE), weight)


@dataclass(frozen=True)
class IntentDefinition:
    name: str  # the wire name; `shared.contracts.Intent` is the set of registered names
    description: str  # one sentence, shown to the LLM layer and in `finq eval` reports
    planner: PlannerKind
    drafter: DrafterKind
    cues: tuple[Cue, ...] = ()
    examples: tuple[str, ...] = ()
    # Slots the plan cannot be made without; a question missing one gets a clarifying question.
    required: tuple[str, ...] = field(default=())
