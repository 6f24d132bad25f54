"""What a filing or document says about a topic (risks, strategy, segments)."""

from __future__ import annotations

from shared.intents.intent_definition import IntentDefinition, cue

DEFINITION = IntentDefinition(
    name="document_search",
    description="What a filing or document says about a topic (risks, strategy, segments).",
    planner="filing_search",
    drafter="documents",
    cues=(
        cue(
            r"\b(?:say|said|says|mention(?:ed|s)?|describe[ds]?|discuss(?:ed|es)?"
            r"|disclose[ds]?|talk(?:s|ed)? about)\b",
            2.5,
        ),
        # What filings state in words rather than in a statement's figures.
        cue(
            r"\b(?:holders? of record|employees?|headcount|workforce|auditors?"
            r"|critical audit matters?|backlog|remaining performance obligations?"
            r"|(?:share |stock )?(?:repurchase|buyback) (?:program|authori[sz]ation)"
            r"|authori[sz]ed|manufactur(?:e|es|ed|ing)|suppliers?|facilities"
            r"|headquarter(?:s|ed)|properties|subsidiaries|customers?|paid clicks?"
            r"|cost[\s-]per[\s-]click|segments?)\b",
            2.0,
        ),
        cue(
            r"\b(?:risk factors?|risks?|md&a|management'?s discussion|strategy|outlook"
            r"|guidance|competition|supply[\s-]chain|lawsuits?|litigation"
            r"|legal proceedings|regulation|export controls?)\b",
            1.5,
        ),
        cue(r"\b(?:according to|in (?:its|the) (?:10-?k|10-?q|annual report|filing))\b", 1.0),
        cue(r"\b(?:summari[sz]e|summary|overview of|highlights|key points)\b", 2.0),
    ),
    examples=(
        "What did {company} say about supply-chain risk in its {year} {form}?",
        "How does {company} describe competition in its annual report?",
        "What risk factors did {company} list in fiscal {year}?",
        "Summarize {company}'s outlook from the latest {form}",
        "what does {company}'s {form} say about competition",
        "risks {company} mentions in its annual report",
        "how did {company} describe its outlook in {year}",
        "what did {company} management say about margins",
        "summarize the risk factors in {company}'s {year} {form}",
        "does {company} discuss supply chain risk in its filings",
        "what legal proceedings does {company} mention",
        "{company} strategy according to its {form}",
        "what did {company} say about AI in its {form}",
        "find where {company} talks about China in the {form}",
    ),
)
