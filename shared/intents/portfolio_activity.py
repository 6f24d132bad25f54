"""What happened in the user's accounts: trades, income, deposits, withdrawals, transfers."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue
from shared.portfolio.words import MONEY_IN, MONEY_OUT, OWNERSHIP, PAID_TO_HOLDERS, REALIZED

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
        # Income and money moved, asked by the user about their own accounts: "any money
        # taken out of my accounts", "what happened in my IRA".
        cue(
            r"^(?=.*\b(?:i|we|my|our)\b).*\b(?:dividends?|interest|fees|distributions"
            r"|deposits?|withdrawals?|contributions?|transfers?|transactions?|trades"
            rf"|happen(?:ed|ing)?|{MONEY_IN}|{MONEY_OUT})\b",
            3.0,
        ),
        # Money put into or taken out of accounts: only the user's accounts have deposits and
        # withdrawals among what finq holds, so they are the user's with no "my" said ("any
        # deposits in 2021?"); a company named makes it a figure question first.
        cue(rf"\b(?:{MONEY_IN}|{MONEY_OUT})", 2.5),
        # Dividends received, collected or earned: a holder's income, said without "my" (a
        # company pays its dividends; it is the figure "dividends paid").
        cue(
            rf"\b{PAID_TO_HOLDERS}(?:\s+income)?\s+(?:\w+\s+)?(?:received|collected|earned)\b"
            r"(?!\s+by)"
            rf"|\b(?:received|collected|earned)\s+(?:[\w$]+\s+){{0,2}}?(?:in\s+)?{PAID_TO_HOLDERS}\b",
            3.0,
        ),
        # Realized gains are the positions' figure, not a list of the sales behind them.
        cue(rf"\b{REALIZED}\b", -3.0),
        # The user's own account or what they own: a portfolio question, of no kind more than
        # another (shared.portfolio.words.OWNERSHIP).
        cue(OWNERSHIP, 1.0),
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
        "total dividends received in {year}",
    ),
)
