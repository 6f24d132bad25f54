"""The router's layers in order: rules (with the conversation), the trained classifier when
rules are unsure, the LLM when both are unsure and one is configured; then the policy gate.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from services.router.filer_directory import FilerDirectory
from services.router.known_filers import answer_not_held
from services.router.metric_finding import MetricFinder
from services.router.planning import plan_intent
from services.router.rules import (
    CompanyDirectory,
    IntentPredictor,
    RuleThresholds,
    capabilities,
    catalog_finder,
    inherit_from_previous_turn,
    rules_confidence,
    score_intents,
    understand,
)
from shared.contracts.envelope import ModelCallBudget
from shared.contracts.questions import ConversationTurn, QuestionAsked, RouteDecided
from shared.contracts.understanding import RouteLayer, Understood
from shared.embedding_service import until_embedded
from shared.tools import tool_allowed

log = structlog.get_logger()

DEFAULT_THRESHOLDS = RuleThresholds()
# A tool selector asks the model at most this often for one question: once, and once more
# when the first call's arguments did not validate.
SELECTOR_TRIES = 2


def decide_route(
    question: str,
    directory: CompanyDirectory,
    finder: MetricFinder | None = None,
    history: Sequence[ConversationTurn] = (),
    classifier: IntentPredictor | None = None,
    thresholds: RuleThresholds = DEFAULT_THRESHOLDS,
    classifier_threshold: float = 0.6,
    classifier_min_margin: float = 0.2,
    classifier_override: float = 0.9,
    filers: FilerDirectory | None = None,
) -> tuple[RouteDecided, bool]:
    """Layers 1 and 2 (and the conversation): the route, and whether neither rules nor
    classifier were sure, so the caller may ask the LLM. With SEC's directory (`filers`), a
    question about a company finq knows of but holds nothing for is told how to load it."""
    finder = finder or catalog_finder(directory)
    understanding = understand(question, directory, finder)
    # The companies the question names itself, before the conversation lends any: "and
    # Costco?" after an Apple question asks about Costco, not Apple.
    own_symbols = list(understanding.symbols)
    previous = history[-1] if history else None
    if previous is not None:
        inherit_from_previous_turn(understanding, previous, directory)
    understanding.scores = score_intents(understanding)
    best, top, lead = rules_confidence(understanding.scores)
    confidence = round(min(1.0, top / (top + (top - lead) + 1.0)), 2) if top > 0 else 0.0
    # A portfolio follow-up may take only its reading from the turn before ("and in my IRA?").
    from_conversation = bool(understanding.inherited or understanding.previous_intent)
    decided_by: RouteLayer = "conversation" if from_conversation else "rules"
    unsure = False
    # The layers that were not sure, for the route's explanation (GET /v1/traces/...).
    unsure_layers: list[RouteLayer] = []
    if not (top >= thresholds.min_score and lead >= thresholds.min_margin):
        unsure_layers.append("rules")
        prediction = classifier.predict(question) if classifier is not None else None
        if (
            prediction is not None
            and prediction.probability >= classifier_threshold
            and prediction.probability - prediction.runner_up_probability >= classifier_min_margin
            # Overruling what the rules did find takes more than agreeing with it.
            and (
                top <= 0
                or prediction.intent == best
                or prediction.probability >= classifier_override
            )
        ):
            best, confidence, decided_by = prediction.intent, prediction.probability, "classifier"
        else:
            unsure = True
            if classifier is not None:
                unsure_layers.append("classifier")
    # With no cue for anything, no layer has a candidate: `plan_intent` decides alone.
    candidate = None if top <= 0 and decided_by != "classifier" else best
    route = plan_intent(candidate, understanding, directory, finder)
    route.decided_by = decided_by
    route.confidence = confidence
    route.understood.unsure_layers = unsure_layers
    not_held = answer_not_held(route, own_symbols, question, filers, directory)
    if not_held is not None:
        return not_held, False
    return route, unsure


def route_question(
    question: str, directory: CompanyDirectory, *args: Any, **options: Any
) -> RouteDecided:
    """The route of layers 1 and 2 alone, for callers that have no LLM to ask."""
    return decide_route(question, directory, *args, **options)[0]


class ToolSelector(Protocol):
    """Layer 3: chooses a whitelisted tool call for a question rules and classifier left open;
    None when it cannot (no answer in time, an error)."""

    async def select(
        self,
        question: str,
        history: Sequence[ConversationTurn],
        hints: Understood,
        budget: ModelCallBudget,
    ) -> RouteDecided | None: ...


@dataclass
class Router:
    directory: CompanyDirectory
    finder: MetricFinder
    classifier: IntentPredictor | None = None
    selector: ToolSelector | None = None
    thresholds: RuleThresholds = field(default_factory=RuleThresholds)
    classifier_threshold: float = 0.6
    classifier_min_margin: float = 0.2
    classifier_override: float = 0.9
    # SEC's directory of filers, when loaded (`finq ingest directory`).
    filers: FilerDirectory | None = None
    # With embeddings served by the ingest stage (services/router/main.py), the classifier
    # and resolver embed through a cache that raises EmbeddingsNeeded for texts it lacks:
    # this fetches them, and the (deterministic) routing runs again. None: a local model.
    fetch_embeddings: Callable[[Sequence[str]], Awaitable[None]] | None = None

    def _decide(self, asked: QuestionAsked) -> tuple[RouteDecided, bool]:
        return decide_route(
            asked.question,
            self.directory,
            self.finder,
            asked.history,
            self.classifier,
            self.thresholds,
            self.classifier_threshold,
            self.classifier_min_margin,
            self.classifier_override,
            self.filers,
        )

    async def route(
        self, asked: QuestionAsked, budget: ModelCallBudget | None = None
    ) -> RouteDecided:
        """The route of the rules and the classifier, or the model's when they are unsure
        and `budget` (by default the selector's tries) leaves a model call."""
        budget = budget or ModelCallBudget(SELECTOR_TRIES)
        if self.fetch_embeddings is None:
            route, unsure = self._decide(asked)
        else:

            async def decide() -> tuple[RouteDecided, bool]:
                return self._decide(asked)

            # The classifier embeds the question as asked, when the rules are unsure.
            likely = [asked.question] if self.classifier is not None else []
            route, unsure = await until_embedded(decide, self.fetch_embeddings, likely)
        if unsure and self.selector is not None and budget.left > 0:
            chosen = await self.selector.select(
                asked.question, asked.history, route.understood, budget
            )
            if chosen is None:
                route.understood.unsure_layers = [*(route.understood.unsure_layers or []), "llm"]
            if chosen is not None:
                # The model chose the tool; what the rules read of the question stays.
                chosen.understood = route.understood.model_copy(
                    update={
                        "llm": chosen.understood.llm,
                        "refused_tools": chosen.understood.refused_tools,
                    }
                )
                route = chosen
        return enforce_policy(route, self.directory)


def enforce_policy(route: RouteDecided, directory: CompanyDirectory) -> RouteDecided:
    """A plan naming a tool outside its intent's whitelist is refused whole, whichever layer
    made it: the tools service would refuse it too, but it never gets that far."""
    refused = [call.tool for call in route.tool_calls if not tool_allowed(route.intent, call.tool)]
    if not refused:
        return route
    log.warning("refused a plan outside its intent's tools", intent=route.intent, tools=refused)
    return RouteDecided(
        question=route.question,
        intent="out_of_scope",
        understood=route.understood.model_copy(update={"refused_tools": refused}),
        capabilities=capabilities(directory),
        decided_by=route.decided_by,
        confidence=route.confidence,
    )
