"""Rule-based routing: find the company, the metric and the fiscal year in a question.

Pure functions over precompiled patterns; the company directory is read from
the database once at start and passed in.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Protocol

from pydantic import ValidationError
from rapidfuzz.distance import OSA

from services.router.metric_finding import MetricFinder, MetricMatches, describe_unknown
from services.router.periods import (
    Periods,
    find_last_n,
    find_periods,
    period_arguments,
    price_window,
)
from shared.contracts import ConversationTurn, Intent, RouteDecided, RouteLayer, ToolCall
from shared.intents import INTENTS, tool_allowed
from shared.metric_catalog import METRICS_BY_ID, mid_sentence
from shared.metric_resolver import MetricResolver, UnknownMetricPhrase, normalize_phrase
from shared.tool_schemas import (
    GET_FINANCIAL_METRICS,
    GET_PRICES,
    GET_RECENT_FILINGS,
    GLOSSARY_COLLECTION,
    LIST_METRICS,
    SEARCH_DOCUMENTS,
    TOOL_ARGUMENTS,
)

# Tickers that are also everyday words are only taken when written in capitals or as $TICKER.
TICKER_STOP_WORDS = frozenset(
    {
        "a",
        "all",
        "am",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "for",
        "go",
        "has",
        "he",
        "i",
        "if",
        "in",
        "is",
        "it",
        "me",
        "my",
        "new",
        "now",
        "on",
        "one",
        "or",
        "so",
        "the",
        "to",
        "up",
        "us",
        "was",
        "we",
        "what",
        "who",
        "you",
        "eps",
        "ttm",
        "fy",
    }
)

# Words one edit from a company name that are ordinary English in a finance question.
_NOT_COMPANY_TYPOS = frozenset({"apply", "applet", "amazing", "metal", "meter", "teslas"})
_DOLLAR_TICKER = re.compile(r"\$([A-Za-z][A-Za-z.]{0,9})\b")
_WORD = re.compile(r"[A-Za-z][A-Za-z.]*[A-Za-z]|[A-Za-z]")


@dataclass(frozen=True)
class CompanyEntry:
    symbol: str
    display_name: str
    names: tuple[str, ...]  # lowercase common names: "apple", "google"
    # The latest data held, for "last year" and "last month": read once at router start.
    latest_fiscal_year: int | None = None
    latest_price_day: date | None = None


@dataclass(frozen=True)
class CompanyDirectory:
    """The companies finq holds, with a compiled pattern over their names."""

    entries: tuple[CompanyEntry, ...]

    def __post_init__(self) -> None:
        by_name: dict[str, str] = {}
        for entry in self.entries:
            for name in entry.names:
                by_name.setdefault(name.lower(), entry.symbol)
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "_by_symbol", {e.symbol: e for e in self.entries})
        names = sorted(by_name, key=len, reverse=True)
        pattern = (
            re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")(?:'s|’s)?\b", re.I)
            if names
            else None
        )
        object.__setattr__(self, "_name_pattern", pattern)
        object.__setattr__(
            self,
            "_one_word_names",
            {
                name: symbol
                for name, symbol in by_name.items()
                if " " not in name and len(name) >= 5
            },
        )

    def get(self, symbol: str) -> CompanyEntry | None:
        return self._by_symbol.get(symbol)  # type: ignore[attr-defined]

    def find(self, text: str) -> list[str]:
        """Symbols of the companies a text names, in the order it names them."""
        found: list[tuple[int, str]] = []
        by_symbol: dict[str, CompanyEntry] = self._by_symbol  # type: ignore[attr-defined]
        for match in _DOLLAR_TICKER.finditer(text):
            symbol = match.group(1).upper()
            if symbol in by_symbol:
                found.append((match.start(), symbol))
        for match in _WORD.finditer(text):
            word = match.group(0)
            symbol = word.upper()
            if symbol not in by_symbol:
                continue
            # Capitals always count; lower case only when it cannot be an ordinary word.
            if word.isupper() or (word.lower() not in TICKER_STOP_WORDS and len(word) >= 3):
                found.append((match.start(), symbol))
        pattern: re.Pattern[str] | None = self._name_pattern  # type: ignore[attr-defined]
        if pattern is not None:
            by_name: dict[str, str] = self._by_name  # type: ignore[attr-defined]
            for match in pattern.finditer(text):
                found.append((match.start(), by_name[match.group(1).lower()]))
        ordered: list[str] = []
        for _, symbol in sorted(found):
            if symbol not in ordered:
                ordered.append(symbol)
        return ordered

    def correct(self, text: str) -> tuple[str, dict[str, str]]:
        """The text with misspelt company names put right ("nvidea" → "nvidia", "telsa" →
        "tesla"), and what was corrected. Only words of five letters or more one edit away
        (two from eight letters) from a one-word name count, so ordinary words stay."""
        names: dict[str, str] = self._one_word_names  # type: ignore[attr-defined]
        corrections: dict[str, str] = {}

        def fix(match: re.Match[str]) -> str:
            word = match.group(0)
            lower = word.lower()
            if len(lower) < 5 or lower in names or lower in _NOT_COMPANY_TYPOS:
                return word
            allowed = 2 if len(lower) >= 8 else 1
            for name in names:
                if abs(len(name) - len(lower)) <= allowed and OSA.distance(lower, name) <= allowed:
                    corrections[word] = name
                    return name
            return word

        corrected = _WORD.sub(fix, text) if names else text
        return corrected, corrections

    def describe(self) -> str:
        return ", ".join(f"{e.display_name} ({e.symbol})" for e in self.entries)

    def words(self) -> frozenset[str]:
        """Every word of every company name and ticker, as the metric finder sees them."""
        words: set[str] = set()
        for entry in self.entries:
            for name in (entry.symbol, entry.display_name, *entry.names):
                words.update(normalize_phrase(name).split())
        return frozenset(words)


_NO_COMPANIES = CompanyDirectory(())


def metric_finder(
    directory: CompanyDirectory, resolver: MetricResolver | None = None
) -> MetricFinder:
    return MetricFinder(resolver or MetricResolver.from_catalog(), directory.words())


def find_metrics(text: str) -> list[str]:
    """The catalog metrics a text names exactly, in order."""
    return _catalog_finder(_NO_COMPANIES).exact(text).metrics


@functools.cache
def _catalog_finder(directory: CompanyDirectory) -> MetricFinder:
    """A finder over the catalog alone, for callers that bring no finder of their own."""
    return metric_finder(directory)


EXAMPLE_QUESTION = "What was Apple's revenue last fiscal year?"


def _metric_examples() -> str:
    return ", ".join(mid_sentence(METRICS_BY_ID[m].label) for m in list(METRICS_BY_ID)[:6])


def capabilities(directory: CompanyDirectory) -> str:
    """What finq answers, in words and without digits (a refusal has no facts to check a
    number against)."""
    return (
        "finq answers questions about companies' financial figures "
        f"({_metric_examples()} and more), their stock prices and their SEC filings, "
        f"for {directory.describe()}; for example "
        f'"{EXAMPLE_QUESTION}", "Apple\'s stock price last month" or '
        '"When did NVIDIA file its latest annual report?"'
    )


_FORM_PHRASES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b10-?k'?s?\b|\bannual reports?\b", re.IGNORECASE), "10-K"),
    (re.compile(r"\b10-?q'?s?\b|\bquarterly reports?\b", re.IGNORECASE), "10-Q"),
    (re.compile(r"\b8-?k'?s?\b", re.IGNORECASE), "8-K"),
    (re.compile(r"\b20-?f'?s?\b", re.IGNORECASE), "20-F"),
    (re.compile(r"\bproxy statements?\b|\bdef\s?14a\b", re.IGNORECASE), "DEF 14A"),
)
# Catalog metrics that a price question names ("share price"): answered from daily prices.
PRICE_METRICS = frozenset({"period_end_price"})


def find_forms(text: str) -> list[str]:
    return [form for pattern, form in _FORM_PHRASES if pattern.search(text)]


_GROWTH_WORDS = re.compile(
    r"\b(?:grow|grew|grown|growing|growth|increased?|rise|rose|risen|declined?|fall|fell"
    r"|fallen|drop(?:ped)?|changed?|yoy|year[\s-]+over[\s-]+year)\b",
    re.IGNORECASE,
)
_CAGR_WORDS = re.compile(r"\bcagr\b|\bcompound(?:ed)?\s+annual", re.IGNORECASE)
_YOY_FORMULA = re.compile(r"^\((\w+) / \1\[-1\] - 1\) \* 100$")
_CAGR_FORMULA = re.compile(r"^\(\((\w+) / \1\[-(\d+)\]\) \*\* \(1 / \2\) - 1\) \* 100$")
# base metric → its year-over-year growth metric; (base, years) → its CAGR metric.
YOY_GROWTH_OF: dict[str, str] = {
    match.group(1): metric.id
    for metric in METRICS_BY_ID.values()
    if metric.formula and (match := _YOY_FORMULA.match(metric.formula))
}
CAGR_OF: dict[tuple[str, int], str] = {
    (match.group(1), int(match.group(2))): metric.id
    for metric in METRICS_BY_ID.values()
    if metric.formula and (match := _CAGR_FORMULA.match(metric.formula))
}


def growth_metrics(question: str, metrics: list[str], years: list[int]) -> list[str]:
    """ "How much did revenue grow" asks for revenue growth, "revenue CAGR over the last 5
    years" for the 5-year CAGR; over a range the figures themselves stay beside their growth,
    so the answer shows both what they were and how they moved."""
    span = find_last_n(question)
    window = span[0] if span and span[1] == "years" else (max(years) - min(years) if years else 0)
    chosen: list[str] = []
    for metric in metrics:
        if _CAGR_WORDS.search(question):
            cagr = CAGR_OF.get((metric, window)) or CAGR_OF.get((metric, 3))
            replacement = [cagr] if cagr else [metric]
        elif _GROWTH_WORDS.search(question) and metric in YOY_GROWTH_OF:
            growth = YOY_GROWTH_OF[metric]
            replacement = [metric, growth] if len(years) > 1 or span else [growth]
        else:
            replacement = [metric]
        chosen.extend(m for m in replacement if m not in chosen)
    return chosen


_CATEGORY_WORDS: dict[str, re.Pattern[str]] = {
    "income_statement": re.compile(r"\bincome[\s-]+statement\b|\bp\s?&\s?l\b", re.I),
    "balance_sheet": re.compile(r"\bbalance[\s-]+sheet\b", re.I),
    "cash_flow": re.compile(r"\bcash[\s-]+flows?\b", re.I),
    "profitability": re.compile(r"\bprofitability\b|\bmargins?\b|\breturns? on\b", re.I),
    "growth": re.compile(r"\bgrowth\b", re.I),
    "leverage": re.compile(r"\bleverage\b|\bdebt\b|\bsolvency\b", re.I),
    "liquidity": re.compile(r"\bliquidity\b", re.I),
    "efficiency": re.compile(r"\befficiency\b|\bturnover\b", re.I),
    "per_share": re.compile(r"\bper[\s-]+share\b", re.I),
    "valuation": re.compile(r"\bvaluation\b|\bmultiples\b", re.I),
    "capital_returns": re.compile(
        r"\bcapital[\s-]+returns?\b|\bshareholder[\s-]+returns?\b|\bdividends?\b", re.I
    ),
}


def metric_list_category(question: str) -> str | None:
    """The catalog category a "which metrics…" question narrows to, if any."""
    for category, pattern in _CATEGORY_WORDS.items():
        if pattern.search(question):
            return category
    return None


_LATEST_WORDS = re.compile(r"\b(?:latest|most recent|newest|last)\b", re.IGNORECASE)
_PLURAL_FILINGS = re.compile(r"\b(?:filings|reports|10-?ks|10-?qs|8-?ks|forms)\b", re.IGNORECASE)
_DEFINITION_TERM = re.compile(
    r"^\s*(?:what(?:'s| is| are| does)|define|explain|meaning of|how is|how are)\s+"
    r"(?:an?\s+|the\s+)?(?P<term>.+?)(?:\s+(?:mean|means|stand for|calculated|computed"
    r"|defined))?\s*\??\s*$",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"\b(?:my|i|me|we|our)\b", re.IGNORECASE)
METRIC_INTENTS = frozenset({"metric_lookup", "metric_comparison", "metric_trend"})


@dataclass
class Understanding:
    """What layer 1 found in a question: entities, periods and a score per intent."""

    question: str
    symbols: list[str]
    metrics: list[str]
    named_metrics: list[str]
    matches: MetricMatches
    periods: Periods
    forms: list[str]
    growth: bool = False
    corrections: dict[str, str] = field(default_factory=dict)  # misspelt company names
    # Slots a follow-up took from the conversation rather than from this question.
    inherited: list[str] = field(default_factory=list)
    inherited_window: dict[str, str] | None = None  # a price follow-up's days
    previous_intent: str | None = None  # the kind of question a follow-up continues
    scores: dict[str, float] = field(default_factory=dict)

    @property
    def ranked(self) -> list[tuple[str, float]]:
        return sorted(self.scores.items(), key=lambda item: -item[1])


# How people ask for a figure without naming it: "how much did Tesla make", "…sell".
_VERB_METRICS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"\bhow much (?:money |profit )?(?:did|does|do) .+? (?:make|earn)\b", re.I),
        "net_income",
    ),
    (re.compile(r"\bhow much (?:did|does|do) .+? (?:sell|bring in|take in)\b", re.I), "revenue"),
    (re.compile(r"\b(?:earned|earns|made|makes) (?:more|less|the most)\b", re.I), "net_income"),
    (re.compile(r"\b(?:sold|sells) (?:more|less|the most)\b", re.I), "revenue"),
    (re.compile(r"\bhow (?:much )?profitable (?:was|is)\b", re.I), "net_margin"),
    (
        re.compile(r"\bhow many (?:shares|stocks) (?:does|did|do) .+? have\b", re.I),
        "shares_outstanding",
    ),
)


def understand(question: str, directory: CompanyDirectory, finder: MetricFinder) -> Understanding:
    corrected, corrections = directory.correct(question)
    symbols = directory.find(corrected)
    scan = finder.exact(corrected)
    matches = finder.find(scan)
    if not matches.metrics:
        spoken = [metric for pattern, metric in _VERB_METRICS if pattern.search(question)]
        if spoken:
            matches = MetricMatches(spoken[:1], [], [])
    latest = _latest_year(directory, symbols)
    periods = find_periods(question, latest)
    metrics = growth_metrics(question, matches.metrics, periods.fiscal_years)
    if _CAGR_WORDS.search(question) and periods.last and periods.period in (None, "annual"):
        # "CAGR over the last five years" is one figure: the latest five-year CAGR.
        periods.last, periods.spans_several = 1, False
    return Understanding(
        question=question,
        symbols=symbols,
        metrics=metrics,
        named_metrics=scan.metrics,
        matches=matches,
        periods=periods,
        forms=find_forms(question),
        growth=metrics != matches.metrics or bool(_GROWTH_WORDS.search(question)),
        corrections=corrections,
    )


def _latest_year(directory: CompanyDirectory, symbols: list[str]) -> int | None:
    years = [
        entry.latest_fiscal_year
        for symbol in symbols
        if (entry := directory.get(symbol)) is not None and entry.latest_fiscal_year is not None
    ]
    return max(years) if years else None


def score_intents(understanding: Understanding) -> dict[str, float]:
    """Cue words per intent (shared.intents) plus what the question's entities make likely."""
    question = understanding.question
    scores = {
        intent.name: sum(c.weight for c in intent.cues if c.pattern.search(question))
        for intent in INTENTS
    }
    symbols, metrics = understanding.symbols, understanding.metrics
    figures = [m for m in metrics if m not in PRICE_METRICS]
    if symbols and figures:
        scores["metric_lookup"] += 3.0
        if len(symbols) > 1:
            scores["metric_comparison"] += 3.5
        elif understanding.periods.spans_several or understanding.growth:
            scores["metric_trend"] += 3.5
    if symbols:
        for intent in ("price", "filings", "portfolio_position"):
            if scores[intent] > 0:
                scores[intent] += 1.5
        if scores["document_search"] > 0:
            scores["document_search"] += 1.0
        scores["definition"] -= 3.0
    if figures and not symbols and scores["definition"] <= 0:
        # A figure named without a company is a lookup waiting for one ("revenue?").
        scores["metric_lookup"] += 1.0
    if figures:
        scores["price"] -= 3.0
        if not symbols and scores["definition"] > 0:
            scores["definition"] += 1.0
    if understanding.periods.fiscal_years:
        scores["definition"] -= 2.0
    if _FIRST_PERSON.search(question):
        scores["definition"] -= 2.0
    if symbols and figures:
        scores["list_metrics"] -= 3.0
    scores["clarify"] = 0.0
    return scores


def rules_confidence(scores: dict[str, float]) -> tuple[str, float, float]:
    """The best intent, its score and its lead over the runner-up."""
    ranked = sorted(scores.items(), key=lambda item: -item[1])
    (best, top), (_, second) = ranked[0], ranked[1]
    return best, top, top - max(second, 0.0)


@dataclass(frozen=True)
class RuleThresholds:
    """When rules decide alone: the best intent scores at least `min_score` and leads the
    runner-up by `min_margin`; otherwise the classifier (and then the LLM) is asked."""

    min_score: float = 2.5
    min_margin: float = 1.0


class IntentPredictor(Protocol):
    def predict(self, question: str) -> Any: ...


def route_question(
    question: str,
    directory: CompanyDirectory,
    finder: MetricFinder | None = None,
    history: Sequence[ConversationTurn] = (),
    classifier: IntentPredictor | None = None,
    thresholds: RuleThresholds = RuleThresholds(),
    classifier_threshold: float = 0.6,
    classifier_min_margin: float = 0.2,
    classifier_override: float = 0.9,
) -> RouteDecided:
    """Layers 1 and 2 (and the conversation): the route, and in `entities["unsure"]` whether
    neither rules nor classifier were sure, so the caller may ask the LLM."""
    finder = finder or _catalog_finder(directory)
    understanding = understand(question, directory, finder)
    previous = history[-1] if history else None
    if previous is not None:
        inherit_from_previous_turn(understanding, previous, directory)
    understanding.scores = score_intents(understanding)
    best, top, lead = rules_confidence(understanding.scores)
    confidence = round(min(1.0, top / (top + (top - lead) + 1.0)), 2) if top > 0 else 0.0
    decided_by: RouteLayer = "conversation" if understanding.inherited else "rules"
    unsure = False
    if not (top >= thresholds.min_score and lead >= thresholds.min_margin):
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
            if top <= 0:
                best = (
                    "clarify" if understanding.symbols or understanding.metrics else "out_of_scope"
                )
    route = plan_intent(best, understanding, directory, finder)
    route.decided_by = decided_by
    route.confidence = confidence
    if unsure:
        route.entities["unsure"] = True
    return route


_FOLLOW_UP_OPENING = re.compile(
    r"^\s*(?:and|what about|how about|same for|also|now|then|ok(?:ay)?,?\s+and|what of"
    r"|and what about|and how about)\b",
    re.IGNORECASE,
)
_PRONOUN = re.compile(r"\b(?:its|their|it|they|them|the company|that company)\b", re.IGNORECASE)
# "What is EBITDA?" asks what a term means, not for the previous company's figure ("what is
# the revenue?" and "what is its margin?" do continue the conversation).
_DEFINITION_SHAPED = re.compile(
    r"^\s*(?:what(?:'s| is| are| does)|define|explain|meaning of|how is|how are)\s+"
    r"(?!the\b|its\b|their\b|it\b)",
    re.IGNORECASE,
)


def inherit_from_previous_turn(
    understanding: Understanding, previous: ConversationTurn, directory: CompanyDirectory
) -> None:
    """Fill what a follow-up leaves out from the turn before ("And the year before?", "And
    Apple?", "and its net income?"), or complete a clarification with the reply ("Apple")."""
    before = previous.entities
    if not before or previous.intent in {"out_of_scope", "definition", "list_metrics"}:
        return
    pending = previous.needs_clarification
    question = understanding.question
    follow_up = (
        pending
        or _FOLLOW_UP_OPENING.search(question) is not None
        or _PRONOUN.search(question) is not None
        or (
            not _DEFINITION_SHAPED.search(question)
            and (not understanding.symbols or not understanding.metrics)
        )
    )
    if not follow_up:
        return
    # A question complete in itself: only an unnamed period carries over ("And Apple's net
    # income?" after a question about fiscal 2022).
    if (
        understanding.symbols
        and understanding.metrics
        and not pending
        and not (_FOLLOW_UP_OPENING.search(question) and not understanding.periods.named)
    ):
        return
    if not understanding.symbols and before.get("symbols"):
        understanding.symbols = list(before["symbols"])
        understanding.inherited.append("symbols")
    if not understanding.metrics and before.get("metrics"):
        understanding.metrics = list(before["metrics"])
        understanding.inherited.append("metrics")
    periods = understanding.periods
    earlier = before.get("periods") or {}
    if "window" in before and not periods.named:
        understanding.inherited_window = dict(before["window"])
    if periods.shift:
        years = earlier.get("fiscal_years") or (
            [latest]
            if (latest := _latest_year(directory, understanding.symbols)) is not None
            else []
        )
        if years:
            periods.fiscal_years = [year + periods.shift for year in years]
            periods.last = None
            periods.period = periods.period or earlier.get("period")
            periods.fiscal_quarters = periods.fiscal_quarters or earlier.get("fiscal_quarters", [])
            understanding.inherited.append("periods")
    elif periods.named and earlier:
        # "and Q2?" keeps the fiscal year; "what about 2024?" after a quarter keeps the quarter.
        if periods.fiscal_quarters and not periods.fiscal_years and not periods.last:
            periods.fiscal_years = list(earlier.get("fiscal_years", []))
            understanding.inherited.append("periods")
        elif periods.fiscal_years and not periods.period and earlier.get("fiscal_quarters"):
            periods.period = earlier.get("period")
            periods.fiscal_quarters = list(earlier["fiscal_quarters"])
            understanding.inherited.append("periods")
    elif not periods.named and earlier:
        periods.fiscal_years = list(earlier.get("fiscal_years", []))
        periods.fiscal_quarters = list(earlier.get("fiscal_quarters", []))
        periods.period = earlier.get("period")
        periods.last = earlier.get("last")
        periods.spans_several = bool(earlier.get("spans_several"))
        understanding.inherited.append("periods")
    if not understanding.forms and before.get("forms"):
        understanding.forms = list(before["forms"])
    if previous.intent and understanding.inherited:
        # The turn before sets the kind of question unless this one says otherwise.
        understanding.previous_intent = previous.intent


def _entities(understanding: Understanding, directory: CompanyDirectory) -> dict[str, Any]:
    periods = understanding.periods
    entities: dict[str, Any] = {
        "symbols": understanding.symbols,
        "companies": [
            entry.display_name
            for s in understanding.symbols
            if (entry := directory.get(s)) is not None
        ],
        "metrics": understanding.metrics,
        "fiscal_years": periods.fiscal_years,
        "named_metrics": understanding.named_metrics,  # named exactly, before fallbacks
        "periods": {**period_arguments(periods), "spans_several": periods.spans_several},
        "scores": {k: round(v, 2) for k, v in understanding.ranked[:3] if v > 0},
    }
    if understanding.inherited:
        entities["inherited"] = understanding.inherited
    if understanding.corrections:
        entities["company_corrections"] = understanding.corrections
    matches = understanding.matches
    if matches.resolutions:
        entities["metric_resolutions"] = [
            {
                "phrase": r.phrase,
                "metric": r.metric_id,
                "method": r.method,
                "confidence": r.confidence,
            }
            for r in matches.resolutions
        ]
    if matches.unresolved and not understanding.metrics:
        entities["unknown_metric_phrases"] = matches.unresolved
    return entities


def plan_intent(
    intent: str, understanding: Understanding, directory: CompanyDirectory, finder: MetricFinder
) -> RouteDecided:
    """The tool calls that answer `intent` with what the question (and conversation) gave,
    or a clarifying question naming what is missing."""
    question = understanding.question
    entities = _entities(understanding, directory)
    symbols, metrics = understanding.symbols, understanding.metrics
    previous_intent = understanding.previous_intent
    if (
        previous_intent in {"price", "filings"}
        and understanding.inherited
        and intent in (METRIC_INTENTS | {"clarify", "out_of_scope"})
        and not (metrics and "metrics" not in understanding.inherited)
    ):
        intent = previous_intent

    if intent in METRIC_INTENTS or (intent == "clarify" and metrics):
        if symbols and metrics:
            if len(symbols) > 1:
                intent = "metric_comparison"
                entities["comparison"] = True
            elif understanding.periods.spans_several or (
                understanding.growth and understanding.periods.fiscal_years
            ):
                intent = "metric_trend"
            elif intent not in METRIC_INTENTS:
                intent = "metric_lookup"
            arguments = {
                "symbols": symbols,
                "metrics": metrics,
                "period": understanding.periods.period or "annual",
                **period_arguments(understanding.periods),
            }
            return _plan(question, intent, GET_FINANCIAL_METRICS, arguments, entities, directory)
        return _clarify_metric(understanding, intent, entities, directory, finder)

    if intent == "price":
        if not symbols:
            return _pending(
                question,
                "price",
                entities,
                "Which company's stock price do you mean? "
                f"finq holds prices for {directory.describe()}.",
            )
        calls = []
        for symbol in symbols[:5]:
            entry = directory.get(symbol)
            window = understanding.inherited_window or {
                key: value.isoformat()
                for key, value in price_window(
                    question, entry.latest_price_day if entry else None
                ).items()
            }
            calls.append((GET_PRICES, {"symbol": symbol, **window}))
            entities["window"] = window
        return _plan_calls(question, "price", calls, entities, directory)

    if intent == "filings":
        if not symbols:
            return _pending(
                question,
                "filings",
                entities,
                f"Which company's filings do you mean? finq holds {directory.describe()}.",
            )
        calls = []
        for symbol in symbols[:5]:
            arguments: dict[str, Any] = {"symbol": symbol, "forms": understanding.forms or None}
            if understanding.periods.fiscal_years:
                arguments["fiscal_year"] = understanding.periods.fiscal_years[0]
            if _LATEST_WORDS.search(question) and not _PLURAL_FILINGS.search(question):
                arguments["limit"] = 1
            calls.append((GET_RECENT_FILINGS, arguments))
        entities["forms"] = understanding.forms
        return _plan_calls(question, "filings", calls, entities, directory)

    if intent == "document_search":
        arguments = {
            "query": question[:500],
            "symbols": symbols or None,
            "forms": understanding.forms or None,
        }
        if understanding.periods.fiscal_years:
            arguments["fiscal_year"] = understanding.periods.fiscal_years[0]
        if understanding.periods.fiscal_quarters:
            arguments["fiscal_quarter"] = understanding.periods.fiscal_quarters[0]
        if named := named_document(question):
            # "the MCP course", "the onboarding guide": resolved against the catalog.
            arguments["collection"] = named
        return _plan(question, "document_search", SEARCH_DOCUMENTS, arguments, entities, directory)

    if intent == "definition":
        defined = metrics or _resolve_term(_definition_term(question), finder)
        if not defined and not _is_term_question(question):
            # "What's going on with the economy?" is not asking what a term means.
            entities["capabilities"] = capabilities(directory)
            return RouteDecided(question=question, intent="out_of_scope", entities=entities)
        if defined:
            arguments = {"metrics": defined}
            return _plan(question, "definition", LIST_METRICS, arguments, entities, directory)
        term = _definition_term(question)
        entities["term"] = term
        entities["capabilities"] = capabilities(directory)
        # Not a metric finq computes: the glossary's explainers may still define it.
        arguments = {"query": term[:500], "collection": GLOSSARY_COLLECTION, "limit": 3}
        return _plan(question, "definition", SEARCH_DOCUMENTS, arguments, entities, directory)

    if intent == "list_metrics":
        category = metric_list_category(question)
        entities["category"] = category
        return _plan(
            question,
            "list_metrics",
            LIST_METRICS,
            {"category": category} if category else {},
            entities,
            directory,
        )

    if intent in {"portfolio_overview", "portfolio_position", "out_of_scope"}:
        entities["capabilities"] = capabilities(directory)
        return RouteDecided(question=question, intent=intent, entities=entities)  # type: ignore[arg-type]

    return _clarify_metric(understanding, "clarify", entities, directory, finder)


def _resolve_term(term: str, finder: MetricFinder) -> list[str]:
    try:
        return [finder.resolver.resolve(term).metric_id]
    except UnknownMetricPhrase:
        return []


_STRONG_DEFINITION = re.compile(
    r"\b(?:mean|means|meaning|define|definition|stand for|explain)\b", re.IGNORECASE
)


def _is_term_question(question: str) -> bool:
    """A question about what a term is: said outright ("define…", "what does X mean"), or
    "what is X?" where X is a short name rather than a sentence."""
    if _STRONG_DEFINITION.search(question):
        return True
    return (
        _DEFINITION_TERM.match(question) is not None
        and len(_definition_term(question).split()) <= 3
    )


def _definition_term(question: str) -> str:
    match = _DEFINITION_TERM.match(question)
    term = match.group("term") if match else question
    return term.strip(" ?.!").strip()


def _clarify_metric(
    understanding: Understanding,
    intent: str,
    entities: dict[str, Any],
    directory: CompanyDirectory,
    finder: MetricFinder,
) -> RouteDecided:
    question, symbols, metrics = (
        understanding.question,
        understanding.symbols,
        understanding.metrics,
    )
    pending_intent = intent if intent in METRIC_INTENTS else "metric_lookup"
    if metrics and not symbols:
        labels = " and ".join(mid_sentence(METRICS_BY_ID[m].label) for m in metrics)
        clarifying = f"Which company's {labels} do you mean? finq holds {directory.describe()}."
        return _pending(question, pending_intent, entities, clarifying)
    if symbols and understanding.matches.unresolved:
        clarifying = (
            f"{describe_unknown(understanding.matches.unresolved[0], finder.resolver)} "
            "Which of them, or which other figure, do you mean?"
        )
        return _pending(question, pending_intent, entities, clarifying)
    if symbols:
        names = " and ".join(
            entry.display_name for s in symbols if (entry := directory.get(s)) is not None
        )
        clarifying = (
            f"Which figure of {names} would you like? For example {_metric_examples()}, "
            "and a fiscal year."
        )
        return _pending(question, pending_intent, entities, clarifying)
    clarifying = (
        f"I did not find a company and a financial figure in that. {capabilities(directory)}."
    )
    return RouteDecided(
        question=question, intent="clarify", clarifying_question=clarifying, entities=entities
    )


def _pending(question: str, intent: str, entities: dict[str, Any], clarifying: str) -> RouteDecided:
    """A clarifying question that remembers what it was about, so a short reply completes it."""
    entities["pending_intent"] = intent
    return RouteDecided(
        question=question, intent="clarify", clarifying_question=clarifying, entities=entities
    )


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


def _plan(
    question: str,
    intent: Intent,
    tool: str,
    arguments: dict[str, Any],
    entities: dict[str, Any],
    directory: CompanyDirectory,
) -> RouteDecided:
    return _plan_calls(question, intent, [(tool, arguments)], entities, directory)


def _plan_calls(
    question: str,
    intent: Intent,
    calls: list[tuple[str, dict[str, Any]]],
    entities: dict[str, Any],
    directory: CompanyDirectory,
) -> RouteDecided:
    """Validate every call against its tool's schema and the intent's whitelist."""
    tool_calls: list[ToolCall] = []
    for tool, arguments in calls:
        if not tool_allowed(intent, tool):
            raise AssertionError(f"the rules planned {tool} for {intent}")  # a bug, not input
        try:
            validated = TOOL_ARGUMENTS[tool].model_validate(arguments)
        except ValidationError as error:
            return RouteDecided(
                question=question,
                intent="clarify",
                clarifying_question=(
                    f"I could not look that up ({error.errors()[0]['msg'].lower()}). "
                    f"{capabilities(directory)}."
                ),
                entities=entities,
            )
        tool_calls.append(
            ToolCall(
                tool=tool,
                arguments=validated.model_dump(mode="json", exclude_none=True, by_alias=True),
            )
        )
    return RouteDecided(question=question, intent=intent, tool_calls=tool_calls, entities=entities)
