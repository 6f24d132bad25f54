"""One holding in the user's portfolio: shares, cost, gain or loss."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue

DEFINITION = IntentDefinition(
    name="portfolio_position",
    description="One holding in the user's portfolio: shares, cost, gain or loss.",
    planner="no_tools",
    drafter="not_yet",
    tools=frozenset(),
    answered=False,
    not_yet=(
        "Questions about your own positions are not answered yet: finq does not hold "
        "your accounts or positions in this version."
    ),
    cues=(
        cue(r"\bmy (?:\w+\s+)?(?:position|shares|stake|stock|lot)s?\b", 3.0),
        cue(r"\bmy (?:cost basis|average cost|gains?|losses|p&l|unrealized|realized)\b", 3.0),
        cue(r"\b(?:did|do) (?:i|we) (?:pay|buy|sell|own|hold)\b", 2.5),
        cue(r"\b(?:i|we) (?:own|hold|bought|sold)\b", 2.0),
    ),
    examples=(
        "How is my {company} position doing?",
        "How many {company} shares do I own?",
        "What did I pay for my {company} stock?",
        "how many shares of {company} do I hold",
        "what's my gain on {company}",
        "my {company} position",
        "what did I pay for {company}",
        "am I up on my {company} shares",
        "how much is my {company} stake worth",
        "when did I buy {company}",
        "cost basis of my {company} shares",
        "should I worry about my {company} lot",
        "my {company} stock",
    ),
)
