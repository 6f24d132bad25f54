"""Rule-based routing: find the company, the metric and the fiscal year in a question.

Pure functions over precompiled patterns; the company directory is read from
the database once at start and passed in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import ValidationError

from shared.contracts import RouteDecided, ToolCall
from shared.metric_catalog import METRICS_BY_ID, PHRASE_INDEX, mid_sentence, normalize_metric_phrase
from shared.tool_schemas import GET_FINANCIAL_METRICS, GetFinancialMetricsArgs

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

# Longest phrases first, so "operating cash flow" wins over "cash".
_METRIC_PATTERN = re.compile(
    r"\b("
    + "|".join(re.escape(p) for p in sorted(PHRASE_INDEX, key=len, reverse=True) if p)
    + r")\b"
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


def find_metrics(text: str) -> list[str]:
    ordered: list[str] = []
    for match in _METRIC_PATTERN.finditer(normalize_metric_phrase(text)):
        metric = PHRASE_INDEX[match.group(1)].id
        if metric not in ordered:
            ordered.append(metric)
    return ordered


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
        f"({_metric_examples()} and more) for {directory.describe()}, "
        f'for example "{EXAMPLE_QUESTION}"'
    )


def route_question(question: str, directory: CompanyDirectory) -> RouteDecided:
    symbols = directory.find(question)
    metrics = find_metrics(question)
    years = find_fiscal_years(question)
    entities = {"symbols": symbols, "metrics": metrics, "fiscal_years": years}

    if symbols and metrics:
        try:
            arguments = GetFinancialMetricsArgs(
                symbols=symbols, metrics=metrics, fiscal_years=years or None
            )
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
            intent="metric_lookup",
            tool_calls=[
                ToolCall(
                    tool=GET_FINANCIAL_METRICS,
                    arguments=arguments.model_dump(exclude_none=True),
                )
            ],
            entities=entities,
        )

    if metrics and not symbols:
        labels = " and ".join(mid_sentence(METRICS_BY_ID[m].label) for m in metrics)
        clarifying = f"Which company's {labels} do you mean? finq holds {directory.describe()}."
    elif symbols and not metrics:
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
