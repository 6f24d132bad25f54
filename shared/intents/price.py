"""A stock's price: a close on a day, the high or low, the change over time."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue

DEFINITION = IntentDefinition(
    name="price",
    description="A stock's price: a close on a day, the high or low, the change over time.",
    planner="prices",
    drafter="prices",
    required=("company",),
    cues=(
        cue(r"\b(?:stock|share)\s+price\b|\bprices?\b", 2.0),
        # "At the close of fiscal 2025" is a period's end, not a market close.
        cue(
            r"\bclos(?:e|ed|ing)\b(?!\s+of\s+(?:the\s+|its\s+)?(?:fiscal|fy|year|quarter"
            r"|q[1-4]|\d{4}))|\btrad(?:ed|ing)\b|\bquote\b",
            1.5,
        ),
        # "Common stock", "stock-based compensation", "stock repurchases": the shares as
        # the company accounts for them, not their price.
        cue(
            r"\b(?:52[\s-]week|all[\s-]time)\b"
            r"|(?<!common )(?<!preferred )(?<!treasury )\bstock\b(?![\s-]+(?:based|compensation"
            r"|repurchase|buyback|awards?|options?|holders?|split|plans?|units?|issued))",
            1.0,
        ),
    ),
    examples=(
        "{company} stock price on {date}",
        "What did {company} close at on {date}?",
        "How did {company} shares do in {year}?",
        "{company} high and low in {year}",
        "Price of {company} stock last month",
        "{company} share price {year}",
        "what was {company} trading at on {date}",
        "{company} closing price {date}",
        "highest close for {company} in {year}",
        "how much did {company} stock move in {year}",
        "{company} stock chart last year",
        "lowest {company} price in {year}",
        "{company} quote",
        "where did {company} close on {date}",
        "{company} stock performance {year}",
    ),
)
