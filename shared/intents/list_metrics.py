"""Which metrics finq knows, optionally of one category."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue

DEFINITION = IntentDefinition(
    name="list_metrics",
    description="Which metrics finq knows, optionally of one category.",
    planner="metric_list",
    drafter="metric_list",
    cues=(
        cue(r"\b(?:metrics|figures|ratios|measures|kpis)\b", 1.0),
        cue(r"\b(?:list|which|what)\b.*\b(?:metrics|ratios|kpis)\b", 2.0),
        # Asking what finq itself holds: "what cash flow figures do you have".
        cue(
            r"\b(?:metrics|figures|ratios|measures|kpis|numbers|data)\b"
            r" (?:do|does|can|could) (?:you|finq)\b",
            2.0,
        ),
        cue(r"\bwhat can (?:i|you) (?:ask|answer|do)\b|\bwhat do you know\b", 3.0),
    ),
    examples=(
        "Which metrics can I ask about?",
        "List the {category} metrics",
        "What ratios do you have?",
        "what can I ask you",
        "what metrics do you support",
        "show all {category} metrics",
        "which {category} ratios are available",
        "what figures can you give me",
        "list your kpis",
        "what data do you have on companies",
        "which measures can I query",
        "what can you do",
        "available metrics please",
        "what ratios can I ask for",
        "list metrics in the {category} category",
    ),
)
