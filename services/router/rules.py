"""Rule-based routing: find the company, the metric and the fiscal year in a question.

Pure functions over precompiled patterns; the company directory is read from
the database once at start and passed in.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from pydantic import ValidationError

from services.router.metric_finding import MetricFinder, MetricMatches, describe_unknown
from shared.contracts import Intent, RouteDecided, ToolCall
from shared.metric_catalog import METRICS_BY_ID, mid_sentence
from shared.metric_resolver import MetricResolver, normalize_phrase
from shared.tool_schemas import (
    GET_FINANCIAL_METRICS,
    GET_PRICES,
    GET_RECENT_FILINGS,
    LIST_METRICS,
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

_YEAR_PATTERN = re.compile(
    r"\b(?:fy\s?'?(?P<fy>\d{4}|\d{2})|(?P<year>(?:19|20)\d{2}))\b", re.IGNORECASE
)
_DOLLAR_TICKER = re.compile(r"\$([A-Za-z][A-Za-z.]{0,9})\b")
_WORD = re.compile(r"[A-Za-z][A-Za-z.]*[A-Za-z]|[A-Za-z]")


@dataclass(frozen=True)
class CompanyEntry:
    symbol: str
    display_name: str
    names: tuple[str, ...]  # lowercase common names: "apple", "google"


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


_QUARTER_PATTERN = re.compile(
    r"\bq([1-4])\b|\b(first|second|third|fourth|1st|2nd|3rd|4th)[\s-]+quarter\b",
    re.IGNORECASE,
)
_QUARTER_WORDS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3}
_QUARTER_WORDS |= {"fourth": 4, "4th": 4}
_TTM_PATTERN = re.compile(
    r"\b(?:ttm|ltm|trailing[\s-]+twelve[\s-]+months?|last[\s-]+twelve[\s-]+months?)\b",
    re.IGNORECASE,
)
_QUARTERLY_PATTERN = re.compile(r"\bquarterly\b|\bby quarter\b|\bper quarter\b", re.I)
_RANGE_PATTERN = re.compile(
    r"\b(?:from\s+|between\s+)?(?:fy\s?)?((?:19|20)\d{2})\s*"
    r"(?:-|–|to|through|thru|until|and)\s*(?:fy\s?)?((?:19|20)\d{2})\b",
    re.IGNORECASE,
)
_LAST_N_PATTERN = re.compile(
    r"\b(?:last|past|previous|recent)\s+(\d{1,2}|two|three|four|five|six|seven|eight|nine|ten)"
    r"\s+(?:fiscal\s+)?(years?|quarters?)\b",
    re.IGNORECASE,
)
_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_NUMBER_WORDS |= {"eight": 8, "nine": 9, "ten": 10}


def find_quarters(text: str) -> list[int]:
    quarters: list[int] = []
    for match in _QUARTER_PATTERN.finditer(text):
        quarter = int(match.group(1)) if match.group(1) else _QUARTER_WORDS[match.group(2).lower()]
        if quarter not in quarters:
            quarters.append(quarter)
    return quarters


def find_year_range(text: str) -> list[int]:
    """ "2019 through 2023", "from FY2019 to FY2023": every year in between."""
    match = _RANGE_PATTERN.search(text)
    if match is None:
        return []
    first, last = sorted((int(match.group(1)), int(match.group(2))))
    return list(range(first, last + 1)) if last - first < 30 else []


def find_last_n(text: str) -> tuple[int, str] | None:
    """ "last three fiscal years" → (3, "years"), relative to the latest data held."""
    match = _LAST_N_PATTERN.search(text)
    if match is None:
        return None
    raw = match.group(1).lower()
    count = int(raw) if raw.isdigit() else _NUMBER_WORDS[raw]
    return count, "quarters" if match.group(2).lower().startswith("quarter") else "years"


def find_fiscal_years(text: str) -> list[int]:
    years: list[int] = []
    for match in _YEAR_PATTERN.finditer(text):
        raw = match.group("fy") or match.group("year")
        year = int(raw) + 2000 if len(raw) == 2 else int(raw)
        if year not in years:
            years.append(year)
    return years


EXAMPLE_QUESTION = "What was Apple's revenue in fiscal 2023?"


def _metric_examples() -> str:
    return ", ".join(mid_sentence(METRICS_BY_ID[m].label) for m in list(METRICS_BY_ID)[:6])


def capabilities(directory: CompanyDirectory) -> str:
    return (
        "finq answers questions about companies' annual financial figures "
        f"({_metric_examples()} and more), their stock prices and their SEC filings, "
        f"for {directory.describe()}; for example "
        f'"{EXAMPLE_QUESTION}", "AAPL stock price in 2023" or "When did NVIDIA file its 10-K?"'
    )


_PRICE_WORDS = re.compile(
    r"\b(?:stock|share)\s+price|\bprices?\b|\bclos(?:e|ed|ing)\b|\btrad(?:ed|ing)\b"
    r"|\bstock\b|\bquote\b",
    re.IGNORECASE,
)
_FILING_WORDS = re.compile(
    r"\b(?:10-?k|10-?q|8-?k|20-?f|filings?|filed|file|annual reports?|quarterly reports?"
    r"|proxy statements?|def\s?14a)\b",
    re.IGNORECASE,
)
_FORM_PHRASES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b10-?k\b|\bannual reports?\b", re.IGNORECASE), "10-K"),
    (re.compile(r"\b10-?q\b|\bquarterly reports?\b", re.IGNORECASE), "10-Q"),
    (re.compile(r"\b8-?k\b", re.IGNORECASE), "8-K"),
    (re.compile(r"\b20-?f\b", re.IGNORECASE), "20-F"),
    (re.compile(r"\bproxy statements?\b|\bdef\s?14a\b", re.IGNORECASE), "DEF 14A"),
)
_ISO_DATE = re.compile(r"\b((?:19|20)\d{2})-(\d{2})-(\d{2})\b")


# Catalog metrics that a price question names ("share price"): answered from daily prices.
PRICE_METRICS = frozenset({"period_end_price"})


def find_forms(text: str) -> list[str]:
    return [form for pattern, form in _FORM_PHRASES if pattern.search(text)]


def find_dates(text: str) -> list[date]:
    days: list[date] = []
    for match in _ISO_DATE.finditer(text):
        try:
            days.append(date(int(match.group(1)), int(match.group(2)), int(match.group(3))))
        except ValueError:
            continue
    return days


def price_window(text: str, years: list[int]) -> dict[str, date]:
    """The dates a price question covers: explicit dates, else whole calendar years."""
    days = find_dates(text)
    if days:
        return {"start": min(days), "end": max(days)}
    if years:
        return {"start": date(min(years), 1, 1), "end": date(max(years), 12, 31)}
    return {}


def _without_dates(text: str) -> str:
    # A date's year is not a fiscal year the question asks about.
    return _ISO_DATE.sub(" ", text)


def metric_arguments(
    question: str, symbols: list[str], metrics: list[str], years: list[int]
) -> dict[str, Any]:
    """Which periods a metric question asks for: years, a range, quarters, TTM or last N."""
    arguments: dict[str, Any] = {"symbols": symbols, "metrics": metrics}
    quarters = find_quarters(question)
    last_n = find_last_n(question)
    if _TTM_PATTERN.search(question):
        arguments["period"] = "ttm"
    elif quarters or _QUARTERLY_PATTERN.search(question) or (last_n and last_n[1] == "quarters"):
        arguments["period"] = "quarterly"
    if quarters and arguments.get("period") == "quarterly":
        arguments["fiscal_quarters"] = quarters
    year_range = find_year_range(_without_dates(question))
    if year_range:
        arguments["fiscal_years"] = year_range
    elif years:
        arguments["fiscal_years"] = years
    elif last_n is not None:
        arguments["last"] = last_n[0] * (
            4 if arguments.get("period") == "quarterly" and last_n[1] == "years" else 1
        )
    elif arguments.get("period") == "quarterly" and not quarters:
        # "quarterly revenue" with no period: the last four quarters held.
        arguments["last"] = 4
    return arguments


def _plan(
    question: str,
    intent: Intent,
    tool: str,
    arguments: dict[str, Any],
    entities: dict[str, Any],
    directory: CompanyDirectory,
) -> RouteDecided:
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
    return RouteDecided(
        question=question,
        intent=intent,
        tool_calls=[
            ToolCall(tool=tool, arguments=validated.model_dump(mode="json", exclude_none=True))
        ],
        entities=entities,
    )


_GROWTH_WORDS = re.compile(
    r"\b(?:grow|grew|grown|growing|growth|increased?|rise|rose|risen|declined?|fall|fell"
    r"|fallen|drop(?:ped)?|changed?|yoy|year[\s-]+over[\s-]+year)\b",
    re.IGNORECASE,
)
_CAGR_WORDS = re.compile(r"\bcagr\b|\bcompound(?:ed)?\s+annual", re.IGNORECASE)
_COMPARISON_WORDS = re.compile(
    r"\b(?:compare[ds]?|comparison|vs\.?|versus|more|less|higher|lower|bigger|larger"
    r"|smaller|greater|than|which|who)\b",
    re.IGNORECASE,
)
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


_METRIC_LIST_WORDS = re.compile(
    r"\b(?:what|which|list|show|name)\b.*\b(?:metrics|figures|ratios|measures|kpis)\b"
    r"|\b(?:list|show)\s+(?:all\s+|the\s+)?(?:metrics|ratios)\b"
    r"|\bwhat\s+can\s+(?:i|you)\s+ask\b",
    re.IGNORECASE,
)
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


def route_question(
    question: str, directory: CompanyDirectory, finder: MetricFinder | None = None
) -> RouteDecided:
    finder = finder or _catalog_finder(directory)
    symbols = directory.find(question)
    scan = finder.exact(question)
    exact_metrics = scan.metrics
    years = find_fiscal_years(_without_dates(question))
    entities: dict[str, Any] = {
        "symbols": symbols,
        "companies": [
            entry.display_name for s in symbols if (entry := directory.get(s)) is not None
        ],
        "metrics": exact_metrics,
        "fiscal_years": years,
        "named_metrics": exact_metrics,  # named exactly (catalog or learned), before fallbacks
    }

    if _METRIC_LIST_WORDS.search(question) and not (symbols and exact_metrics):
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

    if symbols and _FILING_WORDS.search(question):
        forms = find_forms(question)
        arguments: dict[str, Any] = {"symbol": symbols[0], "forms": forms or None}
        if years:
            arguments["fiscal_year"] = years[0]
        entities["forms"] = forms
        return _plan(question, "filings", GET_RECENT_FILINGS, arguments, entities, directory)

    if symbols and _PRICE_WORDS.search(question) and set(exact_metrics) <= PRICE_METRICS:
        window = price_window(question, years)
        entities["window"] = {k: v.isoformat() for k, v in window.items()}
        return _plan(
            question, "price", GET_PRICES, {"symbol": symbols[0], **window}, entities, directory
        )

    matches: MetricMatches = finder.find(scan)
    span_years = find_year_range(_without_dates(question)) or years
    metrics = growth_metrics(question, matches.metrics, span_years)
    entities["metrics"] = metrics
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
    if matches.unresolved and not metrics:
        entities["unknown_metric_phrases"] = matches.unresolved
    if len(symbols) > 1 and _COMPARISON_WORDS.search(question):
        entities["comparison"] = True

    if symbols and metrics:
        return _plan(
            question,
            "metric_lookup",
            GET_FINANCIAL_METRICS,
            metric_arguments(question, symbols, metrics, years),
            entities,
            directory,
        )

    if metrics and not symbols:
        labels = " and ".join(mid_sentence(METRICS_BY_ID[m].label) for m in metrics)
        clarifying = f"Which company's {labels} do you mean? finq holds {directory.describe()}."
    elif symbols and matches.unresolved:
        clarifying = (
            f"{describe_unknown(matches.unresolved[0], finder.resolver)} "
            "Which of them, or which other figure, do you mean?"
        )
    elif symbols:
        names = " and ".join(
            entry.display_name for s in symbols if (entry := directory.get(s)) is not None
        )
        clarifying = (
            f"Which figure of {names} would you like? For example {_metric_examples()}, "
            "and a fiscal year."
        )
    else:
        clarifying = (
            f"I did not find a company and a financial figure in that. {capabilities(directory)}."
        )
    return RouteDecided(
        question=question,
        intent="clarify",
        clarifying_question=clarifying,
        entities=entities,
    )
