"""How the user's portfolio or an account performed: time-weighted return and gain."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue
from shared.portfolio.words import ACCOUNT, COMPARING, END, FIRST_PERSON, INDEX, OWNERSHIP

DEFINITION = IntentDefinition(
    name="portfolio_performance",
    description=(
        "How the user's portfolio or an account performed over a span: time-weighted "
        "return and gain, deposits and withdrawals not counted as gains."
    ),
    planner="portfolio",
    drafter="portfolio",
    cues=(
        # Not how it is made up: "how is my portfolio weighted" is its holdings' weights.
        # "The" portfolio or account is the user's too: finq holds no other.
        cue(
            r"\bhow (?:well |badly )?(?:is|are|has|have|did|was|were) (?:my|our|the) "
            rf"(?:[\w()'’]+ ){{0,2}}?(?:portfolio|{ACCOUNT}|investments?|money){END}"
            r"(?!\s+(?:weight\w*|allocat\w*|diversif\w*|split|divided|spread|made\s+up|composed)\b)",
            3.5,
        ),
        # "the performance of my Roth IRA", "returns on our 401(k)".
        cue(
            r"\b(?:performance|returns?|growth)\s+(?:of|on|in|for)\s+(?:my|our|the)\s+"
            rf"(?:[\w()'’]+\s+){{0,2}}?(?:portfolio|{ACCOUNT}|investments?|money){END}",
            3.5,
        ),
        # Compared with a market index: the portfolio's return is answered, and the answer
        # says finq holds no prices for the index to compare it with.
        cue(
            rf"^(?=.*\b{FIRST_PERSON}\b)(?=.*\b{COMPARING}(?!\w)).*\b{INDEX}",
            4.0,
        ),
        # "my Roth IRA return", not "my holdings by return" (a ranking).
        cue(r"\bmy (?:(?!by\b)[\w()'’]+ ){0,2}?(?:returns?|performance)\b", 3.5),
        cue(r"\bam i (?:up|down)\b(?! on)", 3.0),
        cue(r"\btime[- ]weighted\b|\btwr\b", 3.0),
        cue(
            r"\bhow (?:much )?(?:did|has) (?:my|our) (?:[\w()'’]+ ){0,2}?(?:gain|grow|lose)\b", 3.0
        ),
        # The user's own account or what they own: a portfolio question, of no kind more than
        # another (shared.portfolio.words.OWNERSHIP).
        cue(OWNERSHIP, 1.0),
    ),
    examples=(
        "How is my portfolio doing?",
        "How did my portfolio do this year?",
        "what is my return since March",
        "am I up or down this year",
        "what is my total return",
        "my portfolio performance last quarter",
        "how did my Roth IRA perform in {year}",
        "time-weighted return of my account in {year}",
        "how are my investments doing",
        "what did my portfolio gain last year",
        "how has my brokerage account done over the past 6 months",
        "my 401k return year to date",
        "how does my return in {year} look next to the S&P 500",
        "what was the performance of my Roth IRA between {year} and {year}",
    ),
)
