"""The user's holdings ranked: by gain or loss over a span or since purchase, best or worst
first, or by size (market value) or weight (share of the holdings' value), largest or
smallest first."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue
from shared.portfolio.words import (
    HOLDING,
    LARGEST,
    MOVED,
    OWNERSHIP,
    RANK_END,
    SMALLEST,
    VALUE,
    WEIGHT,
)

# The user's own holdings: a company's largest assets or segments are not ranked here.
_MINE = r"^(?=.*\b(?:my|our|i|we|portfolio|holdings|positions)\b)"
# What the filings of the largest holdings say is a search of those filings (the screen's).
_NOT_FILINGS = (
    r"(?!.*\b(?:10-?[kq]s?|filings?|annual\s+reports?|say|says|said|mention\w*|disclos\w*"
    r"|discuss\w*)\b)"
)

DEFINITION = IntentDefinition(
    name="portfolio_ranking",
    description=(
        "The user's holdings ranked by gain or loss over a span or since purchase (best or "
        "worst first), or by size (market value) or weight in the portfolio."
    ),
    planner="portfolio",
    drafter="portfolio",
    cues=(
        cue(
            r"\b(?:best|worst|top|biggest) (?:\w+ )?"
            r"(?:performers?|performing|winners?|losers?|gainers?)\b",
            2.5,
        ),
        # Shared with the overview ("which holdings of mine are ETFs") and screens.
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
            # Moved the most or the least: "down the most", "gained the least".
            rf"|\b{MOVED}\s+(?:the\s+)?(?:most|least)\b",
            3.0,
        ),
        # An order said outright, whatever is listed: "worst first", "largest to smallest".
        cue(
            rf"\b{RANK_END}\s+(?:first|last)\b|\b{RANK_END}\s+to\s+(?:the\s+)?{RANK_END}\b",
            4.0,
        ),
        # Holdings by size or weight: "my biggest holdings", "the heaviest weighting", "the
        # largest share of my portfolio", "what % of the portfolio each holding is".
        cue(
            rf"{_MINE}(?:{_NOT_FILINGS}.*\b(?:{LARGEST}|{SMALLEST})\s+(?:[\w-]+\s+){{0,2}}?"
            rf"{HOLDING}\b"
            rf"|.*\b(?:{LARGEST}|{SMALLEST}|highest|lowest|most|least|top|bottom)\s+"
            rf"(?:[\w-]+\s+){{0,2}}?{WEIGHT}|.*{WEIGHT}\s+(?:the\s+)?(?:most|least)\b"
            rf"|.*{WEIGHT}[^?.!]*\b(?:each|every)\b|.*\b(?:each|every)\b[^?.!]*{WEIGHT})",
            3.5,
        ),
        cue(rf"{_MINE}.*\b(?:by|in\s+order\s+of)\s+(?:{VALUE}|weight(?:ing)?)\b", 2.0),
        cue(rf"{_MINE}.*\b(?:sort(?:ed)?|ordered)\b", 2.5),
        cue(
            r"\b(?:ranked|rank|by) (?:(?:percent(?:age)?|dollar|total|%) )?"
            r"(?:gains?|returns?|loss(?:es)?)\b",
            2.5,
        ),
        # The user's own account or what they own: a portfolio question, of no kind more than
        # another (shared.portfolio.words.OWNERSHIP).
        cue(OWNERSHIP, 1.0),
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
        "which of my positions is down the most",
        "what are my biggest holdings",
        "which holding has the heaviest weighting in my portfolio",
        "list my holdings from largest to smallest",
    ),
)
