"""Cash in the user's accounts: settled, unsettled and total."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue
from shared.portfolio.words import MONEY_IN, MONEY_OUT, OWNERSHIP

DEFINITION = IntentDefinition(
    name="portfolio_cash",
    description="Cash in the user's accounts: settled, unsettled and total.",
    planner="portfolio",
    drafter="portfolio",
    cues=(
        # "Cash management" names an account, not the cash in it.
        cue(
            r"\bcash\b(?![\s-]+management)[^?.]*\b(?:my|our)\b"
            r"|\bmy (?:\w+ )?cash\b(?![\s-]+management)",
            3.5,
        ),
        cue(r"\bcash\b(?![\s-]+management)[^?.]*\b(?:do|did) (?:i|we) have\b", 3.5),
        cue(r"\b(?:unsettled|settled|buying power|uninvested|sweep)\b", 3.0),
        # Cash put in or taken out is activity (a deposit, a withdrawal), not a balance.
        cue(rf"\b(?:{MONEY_IN}|{MONEY_OUT})\b", -2.0),
        # The user's own account or what they own: a portfolio question, of no kind more than
        # another (shared.portfolio.words.OWNERSHIP).
        cue(OWNERSHIP, 1.0),
    ),
    examples=(
        "How much cash is in my Roth IRA?",
        "how much cash is sitting in my accounts",
        "what's my cash balance",
        "do I have unsettled cash",
        "my settled cash in my brokerage account",
        "how much uninvested cash is in my accounts",
        "what's my buying power in my brokerage account",
        "how much cash is sitting in my 401k",
    ),
)
