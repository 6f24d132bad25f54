"""How a company's figure moved over several periods: a range or a growth."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue

DEFINITION = IntentDefinition(
    name="metric_trend",
    description="How a company's figure moved over several periods: a range or a growth.",
    planner="figures",
    drafter="series",
    required=("company", "metric"),
    cues=(
        cue(r"\b(?:trend|over time|history|historical)\b", 2.0),
        cue(r"\b(?:grow|grew|growth|increase[ds]?|decline[ds]?|cagr|yoy|change[ds]?)\b", 1.5),
        cue(
            r"\b(?:last|past|previous)\s+(?:\d+|two|three|four|five|ten)\s+(?:fiscal\s+)?"
            r"(?:years|quarters)\b",
            1.5,
        ),
        cue(
            r"\b(?:19|20)\d{2}\s*(?:-|–|to|through|thru|until)\s*(?:fy\s?)?(?:19|20)\d{2}\b",
            1.5,
        ),
        cue(r"\bby (?:year|quarter)\b|\bquarterly\b|\bannually\b|\beach year\b", 1.0),
    ),
    examples=(
        "{company} {metric} from {year} to {year2}",
        "How did {company}'s {metric} change over the last {n} years?",
        "{company} {metric} by quarter last year",
        "{company} {metric} growth over the past {n} years",
        "Show the trend in {company}'s {metric} since {year}",
        "What was {company}'s {metric} CAGR over five years?",
        "{company} {metric} over the past {n} years",
        "how has {company}'s {metric} trended since {year}",
        "{company} {metric} history",
        "{metric} growth for {company} in {year}",
        "year over year change in {company}'s {metric}",
        "{company} quarterly {metric} for fiscal {year}",
        "is {company}'s {metric} rising or falling",
        "{company} {metric} each year {year} to {year2}",
        "show me {company} {metric} for the last {n} quarters",
        "{company} {metric} yoy",
        "plot {company}'s {metric} between {year} and {year2}",
    ),
)
