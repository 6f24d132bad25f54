"""A company's financial figure (revenue, margins, EPS, ratios) for a period."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue

DEFINITION = IntentDefinition(
    name="metric_lookup",
    description="A company's financial figure (revenue, margins, EPS, ratios) for a period.",
    planner="figures",
    drafter="figures",
    required=("company", "metric"),
    cues=(
        cue(r"\bwhat (?:was|is|were|are)\b", 0.5),
        cue(r"\bhow much\b", 0.5),
        cue(r"\b(?:fiscal|fy)\s?'?\d{2,4}\b|\bq[1-4]\b|\bquarter\b|\bttm\b", 0.5),
    ),
    examples=(
        "What was {company}'s {metric} in fiscal {year}?",
        "{company} {metric} {year}",
        "How much {metric} did {company} report in FY{year}?",
        "{company}'s {metric} for {quarter} {year}",
        "Tell me {company}'s {metric} last year",
        "what is the {metric} of {company}",
        "{metric} for {company} in {year}?",
        "Give me {company} {metric} TTM",
        "{company} {metric}",
        "{metric} of {company} for fiscal {year}",
        "how much was {company}'s {metric} in {year}",
        "what's {company}'s {metric} for {quarter}",
        "{company} {metric} latest",
        "I need {company}'s {metric} in FY{year}",
        "can you tell me the {metric} {company} reported for {year}",
        "{company}: {metric}, {year}",
        "show {company} {metric} for the year {year}",
        "what did {company} report as {metric} in {quarter}",
        "pull {company}'s {metric}",
        "{metric} {company} fy{year}",
    ),
)
