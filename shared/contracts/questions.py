"""A question as the gateway publishes it, and the route the router decides for it."""

from __future__ import annotations

from pydantic import Field

from shared.contracts.base import MAX_QUESTION_CHARS, Contract
from shared.contracts.tool_results import ToolCall
from shared.contracts.understanding import Intent, RouteLayer, Understood


class ConversationTurn(Contract):
    """One earlier question of the conversation and what finq made of it."""

    question: str
    answer: str = ""
    intent: Intent | None = None
    understood: Understood | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    needs_clarification: bool = False


class QuestionAsked(Contract):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    # The conversation's last turns, oldest first, so a follow-up can inherit what it leaves
    # out ("And the year before?") and a short reply can complete a clarification.
    history: list[ConversationTurn] = Field(default_factory=list)
    # The conversation's first question: nothing of it is held from before (no metric
    # reading awaiting confirmation), so the router skips looking. False when unknown.
    first_in_conversation: bool = False


class RouteDecided(Contract):
    question: str
    intent: Intent
    tool_calls: list[ToolCall] = Field(default_factory=list)
    clarifying_question: str | None = None
    # What the router understood, typed, for every later stage and the query log.
    understood: Understood = Field(default_factory=Understood)
    # What finq answers, in words, for a refusal or a reply that cannot cover the question.
    capabilities: str | None = None
    decided_by: RouteLayer = "rules"
    confidence: float = Field(default=1.0, ge=0, le=1)


class RouteSummary(Contract):
    """What the router decided, as the answer reports it."""

    intent: Intent
    decided_by: RouteLayer = "rules"
    confidence: float = 1.0
    tool_calls: list[ToolCall] = Field(default_factory=list)
    understood: Understood = Field(default_factory=Understood)

    @classmethod
    def of(cls, route: RouteDecided) -> RouteSummary:
        return cls(
            intent=route.intent,
            decided_by=route.decided_by,
            confidence=route.confidence,
            tool_calls=route.tool_calls,
            understood=route.understood,
        )
