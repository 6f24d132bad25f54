"""The router's layers in order, and the policy gate every plan passes, whichever layer
made it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from services.router.llm_selection import reading_for_model
from services.router.routing import Router
from services.router.rules import CompanyDirectory, CompanyEntry, metric_finder
from shared.contracts.envelope import ModelCallBudget
from shared.contracts.questions import ConversationTurn, QuestionAsked, RouteDecided
from shared.contracts.tool_results import ToolCall
from shared.tools import GetFinancialMetricsArgs

DIRECTORY = CompanyDirectory((CompanyEntry("AAPL", "Apple", ("apple",), 2025),))
FINDER = metric_finder(DIRECTORY)
APPLE_REVENUE = GetFinancialMetricsArgs(symbols=["AAPL"], metrics=["revenue"])


@dataclass
class Prediction:
    intent: str
    probability: float
    runner_up: str
    runner_up_probability: float


class ScriptedClassifier:
    def __init__(self, prediction: Prediction) -> None:
        self.prediction = prediction
        self.asked: list[str] = []

    def predict(self, question: str) -> Prediction:
        self.asked.append(question)
        return self.prediction


class ScriptedSelector:
    """Stands in for the LLM layer (tested on its own against a loopback OpenAI server)."""

    def __init__(self, route: RouteDecided | None) -> None:
        self.route = route
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def select(
        self,
        question: str,
        history: Sequence[ConversationTurn],
        hints: dict[str, Any],
        budget: ModelCallBudget,
    ) -> RouteDecided | None:
        assert budget.take()
        self.calls.append((question, hints))
        return self.route


async def test_a_clear_question_is_decided_by_rules_without_asking_other_layers() -> None:
    classifier = ScriptedClassifier(Prediction("price", 0.99, "filings", 0.01))
    selector = ScriptedSelector(None)
    router = Router(DIRECTORY, FINDER, classifier, selector)
    route = await router.route(QuestionAsked(question="Apple revenue in fiscal 2023"))
    assert (route.intent, route.decided_by) == ("metric_lookup", "rules")
    assert classifier.asked == [] and selector.calls == []


async def test_an_unclear_question_goes_to_a_confident_classifier() -> None:
    classifier = ScriptedClassifier(Prediction("out_of_scope", 0.93, "definition", 0.03))
    router = Router(DIRECTORY, FINDER, classifier)
    route = await router.route(QuestionAsked(question="could you sing for me"))
    assert (route.intent, route.decided_by) == ("out_of_scope", "classifier")
    assert route.confidence == 0.93


async def test_an_unsure_classifier_leaves_the_question_to_the_llm() -> None:
    classifier = ScriptedClassifier(Prediction("price", 0.41, "filings", 0.39))
    chosen = RouteDecided(
        question="apple thing",
        intent="filings",
        tool_calls=[ToolCall(tool="get_recent_filings", arguments={"symbol": "AAPL"})],
        decided_by="llm",
        confidence=0.9,
    )
    selector = ScriptedSelector(chosen)
    router = Router(DIRECTORY, FINDER, classifier, selector)
    route = await router.route(QuestionAsked(question="apple thing"))
    assert (route.intent, route.decided_by) == ("filings", "llm")
    [(question, hints)] = selector.calls
    assert question == "apple thing"
    assert reading_for_model(hints) == {"symbols": ["AAPL"], "companies": ["Apple"]}


async def test_a_plan_naming_a_tool_outside_its_intent_is_refused() -> None:
    smuggled = RouteDecided(
        question="apple thing",
        intent="price",
        tool_calls=[ToolCall.of(APPLE_REVENUE)],
        decided_by="llm",
    )
    router = Router(DIRECTORY, FINDER, None, ScriptedSelector(smuggled))
    route = await router.route(QuestionAsked(question="apple thing"))
    assert route.intent == "out_of_scope"
    assert route.tool_calls == []
    assert route.understood.refused_tools == ["get_financial_metrics"]


async def test_without_an_llm_an_unsure_route_keeps_the_rules_best_guess() -> None:
    router = Router(DIRECTORY, FINDER)
    route = await router.route(QuestionAsked(question="Apple"))
    assert route.intent == "clarify"
