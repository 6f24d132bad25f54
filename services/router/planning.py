"""From what the router understood to a plan: one planner per kind, found through
`PLANNERS` by the kind an intent's definition names (`shared.intents`).

A planner turns the typed understanding into whitelisted tool calls with validated
arguments, or a clarifying question naming what is missing. An intent planned like
another (a comparison like a lookup) adds nothing here; a new kind of plan adds one
function and one registry line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from services.router.coverage import meaningful
from services.router.metric_finding import MetricFinder, describe_unknown
from services.router.periods import period_arguments, price_window
from services.router.portfolio_planning import plan_portfolio_calls, sharpest_portfolio_intent
from services.router.portfolio_reading import PORTFOLIO_INTENTS
from services.router.rules import (
    METRIC_INTENTS,
    CompanyDirectory,
    Understanding,
    capabilities,
    form_words,
    metric_examples,
    metric_list_category,
    understood_of,
)
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import ToolCall
from shared.contracts.understanding import Intent, PriceWindow, Understood
from shared.intents import INTENTS_BY_NAME, PlannerKind
from shared.metric_catalog import METRICS_BY_ID, mid_sentence
from shared.metric_resolver import UnknownMetricPhrase
from shared.tools import (
    GET_FINANCIAL_METRICS,
    GET_PRICES,
    GET_RECENT_FILINGS,
    GLOSSARY_COLLECTION,
    LIST_METRICS,
    SEARCH_DOCUMENTS,
    TOOL_ARGUMENTS,
    tool_allowed,
)


@dataclass
class Planning:
    """What a planner works from: the question as understood, and the router's lookups."""

    understanding: Understanding
    understood: Understood
    directory: CompanyDirectory
    finder: MetricFinder

    @property
    def question(self) -> str:
        return self.understanding.question


Planner = Callable[[Intent, Planning], RouteDecided]

# Asking what a filing says about a topic, rather than for a fact.
_ASKING_VERBS = (
    r"say|said|says|describe[ds]?|discuss(?:es|ed)?|mention(?:s|ed)?|disclose[ds]?"
    r"|summari[sz]e|talk(?:s|ed)?|explain(?:s|ed)?|outline[ds]?|list(?:s|ed)?"
)
_ASKING = re.compile(_ASKING_VERBS, re.IGNORECASE)
_NARRATIVE = re.compile(rf"\b(?:{_ASKING_VERBS}|summary|risks?|outlook|strategy)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Decision:
    """Which intent a question is planned as, and, when the intent's required slots are not
    all filled, the intent a clarifying question is about."""

    intent: Intent
    pending: Intent | None = None
    # A figure the stored totals cannot answer as asked (a scope, unread words, a fact the
    # catalog does not name), sent to the filings' text instead.
    uncovered_figure: bool = False


def plan_intent(
    candidate: str | None,
    understanding: Understanding,
    directory: CompanyDirectory,
    finder: MetricFinder,
) -> RouteDecided:
    """The tool calls that answer the question as `decide_intent` decides it, or a clarifying
    question naming what is missing. `candidate` is the layers' best intent (None when no
    layer had one)."""
    planning = Planning(understanding, understood_of(understanding, directory), directory, finder)
    decision = decide_intent(candidate, planning)
    planning.understood.uncovered_figure = decision.uncovered_figure
    if decision.pending is not None:
        return plan_clarification(decision.pending, planning)
    planner = PLANNERS[INTENTS_BY_NAME[decision.intent].planner]
    return planner(decision.intent, planning)


def decide_intent(candidate: str | None, planning: Planning) -> Decision:
    """The one place the intent of a question is decided: from the layers' candidate, the
    conversation, and each intent's required slots (`IntentDefinition.required`). Planners
    plan the intent decided here and never change it."""
    understanding, understood = planning.understanding, planning.understood
    symbols, metrics = understanding.symbols, understanding.metrics
    intent: str
    if candidate is None:
        # Nobody was sure of anything: a company or a figure was named but not what about
        # it, or nothing finq answers was named at all.
        intent = "clarify" if symbols or metrics else "out_of_scope"
    else:
        intent = candidate
    if (
        understanding.previous_intent in {"price", "filings"}
        and understanding.inherited
        and intent in (METRIC_INTENTS | {"clarify", "out_of_scope"})
        and not (metrics and "metrics" not in understanding.inherited)
    ):
        # A follow-up of a price or filings question ("and NVIDIA?") asks the same again.
        intent = understanding.previous_intent
    if intent == "clarify" and metrics:
        intent = "metric_lookup"
    if intent in METRIC_INTENTS | {"price"} and _FORECAST.search(understanding.question):
        # What a figure or a price will be is a prediction, which finq does not make.
        return Decision("out_of_scope")
    if intent == "price" and (
        understanding.filing is not None
        or (
            _ASKS_DATE.search(understanding.question)
            and not _EXTREME.search(understanding.question)
        )
    ):
        # A filing holds no market prices: "the price per share it agreed to pay, as the
        # 10-K describes" asks the filing's text. And the only day a price series answers
        # is the day of a high or a low: "on what date did it split its stock" asks of an
        # event, which the filings tell.
        return Decision("document_search")
    named_forms = form_words(understanding.question)
    topic = [
        phrase
        for phrase in understanding.matches.unresolved
        if meaningful(phrase) and not _indexed(phrase, named_forms)
    ]
    if intent == "filings" and symbols and topic:
        # A filing named with a topic ("what risks did its 10-K flag about X") asks about
        # the filing's text; the index answers only which filings, when, for which period.
        intent = "document_search"
    if (
        intent in METRIC_INTENTS | {"clarify", "document_search"}
        and symbols
        and not metrics
        and not _NARRATIVE.search(understanding.question)
        and any(meaningful(phrase) for phrase in understanding.matches.unresolved)
    ):
        # A fact the catalog does not name, asked of a company ("how many employees", "who
        # audits Apple"), not what a filing says about a topic: the filings may answer it,
        # and when none is held the reply says which figures finq holds instead. A question
        # that names the filing as its source asks that filing's text, and is told so.
        return Decision("document_search", uncovered_figure=not understanding.forms)
    if intent in PORTFOLIO_INTENTS:
        intent = sharpest_portfolio_intent(intent, understanding.scores)  # type: ignore[arg-type]
    definition = INTENTS_BY_NAME.get(intent)
    if definition is None:  # a label no intent registers (an old classifier's)
        return Decision("clarify", pending="metric_lookup")
    missing = [slot for slot in definition.required if not _slot_filled(slot, planning)]
    if "term" in missing:
        # "What's going on with the economy?" is not asking what a term means.
        return Decision("out_of_scope")
    if (
        missing == ["company"]
        and definition.planner == "figures"
        and not understood.covered
        and planning.directory.entries
    ):
        # A figure of a part nothing read ("Mac net sales", "the North America segment"),
        # asked of no company: the part is some company's own word, and its filings say
        # whose. Every filing held is searched; the answer cites the one that holds it.
        return Decision("document_search", uncovered_figure=not understanding.forms)
    if missing:
        return Decision("clarify", pending=intent if intent in ASKS_BACK else "metric_lookup")
    if intent == "clarify":
        return Decision("clarify", pending="metric_lookup")
    if definition.planner == "figures":
        if not understood.covered:
            return Decision("document_search", uncovered_figure=not understanding.forms)
        if len(symbols) > 1:
            return Decision("metric_comparison")
        periods = understanding.periods
        if (
            periods.spans_several
            or periods.same_quarter_last_year  # a change over a year
            or (understanding.growth and periods.fiscal_years)
        ):
            return Decision("metric_trend")
    return Decision(intent)  # type: ignore[arg-type]


# A question that asks for a day, and the words of a price's extremes, whose day a price
# series can tell.
_ASKS_DATE = re.compile(r"\b(?:when|(?:what|which) (?:date|day))\b", re.IGNORECASE)
_EXTREME = re.compile(
    r"\b(?:high|low|peak|bottom|top|record|max|min|best|worst|most|least)\w*", re.IGNORECASE
)
# A question about what a figure or a price will be.
_FORECAST = re.compile(
    r"\bwill\b[^?.]*\b(?:be|trade|trading|reach|hit|go|end|close|grow|fall|rise)\b"
    r"|\bnext (?:year|quarter|month|week|fiscal year)\b|\bgoing to\b",
    re.IGNORECASE,
)
# What the filings index holds of a filing: which it is, when it was filed, the period it
# covers, where it is. Words of none of these name a topic of the filing's text.
_INDEX_WORDS = frozenset(
    str.split(
        "when date dates filed file files filing filings submitted released published list "
        "show recent recently lately latest last newest first link links url where "
        "accession period periods cover covers covered which all every any sec edgar"
    )
)


# What is left of a form's name once read ("10-Qs" leaves "Qs").
_FORM_FRAGMENT = re.compile(r"^\d*[-]?[kq]s?$", re.IGNORECASE)


def _indexed(phrase: str, named_forms: frozenset[str]) -> bool:
    return all(
        word in _INDEX_WORDS
        or word in named_forms
        or _FORM_FRAGMENT.match(word)
        or not meaningful(word)
        for word in phrase.lower().split()
    )


# The intents whose clarifying question is their own ("Which company's filings do you
# mean?"); any other missing slot is asked about as a figure.
ASKS_BACK = METRIC_INTENTS | {"price", "filings"}


def _slot_filled(slot: str, planning: Planning) -> bool:
    understanding = planning.understanding
    if slot == "company":
        return bool(understanding.symbols)
    if slot == "metric":
        return bool(understanding.metrics)
    if slot == "term":
        return bool(defined_metrics(planning)) or _is_term_question(planning.question)
    raise ValueError(f"no intent's slot is called {slot!r}")


# --- figures --------------------------------------------------------------------------


def plan_figures(intent: Intent, planning: Planning) -> RouteDecided:
    """Figures of companies: a lookup, a comparison of companies, or a series."""
    understanding = planning.understanding
    planning.understood.comparison = len(understanding.symbols) > 1
    arguments = {
        "symbols": understanding.symbols,
        "metrics": understanding.metrics,
        "period": understanding.periods.period or "annual",
        **period_arguments(understanding.periods),
    }
    if understanding.formula is not None and arguments["period"] == "annual":
        arguments["formula"] = understanding.formula  # the question's definition of it
    filing = understanding.filing
    if filing is not None and arguments["period"] != "ttm":
        # "per the 10-K": the figures as that filing's statements state them, where held.
        arguments["as_filed"] = {"form": filing.form, "fiscal_year": filing.fiscal_year}
    return validated_plan(planning, intent, [(GET_FINANCIAL_METRICS, arguments)])


# --- prices and filings ---------------------------------------------------------------


def plan_prices(intent: Intent, planning: Planning) -> RouteDecided:
    understanding, directory = planning.understanding, planning.directory
    calls = []
    for symbol in understanding.symbols[:5]:
        entry = directory.get(symbol)
        window = understanding.inherited_window or PriceWindow(
            **price_window(planning.question, entry.latest_price_day if entry else None)
        )
        calls.append((GET_PRICES, {"symbol": symbol, **window.model_dump(exclude_none=True)}))
        planning.understood.periods.window = window
    return validated_plan(planning, "price", calls)


_LATEST_WORDS = re.compile(r"\b(?:latest|most recent|newest|last)\b", re.IGNORECASE)
_PLURAL_FILINGS = re.compile(r"\b(?:filings|reports|10-?ks|10-?qs|8-?ks|forms)\b", re.IGNORECASE)


def plan_filings_index(intent: Intent, planning: Planning) -> RouteDecided:
    understanding = planning.understanding
    calls = []
    for symbol in understanding.symbols[:5]:
        arguments: dict[str, Any] = {"symbol": symbol, "forms": understanding.forms or None}
        if understanding.periods.fiscal_years:
            arguments["fiscal_year"] = understanding.periods.fiscal_years[0]
        if _LATEST_WORDS.search(planning.question) and not _PLURAL_FILINGS.search(
            planning.question
        ):
            arguments["limit"] = 1
        calls.append((GET_RECENT_FILINGS, arguments))
    return validated_plan(planning, "filings", calls)


# --- documents --------------------------------------------------------------------------

# "the MCP course", "the onboarding handbook", "my notes on options": a document named by
# the user, looked up in the documents catalog by its words.
_NAMED_DOCUMENT_RE = re.compile(
    r"\b(?:the|my|our|that)\s+((?:[\w&.+-]+\s+){0,4}?"
    r"(?:course|lesson|guide|handbook|slides|deck|notes|whitepaper|white paper|memo|manual))\b",
    re.IGNORECASE,
)


def named_document(question: str) -> str | None:
    match = _NAMED_DOCUMENT_RE.search(question)
    return match.group(1) if match else None


def plan_filing_search(intent: Intent, planning: Planning) -> RouteDecided:
    """What a filing or document says, searched in the held filings of the companies,
    form and period the question names (or a document it names by title)."""
    understanding, understood = planning.understanding, planning.understood
    scope = understood.documents
    scope.symbols = list(understanding.symbols)
    scope.forms = list(understanding.forms)
    periods = understanding.periods
    if understanding.filing is not None and understanding.filing.fiscal_year is not None:
        scope.fiscal_year = understanding.filing.fiscal_year  # the filing named by its year
    elif periods.fiscal_years:
        # The filing of the latest year asked holds the years before it too.
        scope.fiscal_year = max(periods.fiscal_years)
    if periods.fiscal_quarters and len(periods.fiscal_quarters) == 1:
        scope.fiscal_quarter = periods.fiscal_quarters[0]
    scope.named_document = named_document(planning.question)
    scope.topic = search_topic(understood)
    arguments: dict[str, Any] = {
        "query": planning.question[:500],
        "symbols": scope.symbols or None,
        "forms": scope.forms or None,
        "fiscal_year": scope.fiscal_year,
        "fiscal_quarter": scope.fiscal_quarter,
    }
    if scope.named_document:
        arguments["collection"] = scope.named_document
    return validated_plan(
        planning, "document_search", [(SEARCH_DOCUMENTS, arguments)], with_capabilities=True
    )


def search_topic(understood: Understood) -> str | None:
    """What a filing question looks for, as written: the longest span nothing read, with
    the words that ask ("say about", "disclose") and the filler and numbers around it
    ("in its 2022 10-K") trimmed from both ends."""
    spans = sorted(understood.not_understood, key=lambda span: len(span.text), reverse=True)
    for span in spans:
        words = span.text.split()
        while words and _asks_or_fills(words[0]):
            words.pop(0)
        while words and _asks_or_fills(words[-1]):
            words.pop()
        if words:
            return " ".join(words)
    return None


def _asks_or_fills(word: str) -> bool:
    bare = word.strip(".,;:?!'\"()")
    return not meaningful(bare) or bool(_ASKING.fullmatch(bare)) or bare[:1].isdigit()


# --- definitions and the catalog -----------------------------------------------------------

_DEFINITION_TERM = re.compile(
    r"^\s*(?:what(?:'s| is| are| does)|define|explain|meaning of|how is|how are)\s+"
    r"(?:an?\s+|the\s+)?(?P<term>.+?)(?:\s+(?:mean|means|stand for|calculated|computed"
    r"|defined))?\s*\??\s*$",
    re.IGNORECASE,
)
_STRONG_DEFINITION = re.compile(
    r"\b(?:mean|means|meaning|define|definition|stand for|explain)\b", re.IGNORECASE
)


def _resolve_term(term: str, finder: MetricFinder) -> list[str]:
    try:
        return [finder.resolver.resolve(term).metric_id]
    except UnknownMetricPhrase:
        return []


def _is_term_question(question: str) -> bool:
    """A question about what a term is: said outright ("define…", "what does X mean"), or
    "what is X?" where X is a short name rather than a sentence."""
    if _STRONG_DEFINITION.search(question):
        return True
    return (
        _DEFINITION_TERM.match(question) is not None and len(definition_term(question).split()) <= 3
    )


def definition_term(question: str) -> str:
    match = _DEFINITION_TERM.match(question)
    term = match.group("term") if match else question
    return term.strip(" ?.!").strip()


def defined_metrics(planning: Planning) -> list[str]:
    """The catalog's metrics a definition question asks about."""
    return planning.understanding.metrics or _resolve_term(
        definition_term(planning.question), planning.finder
    )


def plan_definition(intent: Intent, planning: Planning) -> RouteDecided:
    question = planning.question
    defined = defined_metrics(planning)
    if defined:
        return validated_plan(planning, "definition", [(LIST_METRICS, {"metrics": defined})])
    term = definition_term(question)
    planning.understood.term = term
    # Not a metric finq computes: the glossary's explainers may still define it.
    arguments = {"query": term[:500], "collection": GLOSSARY_COLLECTION, "limit": 3}
    return validated_plan(
        planning, "definition", [(SEARCH_DOCUMENTS, arguments)], with_capabilities=True
    )


def plan_metric_list(intent: Intent, planning: Planning) -> RouteDecided:
    category = metric_list_category(planning.question)
    planning.understood.category = category
    arguments = {"category": category} if category else {}
    return validated_plan(planning, "list_metrics", [(LIST_METRICS, arguments)])


def plan_no_tools(intent: Intent, planning: Planning) -> RouteDecided:
    """Intents answered without a tool: a refusal, or what finq does not answer yet."""
    return answered_without_tools(planning, intent)


def plan_clarification(intent: Intent, planning: Planning) -> RouteDecided:
    """A clarifying question about `intent` naming what is missing: the company, or the
    figure."""
    understanding, directory = planning.understanding, planning.directory
    symbols, metrics = understanding.symbols, understanding.metrics
    if intent == "price":
        return pending(
            planning,
            "price",
            "Which company's stock price do you mean? "
            f"finq holds prices for {directory.describe()}.",
        )
    if intent == "filings":
        return pending(
            planning,
            "filings",
            f"Which company's filings do you mean? finq holds {directory.describe()}.",
        )
    pending_intent: Intent = intent if intent in METRIC_INTENTS else "metric_lookup"
    if metrics and not symbols:
        labels = " and ".join(mid_sentence(METRICS_BY_ID[m].label) for m in metrics)
        clarifying = f"Which company's {labels} do you mean? finq holds {directory.describe()}."
        return pending(planning, pending_intent, clarifying)
    if symbols and understanding.matches.unresolved:
        clarifying = (
            f"{describe_unknown(understanding.matches.unresolved[0], planning.finder.resolver)} "
            "Which of them, or which other figure, do you mean?"
        )
        return pending(planning, pending_intent, clarifying)
    if symbols:
        names = " and ".join(
            entry.display_name for s in symbols if (entry := directory.get(s)) is not None
        )
        clarifying = (
            f"Which figure of {names} would you like? For example {metric_examples()}, "
            "and a fiscal year."
        )
        return pending(planning, pending_intent, clarifying)
    clarifying = (
        f"I did not find a company and a financial figure in that. {capabilities(directory)}."
    )
    return RouteDecided(
        question=planning.question,
        intent="clarify",
        clarifying_question=clarifying,
        understood=planning.understood,
    )


# --- the user's portfolio -------------------------------------------------------------------


def plan_portfolio(intent: Intent, planning: Planning) -> RouteDecided:
    """The user's own holdings, activity and returns (services.router.portfolio_planning);
    what was read is kept on the route, for the answerer and for follow-ups."""
    plan = plan_portfolio_calls(intent, planning.understanding, planning.directory)  # type: ignore[arg-type]
    planning.understood.portfolio = plan.reading
    if plan.clarifying is not None:
        return pending(planning, plan.intent, plan.clarifying)
    return validated_plan(planning, plan.intent, plan.calls)


# --- the registry -------------------------------------------------------------------------

PLANNERS: dict[PlannerKind, Planner] = {
    "figures": plan_figures,
    "prices": plan_prices,
    "filings_index": plan_filings_index,
    "filing_search": plan_filing_search,
    "definition": plan_definition,
    "metric_list": plan_metric_list,
    "no_tools": plan_no_tools,
    "clarification": plan_clarification,
    "portfolio": plan_portfolio,
}


# --- building routes ------------------------------------------------------------------------


def pending(planning: Planning, intent: Intent, clarifying: str) -> RouteDecided:
    """A clarifying question that remembers what it was about, so a short reply completes it."""
    planning.understood.pending_intent = intent
    return RouteDecided(
        question=planning.question,
        intent="clarify",
        clarifying_question=clarifying,
        understood=planning.understood,
    )


def answered_without_tools(planning: Planning, intent: Intent) -> RouteDecided:
    return RouteDecided(
        question=planning.question,
        intent=intent,
        understood=planning.understood,
        capabilities=capabilities(planning.directory),
    )


def validated_plan(
    planning: Planning,
    intent: Intent,
    calls: list[tuple[str, dict[str, Any]]],
    *,
    with_capabilities: bool = False,
) -> RouteDecided:
    """Validate every call against its tool's schema and the intent's whitelist; a route
    whose answer may have to say what finq can answer instead carries that in words."""
    tool_calls: list[ToolCall] = []
    understood = planning.understood
    for tool, arguments in calls:
        if not tool_allowed(intent, tool):
            raise AssertionError(f"the rules planned {tool} for {intent}")  # a bug, not input
        try:
            validated = TOOL_ARGUMENTS[tool].model_validate(arguments)
        except ValidationError as error:
            return RouteDecided(
                question=planning.question,
                intent="clarify",
                clarifying_question=(
                    f"I could not look that up ({error.errors()[0]['msg'].lower()}). "
                    f"{capabilities(planning.directory)}."
                ),
                understood=understood,
            )
        tool_calls.append(ToolCall(tool=tool, arguments=validated))
    return RouteDecided(
        question=planning.question,
        intent=intent,
        tool_calls=tool_calls,
        understood=understood,
        capabilities=capabilities(planning.directory) if with_capabilities else None,
    )
