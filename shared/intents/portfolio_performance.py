"""How the user's portfolio or an account performed: time-weighted return and gain."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue

DEFINITION = IntentDefinition(
    name="portfolio_performance",
    description=(
        "How the user's portfolio or an account performed over a span: time-weighted "
        "return and gain, deposits and withdrawals not counted as gains."
    ),
    planner="portfolio",
    drafter="portfolio",
    cues=(
        cue(
            r"\bhow (?:is|are|has|have|did|was|were) (?:my|our) (?:[\w()'’]+ ){0,2}?"
            r"(?:portfolio|account|ira|roth|brokerage|401\(?k\)?|investments?|money)\b",
            3.5,
        ),
        # "my Roth IRA return", not "my holdings by return" (a ranking).
        cue(r"\bmy (?:(?!by\b)[\w()'’]+ ){0,2}?(?:returns?|performance)\b", 3.5),
        cue(r"\bam i (?:up|down)\b(?! on)", 3.0),
        cue(r"\btime[- ]weighted\b|\btwr\b", 3.0),
        cue(
            r"\bhow (?:much )?(?:did|has) (?:my|our) (?:[\w()'’]+ ){0,2}?(?:gain|grow|lose)\b", 3.0
        ),
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
    ),
)
