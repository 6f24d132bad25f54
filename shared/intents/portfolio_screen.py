"""The user's holdings joined with company figures or filings: screens and filing searches."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue
from shared.portfolio.words import OWNERSHIP

DEFINITION = IntentDefinition(
    name="portfolio_screen",
    description=(
        "The user's holdings joined with company figures or filings: holdings whose figure "
        "meets a condition, the share of the portfolio they make up, or what the filings of "
        "the largest holdings say."
    ),
    planner="portfolio",
    drafter="portfolio",
    cues=(
        # A figure of the companies held (the router adds what its metric finder reads).
        cue(
            r"\bof my (?:holdings|positions|stocks|portfolio)\b.*\b(?:revenue|sales|margins?"
            r"|income|earnings|cash flow|assets|eps|debt|profits?)\b",
            3.5,
        ),
        cue(r"\bcompan(?:y|ies) (?:with|whose|that|where)\b", 2.0),
        cue(
            r"\bmy (?:\w+ )?(?:largest|biggest|top|main) (?:\w+ )?(?:positions?|holdings?)\b"
            r".*\b(?:10-?ks?|10-?qs?|filings?|reports?|say|said|mention\w*|disclose\w*)\b",
            4.0,
        ),
        cue(r"\b(?:10-?ks?|10-?qs?|filings?)\b.*\bof my\b", 2.0),
        # The user's own account or what they own: a portfolio question, of no kind more than
        # another (shared.portfolio.words.OWNERSHIP).
        cue(OWNERSHIP, 1.0),
    ),
    examples=(
        "which of my holdings had falling revenue last fiscal year?",
        "what share of my portfolio is in companies with a net margin above 20%?",
        "which of my stocks have growing net income",
        "how much of my portfolio is in companies with gross margin below 40%",
        "what did the 10-Ks of my two largest positions say about supply-chain risk?",
        "what do the filings of my biggest holdings say about competition",
        "which of my positions had rising operating income in {year}",
        "which of my holdings have a {metric} above 10%",
        "do any of my stocks have declining free cash flow",
        "what does the latest {form} of my largest holding say about risks",
    ),
)
