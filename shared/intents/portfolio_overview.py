"""The user's own portfolio as a whole: value, allocation, performance."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue

DEFINITION = IntentDefinition(
    name="portfolio_overview",
    description="The user's own portfolio as a whole: value, allocation, performance.",
    planner="no_tools",
    drafter="not_yet",
    tools=frozenset(),
    answered=False,
    not_yet=(
        "Portfolio questions are not answered yet: finq does not hold your accounts or "
        "positions in this version."
    ),
    cues=(
        cue(r"\bmy (?:portfolio|holdings|account|investments|positions)\b", 3.0),
        cue(
            r"\bam i (?:up|down)\b|\bmy (?:\w+ )?(?:returns?|allocation|cash|balance"
            r"|performance|net worth)\b",
            3.0,
        ),
    ),
    examples=(
        "How is my portfolio doing?",
        "What is my portfolio worth?",
        "Show my holdings",
        "What's my allocation by sector?",
        "what's my portfolio worth today",
        "how are my investments doing",
        "am I up or down this year",
        "show my account balance",
        "what is my total return",
        "break down my holdings by sector",
        "how much cash do I have in my account",
        "my portfolio performance",
        "list my positions",
        "how diversified is my portfolio",
        "what's my asset allocation",
    ),
)
