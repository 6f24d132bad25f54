"""The same figure for two or more companies, side by side or ranked."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue

DEFINITION = IntentDefinition(
    name="metric_comparison",
    description="The same figure for two or more companies, side by side or ranked.",
    planner="figures",
    drafter="figures",
    required=("company", "metric"),
    cues=(
        cue(r"\b(?:compare[ds]?|comparison|vs\.?|versus)\b", 2.0),
        cue(r"\b(?:higher|lower|bigger|larger|smaller|greater|more|less)\b.*\bthan\b", 1.5),
        cue(r"\bwho (?:had|has|made|earned)\b|\bwhich (?:company|one|of)\b", 1.5),
    ),
    examples=(
        "Compare {company} and {company2} {metric} in {year}",
        "Who had more {metric} in {year}, {company} or {company2}?",
        "{company} vs {company2} {metric}",
        "Was {company}'s {metric} higher than {company2}'s in fiscal {year}?",
        "Which company had the bigger {metric}: {company} or {company2}?",
        "{company} or {company2}: which had higher {metric} in {year}?",
        "{metric} {company} vs {company2}",
        "how does {company}'s {metric} compare with {company2}'s",
        "side by side {metric} for {company} and {company2}",
        "did {company} have more {metric} than {company2} in {year}",
        "rank {company} and {company2} by {metric}",
        "{company} versus {company2} {metric} fiscal {year}",
        "compare {metric} between {company} and {company2}",
        "who is bigger on {metric}, {company} or {company2}",
        "{company} and {company2} {metric} {year}",
    ),
)
