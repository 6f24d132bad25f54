"""One holding of the user's: shares, cost basis, value, gain or loss, return since purchase."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue
from shared.portfolio.words import ACCOUNT_KIND, END, LARGEST, OWNERSHIP, REALIZED, SMALLEST

# Words between "my" and "shares" that say which holdings, not which company: "my Roth IRA
# positions" are an account's holdings, "my largest position" a ranking's first.
_NOT_A_HOLDING = (
    rf"(?:{ACCOUNT_KIND}{END}|{LARGEST}|{SMALLEST}|best\b|worst\b|top\b|bottom\b|entire\b"
    r"|whole\b|other\b|account\b)"
)

DEFINITION = IntentDefinition(
    name="portfolio_position",
    description=(
        "One holding in the user's portfolio: shares, cost basis, value, gain or loss, "
        "return since purchase."
    ),
    planner="portfolio",
    drafter="portfolio",
    cues=(
        # "my AAPL position", "my apple shares", "my Tesla stake": one holding, by company.
        cue(
            rf"\bmy (?:(?!{_NOT_A_HOLDING})[\w$.&'’-]+\s+){{1,2}}?"
            r"(?:position|shares|stake|stock|lot)s?\b",
            3.0,
        ),
        cue(r"\bmy (?:position|stake|shares|lots?) (?:in|of)\b", 3.0),
        # "my total gain", not "my portfolio gain" (the whole portfolio's performance).
        cue(
            r"\bmy (?:(?:total|overall|net|unrealized|realized|average) )?(?:cost basis"
            r"|average cost|gains?|losses|p&l|unrealized|realized)\b",
            3.0,
        ),
        cue(r"\bmy (?:\w+ )?(?:gains?|loss(?:es)?|returns?) on\b", 3.0),
        cue(r"\b(?:cost basis|average cost|fifo|lots?)\b", 1.5),
        # Realized gains are a figure of the positions, asked of one or of all of them.
        cue(rf"\b(?:un)?{REALIZED}\b", 3.0),
        cue(r"\b(?:what|how much) did (?:i|we) pay for\b", 3.0),
        cue(r"\bhow many (?:shares|units)\b[^?]*\b(?:i|we)\b", 2.5),
        cue(r"\b(?:do|did) (?:i|we) (?:still )?(?:own|hold)\b", 2.0),
        # "My return on my AAPL", not "the return on my joint account" (its performance).
        cue(
            r"\bam i (?:up|down) on\b|\b(?:gain|loss|return) on my\b"
            rf"(?!\s+(?:[\w()'’&.-]+\s+){{0,2}}?(?:{ACCOUNT_KIND}|accounts?|acct|portfolio)\b)",
            3.0,
        ),
        # The user's own account or what they own: a portfolio question, of no kind more than
        # another (shared.portfolio.words.OWNERSHIP).
        cue(OWNERSHIP, 1.0),
    ),
    examples=(
        "How is my {company} position doing?",
        "How many {company} shares do I own?",
        "What did I pay for my {company} stock?",
        "how many shares of {company} do I hold",
        "what's my gain on {company}",
        "my {company} position",
        "how much did I pay for {company}",
        "am I up on my {company} shares",
        "how much is my {company} stake worth",
        "cost basis of my {company} shares",
        "what is my FIFO cost basis in {company}",
        "realized gain on my {company} sales",
        "my {company} stock",
        "how many {company} shares are in my Roth IRA",
        "what's my average cost per share of {company} in my 401k",
        "what was my {company} position worth at the end of {year}",
        "do I still own any {company}",
        "unrealized loss on my {company} lots",
    ),
)
