"""A company's SEC filings: which, when filed, for which period, with links."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue

DEFINITION = IntentDefinition(
    name="filings",
    description="A company's SEC filings: which, when filed, for which period, with links.",
    planner="filings_index",
    drafter="filings_index",
    required=("company",),
    cues=(
        cue(r"\b(?:10-?k|10-?q|8-?k|20-?f)'?s?\b|\bdef\s?14a\b", 1.5),
        cue(
            r"\bfil(?:e|ed|ing|ings)\b|\bannual reports?\b|\bquarterly reports?\b"
            r"|\bproxy statements?\b",
            2.0,
        ),
        cue(r"\bwhen did\b|\blatest\b|\brecent\b", 0.5),
    ),
    examples=(
        "When did {company} file its fiscal {year} {form}?",
        "List {company}'s recent filings",
        "{company} {form} filings",
        "Latest {form} from {company}",
        "Show me {company}'s annual reports",
        "{company} 10-K for fiscal {year}",
        "did {company} file a {form} in {year}",
        "filing dates for {company}'s {form}s",
        "when was {company}'s last annual report filed",
        "link to {company}'s {form}",
        "{company} sec filings",
        "most recent {form} {company}",
        "what filings did {company} make in {year}",
        "{company} proxy statement",
        "where can I read {company}'s {form}",
    ),
)
