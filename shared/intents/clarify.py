"""A question that cannot be answered without something it leaves out."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition

DEFINITION = IntentDefinition(
    name="clarify",
    description="A question that cannot be answered without something it leaves out.",
    planner="clarification",
    drafter="clarification",
)
