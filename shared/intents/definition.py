"""What a financial term or metric means and how it is computed."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue

DEFINITION = IntentDefinition(
    name="definition",
    description="What a financial term or metric means and how it is computed.",
    planner="definition",
    drafter="definition",
    required=("term",),
    cues=(
        cue(r"^\s*(?:what(?:'s| is| are| does)|define|explain|meaning of)\b", 1.0),
        cue(
            r"\b(?:mean|means|definition|defined|stand for|formula|calculated"
            r"|computed)\b",
            2.0,
        ),
    ),
    examples=(
        "What is {term}?",
        "Define {term}",
        "What does {term} mean?",
        "How is {term} calculated?",
        "Explain {term} to me",
        "what's {term}",
        "meaning of {term}",
        "can you explain what {term} is",
        "{term} definition",
        "what does {term} stand for",
        "how do you calculate {term}",
        "what is meant by {term}",
        "define {term} please",
        "explain {term} in simple terms",
        "what's the formula for {term}",
    ),
)
