"""The user's holdings ranked by gain or loss, best or worst, over a span or since purchase."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue

DEFINITION = IntentDefinition(
    name="portfolio_ranking",
    description=(
        "The user's holdings ranked by gain or loss, best or worst, over a span or since purchase."
    ),
    planner="portfolio",
    drafter="portfolio",
    cues=(
        cue(
            r"\b(?:best|worst|top|biggest) (?:\w+ )?"
            r"(?:performers?|performing|winners?|losers?|gainers?)\b",
            2.5,
        ),
        # Shared with the overview ("which of my holdings are ETFs") and screens.
        cue(r"\bwhich (?:of my )?(?:holdings?|positions?|stocks?|investments?)\b", 1.0),
        cue(r"\brank(?:ed|ing)?\b", 2.5),
        # Best or worst, not largest: "my biggest holding" is the one worth the most.
        cue(
            r"\bmy (?:\w+ )?(?:best|worst)[\s-](?:\w+ )?"
            r"(?:holdings?|positions?|stocks?|investments?|performers?)\b"
            r"|\bmy (?:\w+ )?(?:biggest|top) (?:\w+ )?(?:performers?|winners?|losers?|gainers?)\b",
            3.5,
        ),
        cue(
            r"\b(?:did|performed|has done|have done|done|do|does|is doing) (?:the )?"
            r"(?:best|worst)\b"
            r"|\b(?:gained|lost|rose|fell|grew|dropped|returned|went (?:up|down)) the most\b",
            3.0,
        ),
        cue(
            r"\b(?:ranked|rank|by) (?:(?:percent(?:age)?|dollar|total|%) )?"
            r"(?:gains?|returns?|loss(?:es)?)\b",
            2.5,
        ),
    ),
    examples=(
        "Which of my holdings did worst this year?",
        "what are my best performers",
        "my biggest losers since purchase",
        "which of my stocks gained the most in {year}",
        "my top 3 positions by gain",
        "which holding has done best since I bought it",
        "worst performing stock in my portfolio last quarter",
        "my biggest winners in dollars",
        "rank my holdings by return over the past 6 months",
        "which of my investments lost the most money last month",
        "my {n} worst holdings in my IRA",
    ),
)
