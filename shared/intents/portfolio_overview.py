"""The user's portfolio as a whole: what it is worth, its holdings, its allocation."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue
from shared.portfolio.words import OWNERSHIP

DEFINITION = IntentDefinition(
    name="portfolio_overview",
    description="The user's portfolio as a whole: what it is worth, its holdings, its allocation.",
    planner="portfolio",
    drafter="portfolio",
    cues=(
        # Weaker than the other portfolio intents' cues: "my portfolio" is in most of them.
        cue(r"\bmy (?:portfolio|holdings|accounts?|investments|positions)\b", 2.0),
        cue(r"\bmy (?:\w+ )?(?:allocation|net worth)\b|\b(?:asset )?allocation\b", 3.0),
        # "what's my IRA worth", "my account balance"; a cash balance is the cash intent's.
        cue(r"\bmy (?:(?!cash\b)[\w()'’]+ ){0,3}?(?:worth|value|balance)\b", 3.0),
        cue(r"\bwhat (?:\w+ )?(?:do|did) (?:i|we) (?:own|hold|have)\b", 3.0),
        # A share of the whole; asked of each holding, it is a ranking by weight.
        cue(
            r"\b(?:how much|what (?:share|part|portion|percent(?:age)?|fraction)) of my "
            r"(?:portfolio|holdings|money|investments|accounts?)\b(?![^?.!]*\b(?:each|every)\b)",
            2.5,
        ),
        cue(r"\bmy (?:\w+ )?(?:etfs|stocks|bonds|crypto|funds|equities)\b", 2.0),
        cue(r"\bdiversif\w*\b|\bbreak\s?down\b|\bexposure\b", 1.0),
        cue(r"^\s*(?:list|show|display)(?: me)? (?:all )?(?:of )?(?:the\b.*)?\b(?:my|our)\b", 1.0),
        # The user's own account or what they own, said with no sharper portfolio cue: the
        # accounts and what they hold (every portfolio intent has this cue once).
        cue(OWNERSHIP, 2.0),
        # What an account contains, or everything held: the holdings listed.
        cue(
            r"^(?=.*\b(?:my|our|i|we)\b).*\b(?:contains?|inside|everything)\b"
            r"|\bwhat(?:'s|\s+is|\s+are)?\s+(?:in|inside)\s+(?:my|our)\b",
            1.0,
        ),
    ),
    examples=(
        "What is my portfolio worth?",
        "Show my holdings",
        "What's my allocation by asset class?",
        "what's my portfolio worth today",
        "show my account balance",
        "break down my holdings by account",
        "list my positions",
        "how diversified is my portfolio",
        "what's my asset allocation",
        "what is my Roth IRA worth",
        "what do I hold in my brokerage account",
        "list my ETFs",
        "how much of my portfolio is in bonds",
        "what crypto do I own",
        "what was my account value at the end of {year}",
        "what are all my accounts worth together",
        "what does my Roth IRA contain",
        "show everything I hold across my accounts",
    ),
)
