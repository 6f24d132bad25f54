"""What happened in the user's accounts: trades, income, deposits, withdrawals, transfers."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue

DEFINITION = IntentDefinition(
    name="portfolio_activity",
    description=(
        "What happened in the user's accounts: trades, dividends, interest, deposits, "
        "withdrawals and transfers over a span of days."
    ),
    planner="portfolio",
    drafter="portfolio",
    cues=(
        cue(r"\bwhat (?:\w+ )?did (?:i|we) (?:buy|sell|purchase|trade)\b", 3.5),
        # "Since I bought it" is a timeframe, not a purchase asked about.
        cue(r"(?<!since )\b(?:i|we) (?:bought|sold|deposited|withdrew|transferred)\b", 3.0),
        cue(
            r"\bmy (?:\w+ )?(?:trades|transactions|activity|dividends|deposits|withdrawals"
            r"|transfers|contributions|purchases|sales|fees)\b",
            3.5,
        ),
        cue(r"\bwhen did (?:i|we) (?:buy|sell|purchase)\b", 3.5),
        cue(
            r"\bhow much (?:did|have) (?:i|we) (?:deposit|contribut|withdr[ae]w|transfer"
            r"|put in|take out|earn|receive|get|collect|pay in)\w*",
            3.5,
        ),
        # Income and money moved, asked by the user about their own accounts.
        cue(
            r"^(?=.*\b(?:i|we|my|our)\b).*\b(?:dividends?|interest|fees|distributions"
            r"|deposits?|withdrawals?|contributions?|transfers?|transactions?|trades)\b",
            3.0,
        ),
    ),
    examples=(
        "What did I buy last month?",
        "show my trades this year",
        "what did I sell in {year}",
        "my dividends last quarter",
        "list my transactions since March",
        "when did I buy {company}",
        "how much did I deposit this year",
        "my transfers in {year}",
        "what dividends did I get from {company}",
        "show my recent activity",
        "my withdrawals last year",
        "what did I purchase in my Roth IRA",
        "how much interest did I earn in my cash management account",
        "what fees did I pay over the past 6 months",
        "contributions to my 401k year to date",
        "list every trade I made between January and June {year}",
    ),
)
