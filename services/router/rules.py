"""Rule-based routing: find the company, the metric and the fiscal year in a question.

Pure functions over precompiled patterns; the company directory is read from
the database once at start and passed in.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Protocol

from rapidfuzz import process
from rapidfuzz.distance import OSA

from services.router.coverage import (
    answer_format_spans,
    changes_basis,
    leftovers,
    locate,
    unread_matters,
)
from services.router.filer_directory import NAME_PART
from services.router.filing_reference import FilingNamed, filing_named
from services.router.fiscal_calendar import FiscalCalendar
from services.router.metric_finding import MetricFinder, MetricMatches, distributed
from services.router.operations import difference_of_parts, read_operation, sum_of_parts
from services.router.periods import (
    Periods,
    date_mentions,
    find_last_n,
    find_periods,
)
from services.router.portfolio_reading import (
    PORTFOLIO_INTENTS,
    followed_up,
    names_only_portfolio_slots,
    portfolio_reading_before,
    read_portfolio,
    speaks_of_own_holdings,
    today_of,
)
from services.router.question_formula import question_formula
from services.router.ratios import ratio_asked
from services.router.spelling import catalog_speller
from shared.contracts.questions import ConversationTurn
from shared.contracts.understanding import (
    AskedOperation,
    CompanyRef,
    DocumentScope,
    MetricRef,
    MetricScope,
    PeriodSelection,
    PortfolioReading,
    PriceWindow,
    RatioAsked,
    RouteSlot,
    TextSpan,
    Understood,
)
from shared.intents import INTENTS
from shared.metric_catalog import METRICS_BY_ID, mid_sentence
from shared.metric_resolver import FORMULA_INDEX, MetricResolver, normalize_phrase

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
# A reply lists every company held up to this many; past it, a few and "many others".
DESCRIBED_IN_FULL = 10
# How many words' nearest company names a directory keeps (a few MB at most).
NEAREST_NAMES_KEPT = 50_000
_POSSESSIVE = re.compile(r"['’]s\b", re.I)


@dataclass(frozen=True)
class CompanyEntry:
    symbol: str
    display_name: str
    names: tuple[str, ...]  # lowercase common and former names: "apple", "google"
    # The latest data held, for "last year" and "last month": read once at router start.
    latest_fiscal_year: int | None = None
    latest_price_day: date | None = None
    tickers: tuple[str, ...] = ()  # every share class's ticker: ("GOOGL", "GOOG")


@dataclass(frozen=True)
class CompanyDirectory:
    """The companies finq holds, with a compiled pattern over their names, and each one's
    fiscal calendar (for periods given as dates)."""

    entries: tuple[CompanyEntry, ...]
    calendars: dict[str, FiscalCalendar] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        by_name: dict[str, str] = {}
        for entry in self.entries:
            for name in entry.names:
                by_name.setdefault(name.lower(), entry.symbol)
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "_by_symbol", {e.symbol: e for e in self.entries})
        # Every share class's ticker names its company: GOOG as well as GOOGL.
        tickers: dict[str, str] = {}
        for entry in self.entries:
            for ticker in (entry.symbol, *entry.tickers):
                tickers.setdefault(ticker.upper(), entry.symbol)
        object.__setattr__(self, "_tickers", tickers)
        # Names by their words, looked up word by word: one alternation of every name was a
        # regular expression that tried each name at each place (48 ms a question at 5,000
        # companies); a dictionary costs the same at 7 and at 10,000.
        by_words: dict[tuple[str, ...], str] = {}
        for name, symbol in by_name.items():
            words = tuple(word.lower() for word in NAME_PART.findall(name))
            if words:
                by_words.setdefault(words, symbol)
        object.__setattr__(self, "_by_words", by_words)
        object.__setattr__(self, "_longest_name", max(map(len, by_words), default=0))
        object.__setattr__(
            self,
            "_one_word_names",
            {
                name: symbol
                for name, symbol in by_name.items()
                if " " not in name and len(name) >= 5
            },
        )
        by_length: dict[int, list[str]] = {}
        for name in self._one_word_names:  # type: ignore[attr-defined]
            by_length.setdefault(len(name), []).append(name)
        object.__setattr__(self, "_one_word_names_by_length", by_length)
        object.__setattr__(self, "_nearest_known", {})

    def calendar(self, symbols: Sequence[str]) -> FiscalCalendar | None:
        """The fiscal calendar of the first company named (periods are asked on it)."""
        return next((self.calendars[s] for s in symbols if s in self.calendars), None)

    def holds_ticker(self, ticker: str) -> bool:
        """Whether any share class of a held company trades under `ticker`."""
        return ticker.upper() in self._tickers  # type: ignore[attr-defined]

    def get(self, symbol: str) -> CompanyEntry | None:
        return self._by_symbol.get(symbol)  # type: ignore[attr-defined]

    def find(self, text: str) -> list[str]:
        """Symbols of the companies a text names, in the order it names them."""
        ordered: list[str] = []
        for _, _, symbol in self.mentions(text):
            if symbol not in ordered:
                ordered.append(symbol)
        return ordered

    def mentions(self, text: str) -> list[tuple[int, int, str]]:
        """Where a text names a company: (start, end, symbol), in order; tickers of every
        share class and names (current and former) count."""
        found: list[tuple[int, int, str]] = []
        tickers: dict[str, str] = self._tickers  # type: ignore[attr-defined]
        for match in _DOLLAR_TICKER.finditer(text):
            symbol = tickers.get(match.group(1).upper())
            if symbol is not None:
                found.append((match.start(), match.end(), symbol))
        for match in _WORD.finditer(text):
            word = match.group(0)
            symbol = tickers.get(word.upper())
            if symbol is None:
                continue
            # Capitals always count; lower case only when it cannot be an ordinary word.
            if word.isupper() or (word.lower() not in TICKER_STOP_WORDS and len(word) >= 3):
                found.append((match.start(), match.end(), symbol))
        found.extend(self._name_mentions(text))
        # At one start the longest name wins: "Apple Computer", not "Apple" and a leftover.
        found.sort(key=lambda mention: (mention[0], -mention[1]))
        kept: list[tuple[int, int, str]] = []
        for start, end, symbol in found:
            if kept and start < kept[-1][1]:
                continue  # "$AAPL" and "AAPL" inside it are one mention
            kept.append((start, end, symbol))
        return kept

    def _name_mentions(self, text: str) -> list[tuple[int, int, str]]:
        """Where the text names a company by name (current or former), the longest name at
        each place, with a possessive's "'s"."""
        by_words: dict[tuple[str, ...], str] = self._by_words  # type: ignore[attr-defined]
        longest: int = self._longest_name  # type: ignore[attr-defined]
        tokens = list(NAME_PART.finditer(text))
        found: list[tuple[int, int, str]] = []
        at = 0
        while at < len(tokens):
            for length in range(min(longest, len(tokens) - at), 0, -1):
                words = tuple(t.group(0).lower() for t in tokens[at : at + length])
                symbol = by_words.get(words)
                if symbol is None:
                    continue
                start, end = tokens[at].start(), tokens[at + length - 1].end()
                if _POSSESSIVE.match(text, end):
                    end += 2
                found.append((start, end, symbol))
                at += length - 1
                break
            at += 1
        return found

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
            nearest = self._nearest_name(lower)
            if nearest is None:
                return word
            corrections[word] = nearest
            return nearest

        corrected = _WORD.sub(fix, text) if names else text
        return corrected, corrections

    def _nearest_name(self, lower: str) -> str | None:
        """The one-word name one edit from `lower` (two from eight letters), or None. The
        answer for a word is kept: questions repeat their words ("revenue", "fiscal"), and
        comparing one with every name of 5,000 companies takes milliseconds."""
        known: dict[str, str | None] = self._nearest_known  # type: ignore[attr-defined]
        if lower in known:
            return known[lower]
        allowed = 2 if len(lower) >= 8 else 1
        by_length: dict[int, list[str]] = self._one_word_names_by_length  # type: ignore[attr-defined]
        nearby = [
            name
            for length in range(len(lower) - allowed, len(lower) + allowed + 1)
            for name in by_length.get(length, ())
        ]
        found = process.extractOne(lower, nearby, scorer=OSA.distance, score_cutoff=allowed)
        nearest = str(found[0]) if found is not None else None
        if len(known) >= NEAREST_NAMES_KEPT:
            known.pop(next(iter(known)))  # the oldest first
        known[lower] = nearest
        return nearest

    def describe(self) -> str:
        """The companies held, in words for a reply: every one of a few; of thousands, a
        few and that there are more (no count: a reply without facts holds no digits)."""
        named = [f"{e.display_name} ({e.symbol})" for e in self.entries[:DESCRIBED_IN_FULL]]
        if len(self.entries) <= DESCRIBED_IN_FULL:
            return ", ".join(named)
        return ", ".join(named) + " and many other companies, by name or ticker"

    @functools.cached_property
    def words(self) -> frozenset[str]:
        """Every word of every company name and ticker, as the metric finder sees them."""
        words: set[str] = set()
        for entry in self.entries:
            for name in (entry.symbol, *entry.tickers, entry.display_name, *entry.names):
                words.update(normalize_phrase(name).split())
        return frozenset(words)


_NO_COMPANIES = CompanyDirectory(())


def metric_finder(
    directory: CompanyDirectory, resolver: MetricResolver | None = None
) -> MetricFinder:
    return MetricFinder(resolver or MetricResolver.from_catalog(), directory.words)


def find_metrics(text: str) -> list[str]:
    """The catalog metrics a text names exactly, in order."""
    return catalog_finder(_NO_COMPANIES).exact(text).metrics


@functools.cache
def catalog_finder(directory: CompanyDirectory) -> MetricFinder:
    """A finder over the catalog alone, for callers that bring no finder of their own."""
    return metric_finder(directory)


EXAMPLE_QUESTION = "What was Apple's revenue last fiscal year?"


def metric_examples() -> str:
    return ", ".join(mid_sentence(METRICS_BY_ID[m].label) for m in list(METRICS_BY_ID)[:6])


@functools.cache
def capabilities(directory: CompanyDirectory) -> str:
    """What finq answers, in words and without digits (a refusal has no facts to check a
    number against)."""
    return (
        "finq answers questions about companies' financial figures "
        f"({metric_examples()} and more), their stock prices and their SEC filings, "
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


def form_words(text: str) -> frozenset[str]:
    """The words the question names its forms with ("proxy", "statements", "10", "k")."""
    return frozenset(
        word
        for pattern, _ in _FORM_PHRASES
        for match in pattern.finditer(text)
        for word in re.findall(r"\w+", match.group().lower())
    )


_GROWTH_WORDS = re.compile(
    r"\b(?:grow|grew|grown|growing|growth|increased?|rise|rose|risen|declined?|fall|fell"
    r"|fallen|drop(?:ped)?|changed?|yoy|year[\s-]+over[\s-]+year"
    r"|doubled?|tripled?|quadrupled?|halved?)\b",
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


# year-over-year growth metric → the figure it is the growth of.
_GROWTH_BASE = {growth: base for base, growth in YOY_GROWTH_OF.items()}


def _balance(metric: str) -> bool:
    """A balance at a day, with no growth figure of its own in the catalog."""
    entry = METRICS_BY_ID.get(metric)
    return (
        entry is not None
        and entry.kind == "instant"
        and metric not in YOY_GROWTH_OF
        and metric not in _GROWTH_BASE  # a growth figure is a change already
    )


def growth_metrics(question: str, metrics: list[str], years: list[int]) -> list[str]:
    """ "How much did revenue grow" asks for revenue growth, "revenue CAGR over the last 5
    years" for the 5-year CAGR; over a range the figures themselves stay beside their growth,
    so the answer shows both what they were and how they moved; between two years named,
    the two figures, whose change the answerer computes."""
    span = find_last_n(question)
    window = span[0] if span and span[1] == "years" else (max(years) - min(years) if years else 0)
    chosen: list[str] = []
    for metric in metrics:
        if metric in _GROWTH_BASE and len(years) == 2:
            # Revenue growth asked between two fiscal years: the change between the two
            # years of the figure it is the growth of, computed with its working.
            metric = _GROWTH_BASE[metric]
        if _CAGR_WORDS.search(question):
            cagr = CAGR_OF.get((metric, window)) or CAGR_OF.get((metric, 3))
            replacement = [cagr] if cagr else [metric]
        elif _GROWTH_WORDS.search(question) and metric in YOY_GROWTH_OF and len(years) == 2:
            # Two years named: the figure of each, and the answerer computes the change
            # between them (years apart or not), with its arithmetic.
            replacement = [metric]
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
    # The filing the question takes its figures from ("as its FY2017 10-K states"), if any.
    filing: FilingNamed | None = None
    # The question's own formula for its one figure ("DPO is defined as: …"), if it gives one.
    formula: str | None = None
    growth: bool = False
    corrections: dict[str, str] = field(default_factory=dict)  # misspelt company names
    slips: dict[str, str] = field(default_factory=dict)  # other misspelt words, put right
    # How each company was written in the question: symbol → text.
    company_texts: dict[str, str] = field(default_factory=dict)
    # Leftover phrases of a figure question: qualifiers of the figure (a segment, a product
    # line, a region) and words nothing read.
    scopes: list[MetricScope] = field(default_factory=list)
    not_understood: list[TextSpan] = field(default_factory=list)
    # Slots a follow-up took from the conversation rather than from this question.
    inherited: list[RouteSlot] = field(default_factory=list)
    inherited_window: PriceWindow | None = None  # a price follow-up's days
    previous_intent: str | None = None  # the kind of question a follow-up continues
    scores: dict[str, float] = field(default_factory=dict)
    spoken_metric: bool = False  # read from a verb ("how much did Tesla make")
    ratio: RatioAsked | None = None  # one figure as a share of another, computed
    operation: AskedOperation | None = None  # arithmetic asked of the figures
    # What a question about the user's own portfolio names (services.router.portfolio_reading),
    # and whether it continues the portfolio question before it.
    portfolio: PortfolioReading | None = None
    portfolio_follow_up: bool = False

    @property
    def ranked(self) -> list[tuple[str, float]]:
        return sorted(self.scores.items(), key=lambda item: -item[1])


# How people ask for a figure without naming it: "how much did Tesla make", "…sell".
_VERB_METRICS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"\bhow much (?:money |profit )?(?:did|does|do) (?P<subject>.+?) (?:make|earn)\b", re.I
        ),
        "net_income",
    ),
    (
        re.compile(
            r"\bhow much (?:did|does|do) (?P<subject>.+?) (?:sell|bring in|take in)\b", re.I
        ),
        "revenue",
    ),
    (re.compile(r"\b(?:earned|earns|made|makes) (?:more|less|the most)\b", re.I), "net_income"),
    (re.compile(r"\b(?:sold|sells) (?:more|less|the most)\b", re.I), "revenue"),
    (re.compile(r"\bhow (?:much )?profitable (?:was|is)\b", re.I), "net_margin"),
    (
        re.compile(r"\bwhat (?:did|does|do) (?P<subject>.+?) (?:make|earn)\b", re.I),
        "net_income",
    ),
    (
        re.compile(
            r"\bhow many (?P<subject>[\w'’.&-]+(?: [\w'’.&-]+)?) shares (?:were|are|was|is)"
            r" outstanding\b",
            re.I,
        ),
        "shares_outstanding",
    ),
    (
        re.compile(r"\bhow many (?:shares|stocks) (?:does|did|do) (?P<subject>.+?) have\b", re.I),
        "shares_outstanding",
    ),
)


_INCLUSIVE_CLAUSE = re.compile(r"\b(?:including|incl\b\.?|inclusive of)\s+[^,.;:?!()]*", re.I)


def understand(question: str, directory: CompanyDirectory, finder: MetricFinder) -> Understanding:
    corrected, corrections = directory.correct(question)
    # Slips of the keyboard are put right before anything is read, so cues, metrics and
    # periods all read the words meant ("earnigns", "recieved"); company names are the
    # directory's to correct, and the question keeps them as written.
    speller = catalog_speller()
    corrected, slips = speller.correct(corrected, keep=directory.words)
    question = speller.apply(question, slips)
    corrected = distributed(corrected, finder.resolver)
    mentions = directory.mentions(corrected)
    symbols: list[str] = []
    company_texts: dict[str, str] = {}
    for start, end, symbol in mentions:
        if symbol not in symbols:
            symbols.append(symbol)
            company_texts[symbol] = corrected[start:end]
    latest = _latest_year(directory, symbols)
    # A figure the question defines ("DPO is defined as: 365 * …"): the definition's figures
    # and years are its formula's, not figures or periods asked.
    defined = question_formula(corrected, finder.resolver)
    defining = [defined.span] if defined is not None else []
    # Read on the corrected text, so every span lines up with the company mentions (a
    # corrected name may be shorter than the misspelling).
    # The question without its definition: what it asks, as opposed to how it defines it.
    asking = _blanked(corrected, defining)
    periods = find_periods(asking, latest, directory.calendar(symbols))
    filing = filing_named(corrected)
    if filing is not None and filing.year_span is not None:
        # The year beside the filing's name is the filing's; the periods asked are the
        # others, when the question names any ("the 2017 10-K's figure for 2016").
        beside = find_periods(
            _blanked(corrected, [filing.year_span, *defining]),
            latest,
            directory.calendar(symbols),
        )
        if beside.spans:
            periods = beside
            periods.spans = sorted([*periods.spans, filing.year_span])
    # What the period grammar read is not a metric phrase: "March" in "the March quarter".
    # How the answer is to be given ("round to one decimal place", "in USD millions") says
    # nothing of which figure: read, and kept from the metric finder.
    formatting = answer_format_spans(corrected)
    read = sorted(
        [
            *((start, end) for start, end, _ in mentions),
            *periods.spans,
            *formatting,
            # "per the 10-K", "on its balance sheet": where the figure is to be read from.
            *(filing.spans if filing is not None else ()),
            *defining,
            # "capital spending, including capitalised software costs": what a
            # figure includes describes it; it never narrows it (as "excluding" would).
            *(match.span() for match in _INCLUSIVE_CLAUSE.finditer(corrected)),
        ]
    )
    scan = finder.exact(_blanked(corrected, [*periods.spans, *formatting, *defining]))
    matches = finder.find(scan)
    spoken_metric = False
    if not matches.metrics:
        spoken = [
            (metric, match)
            for pattern, metric in _VERB_METRICS
            if (match := pattern.search(corrected)) is not None
        ]
        if spoken:
            metric, match = spoken[0]
            # The verb phrase is the metric: its words are read; its subject is read only
            # as far as it names the company ("Google Cloud" is a segment of Google).
            verb = (
                [(match.start(), match.start("subject")), (match.end("subject"), match.end())]
                if "subject" in match.re.groupindex
                else [match.span()]
            )
            read.extend(verb)
            unresolved = [
                rest
                for phrase in matches.unresolved
                if (rest := _words_outside(phrase, corrected, verb))
            ]
            matches = MetricMatches([metric], [], unresolved)
            spoken_metric = True
    names_of = finder.resolver.names_of
    ratio, ratio_spans = ratio_asked(corrected, matches.metrics, names_of)
    read.extend(ratio_spans)
    if ratio is not None and (held := FORMULA_INDEX.get(("/", ratio.numerator, ratio.denominator))):
        # The catalog holds that ratio after all ("each dollar of revenue … net income" is
        # the net margin): ask for it by name.
        matches = MetricMatches([held], matches.resolutions, matches.unresolved)
        ratio = None
    # "Cash" in "total cash returned" and a figure said not to be asked are no parts of a sum.
    meant = _without_negated(corrected, _without_bare_cash(corrected, matches.metrics), names_of)
    whole, sum_spans = sum_of_parts(corrected, meant)
    if whole is None:
        whole, sum_spans = difference_of_parts(corrected, meant)
    if whole is not None:
        read.extend(sum_spans)
        matches = MetricMatches([whole], matches.resolutions, matches.unresolved)
    explained = _without_negated(
        corrected,
        _without_bare_cash(
            corrected,
            _without_explained_inputs(
                corrected, matches.metrics, finder.resolver.phrases, names_of
            ),
        ),
        names_of,
    )
    if explained != matches.metrics:
        if (marker := _EXPLAINED.search(corrected)) is not None:
            # The words that combine its inputs ("operating cash flow minus capex") are
            # part of the explanation, read with it.
            read.extend(
                (marker.start() + m.start(), marker.start() + m.end())
                for m in _COMBINING.finditer(corrected[marker.start() :])
            )
        matches = MetricMatches(explained, matches.resolutions, matches.unresolved)
    metrics = (
        # A quarter against the matching quarter of the prior year: both quarters are fetched and
        # the answerer computes the change (quarterly growth is not a stored figure).
        list(dict.fromkeys(_GROWTH_BASE.get(m, m) for m in matches.metrics))
        if periods.same_quarter_last_year
        else growth_metrics(asking, matches.metrics, periods.fiscal_years)
    )
    if (
        _GROWTH_WORDS.search(asking)
        and len(periods.fiscal_years) == 1
        and periods.period in (None, "annual")
        and not periods.fiscal_quarters
        and metrics
        and all(_balance(metric) for metric in metrics)
    ):
        # A balance has no growth of its own: how it moved in a year ("did its debt rise in
        # 2023?") is the balance at that year's end against the year before's.
        year = periods.fiscal_years[0]
        periods.fiscal_years, periods.spans_several = [year - 1, year], True
    # A figure and its growth are one figure to compute with ("revenue" and "revenue growth").
    figures = len({_GROWTH_BASE.get(metric, metric) for metric in metrics})
    operation, operation_spans = read_operation(
        corrected, len(symbols), _periods_asked(periods), figures
    )
    read.extend(operation_spans)
    if _CAGR_WORDS.search(question) and periods.last and periods.period in (None, "annual"):
        # "CAGR over the last five years" is one figure: the latest five-year CAGR.
        periods.last, periods.spans_several = 1, False
    scopes, not_understood = leftovers(
        matches.unresolved,
        corrected,
        read,
        [(start, end) for start, end, _ in mentions],
        definitions=[METRICS_BY_ID[m].description for m in matches.metrics],
        categories=[METRICS_BY_ID[m].category for m in matches.metrics],
        vocabulary=finder.resolver.vocabulary if matches.metrics else frozenset(),
    )
    if matches.metrics and not_understood:
        named_at = [
            (span.start, span.end)
            for phrase in [*scan.phrases, *(r.phrase for r in matches.resolutions)]
            if (span := locate(phrase, corrected)).end
        ]
        not_understood = _that_matter(
            not_understood, corrected, named_at, metrics, symbols, periods, ratio, operation
        )
    if not_understood and _glossed(corrected, metrics, finder.resolver.phrases):
        # "what Apple owed its suppliers (accounts payable)": the user named the figure
        # in their own gloss, so their other words describe it; a basis word still stands.
        not_understood = [
            span
            for span in not_understood
            if changes_basis(span.text) or any(c.isdigit() for c in span.text)
        ]
    if metrics:
        not_understood = sorted(
            [*not_understood, *_asked_otherwise(corrected, metrics, read, periods.spans)],
            key=lambda span: span.start,
        )
    if not matches.metrics:
        # No figure: what is left is the topic asked about ("holders of record"), or a
        # figure the catalog does not name; a qualifier qualifies nothing.
        not_understood = sorted(
            [*not_understood, *(locate(scope.text, corrected, read) for scope in scopes)],
            key=lambda span: span.start,
        )
        scopes = []
    return Understanding(
        question=question,
        symbols=symbols,
        metrics=metrics,
        named_metrics=scan.metrics,
        matches=matches,
        periods=periods,
        forms=find_forms(question),
        filing=filing,
        formula=defined.formula if defined is not None and len(metrics) == 1 else None,
        growth=metrics != matches.metrics
        or bool(_GROWTH_WORDS.search(asking))
        or (operation is not None and operation.kind == "change"),
        corrections=corrections,
        slips=slips,
        company_texts=company_texts,
        scopes=scopes,
        not_understood=not_understood,
        spoken_metric=spoken_metric,
        ratio=ratio,
        operation=operation,
        portfolio=read_portfolio(
            corrected,
            today_of(entry.latest_price_day for entry in directory.entries),
            metrics=matches.metrics,
            company_spans=[(start, end) for start, end, _ in mentions],
        ),
    )


def _that_matter(
    unread: list[TextSpan],
    question: str,
    named_at: Sequence[tuple[int, int]],
    metrics: Sequence[str],
    symbols: Sequence[str],
    periods: Periods,
    ratio: RatioAsked | None = None,
    operation: AskedOperation | None = None,
) -> list[TextSpan]:
    """The unread spans of a figure question that change what it asks
    (coverage.unread_matters), weighed on the reading: the figures' units (a percent the
    arithmetic asked for counts as one), and whether it compares companies or periods."""
    units = frozenset(METRICS_BY_ID[m].unit for m in metrics if m in METRICS_BY_ID)
    if ratio is not None or (operation is not None and operation.as_percent):
        units |= {"%"}
    compared = len(symbols) > 1 or _periods_asked(periods) > 1 or operation is not None
    return [span for span in unread if unread_matters(span, question, named_at, units, compared)]


def _periods_asked(periods: Periods) -> int:
    """How many periods a question names: fiscal years, times quarters when it asks for
    quarters."""
    years = len(periods.fiscal_years)
    return years * len(periods.fiscal_quarters) if periods.fiscal_quarters else years


def _asked_otherwise(
    question: str,
    metrics: list[str],
    read: Sequence[tuple[int, int]],
    period_spans: Sequence[tuple[int, int]],
) -> list[TextSpan]:
    """The words that ask for the figures another way than finq holds them, as spans nothing
    read: money moving asked of a balance ("spending on property and equipment", "cash
    Apple generated": a flow the balance does not measure); a day or year the period
    grammar did not read (the figure would be another period's); a count asked of dollar
    figures ("how many shares did Apple repurchase", "how many times")."""
    found: list[TextSpan] = []
    if all(METRICS_BY_ID[m].kind == "instant" for m in metrics):
        found += _spans_outside(_FLOW_VERBS.finditer(question), read)
    found += [
        TextSpan(text=question[start:end], start=start, end=end)
        for start, end in date_mentions(question)
        if not any(s <= start < e for s, e in period_spans)
    ]
    if all(METRICS_BY_ID[m].unit == "USD" for m in metrics):
        found += _spans_outside(_COUNT_ASKED.finditer(question), (), first_only=True)
    return found


def _spans_outside(
    matches: Iterable[re.Match[str]], read: Sequence[tuple[int, int]], first_only: bool = False
) -> list[TextSpan]:
    spans = [
        TextSpan(text=match.group(), start=match.start(), end=match.end())
        for match in matches
        if not any(start <= match.start() < end for start, end in read)
    ]
    return spans[:1] if first_only else spans


# How a question explains the figure it names: "free cash flow (operating cash flow less
# capex)", "R&D intensity - R&D over sales", "leverage, measured as …".
_EXPLAINED = re.compile(
    r"\(|\s[-–—:]\s|:\s|\bi\.e\.|\bthat is\b"
    # "FCF as operating cash flow less capital spending" ("as of", "as reported" name a
    # day or a source, not what the figure is).
    r"|\bas\s+(?!of\b|at\b|reported\b|stated\b|filed\b|shown\b|per\b|a\s+(?:percent|%|share))",
    re.IGNORECASE,
)


# The words of arithmetic between a figure's inputs.
_COMBINING = re.compile(
    r"\b(?:minus|plus|less|divided by|over|times|multiplied by|subtract\w*|add)\b|[+−/×÷]", re.I
)


def _without_explained_inputs(
    question: str,
    metrics: list[str],
    phrases: Mapping[str, str],
    names_of: Mapping[str, Sequence[str]],
) -> list[str]:
    """A derived figure explained by its own inputs ("free cash flow (operating cash flow
    less capex)"), or its inputs glossed by its name ("how many cents of each dollar of
    revenue did Tesla keep as net profit (net margin)"), asks for that figure alone: the
    other figures are how the user says what they mean."""
    marker = _EXPLAINED.search(question)
    if len(metrics) < 2 or marker is None:
        return metrics
    first = METRICS_BY_ID[metrics[0]]
    explanation = f" {normalize_phrase(question[marker.start() :])} "
    if (
        first.derived
        and set(metrics[1:]) <= set(first.inputs)
        and all(_named_in(explanation, metric, names_of) for metric in metrics[1:])
        and not _named_in(explanation, first.id, names_of)
    ):
        return metrics[:1]
    for inner in _PARENTHESIS.finditer(question):
        glossed = METRICS_BY_ID.get(phrases.get(normalize_phrase(inner.group(1)), ""))
        if (
            glossed is not None
            and glossed.derived
            and glossed.id in metrics
            and {m for m in metrics if m != glossed.id} <= set(glossed.inputs)
        ):
            return [glossed.id]
    return metrics


def _named_in(text: str, metric: str, names_of: Mapping[str, Sequence[str]]) -> bool:
    """Whether normalized `text` (spaces around it) names the metric by a catalog name."""
    return any(f" {phrase} " in text for phrase in names_of.get(metric, ()))


_PARENTHESIS = re.compile(r"\(([^()]{2,60})\)")


def _glossed(question: str, metrics: list[str], phrases: Mapping[str, str]) -> bool:
    """Whether the question names its one figure again in parentheses, by a catalog name."""
    if len(metrics) != 1:
        return False
    return any(
        phrases.get(normalize_phrase(inner.group(1))) == metrics[0]
        for inner in _PARENTHESIS.finditer(question)
    )


# Cash named as the balance, not as the money a flow moved.
_CASH_BALANCE = re.compile(
    r"\bcash (?:and (?:cash )?equivalents|balance|on hand|pile|position|holdings?)\b"
    r"|\bcash and short[\s-]term\b",
    re.IGNORECASE,
)


_NEGATED = re.compile(r"\b(?:not|excluding|except|without|rather than)\s+(?:the\s+|its\s+)?$", re.I)


def _without_negated(
    question: str, metrics: list[str], names_of: Mapping[str, Sequence[str]]
) -> list[str]:
    """ "Just cash and equivalents, not the marketable securities", "cash taxes, not the
    provision": a figure named only to be set aside is not asked for."""
    if len(metrics) < 2:
        return metrics
    normalized = normalize_phrase(question)
    kept = []
    for metric in metrics:
        spots = [
            m.start()
            for name in names_of.get(metric, ())
            for m in re.finditer(rf"\b{re.escape(name)}\b", normalized)
        ]
        if spots and all(_NEGATED.search(normalized[:spot]) for spot in spots):
            continue
        kept.append(metric)
    return kept or metrics


def _without_bare_cash(question: str, metrics: list[str]) -> list[str]:
    """ "How much cash went into buying back Apple's stock", "cash paid in taxes",
    "as its statement of cash flows shows": beside a cash flow figure, the bare word "cash" is the
    money that flow moved, not the cash balance, unless the question names the balance."""
    flows = [m for m in metrics if METRICS_BY_ID[m].category in {"cash_flow", "capital_returns"}]
    if "cash_and_equivalents" not in metrics or not flows or _CASH_BALANCE.search(question):
        return metrics
    return [m for m in metrics if m != "cash_and_equivalents"]


_COUNT_ASKED = re.compile(
    # "How many more", "how many percent", "how many times" ask for an amount's change, a
    # rate or a multiple: arithmetic, no count.
    r"\bhow many\s+(?!(?:dollars?|usd|billions?|millions?|thousands?|more|fewer|less|percent\w*"
    r"|times|x)\b)[a-z]+",
    re.IGNORECASE,
)
# Verbs of money moving over a period, which no balance (an instant) answers.
_FLOW_VERBS = re.compile(
    r"\b(?:spen[dt]\w*|pa(?:y|id|ying|yments?)|generat\w*|earn\w*|brought|bring\w*"
    r"|invest(?:ed|ing|s)?|raise[ds]?|raising)\b",
    re.IGNORECASE,
)


def _words_outside(phrase: str, text: str, spans: Sequence[tuple[int, int]]) -> str:
    """The words of a (normalized) phrase that stand outside the `spans` of the text."""
    kept = [
        word
        for word in phrase.split()
        if not any(start <= locate(word, text).start < end for start, end in spans)
    ]
    return " ".join(kept)


def _blanked(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """The text with the spans blanked out (same length, so offsets hold)."""
    for start, end in spans:
        text = text[:start] + " " * (end - start) + text[end:]
    return text


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
    if figures and understanding.filing is not None:
        # A figure "per the 10-K" names the filing as its source: the figure is asked, not
        # which filings there are or when they were filed.
        scores["filings"] -= 2.0
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
    if speaks_of_own_holdings(question) and scores["out_of_scope"] <= 0:
        # The user's own holdings: a company or figure named beside them is a holding or a
        # screen of the holdings, not a company's figure or price. (Advice asked about a
        # holding, "should I sell my Tesla shares?", is still advice.)
        for intent in PORTFOLIO_INTENTS:
            if scores[intent] > 0:
                scores[intent] += 1.5
        for intent in (*METRIC_INTENTS, "price"):
            scores[intent] -= 3.0
        reading = understanding.portfolio
        if figures and not symbols and reading is not None and reading.condition:
            # "Which of my holdings had falling revenue": a figure with a condition, asked
            # of the companies the user holds.
            scores["portfolio_screen"] += 3.0
    if understanding.portfolio_follow_up and understanding.previous_intent in PORTFOLIO_INTENTS:
        # A portfolio follow-up ("and in my IRA?", "what about last year?") stays the kind of
        # question it follows unless its own words ask for another.
        previous = understanding.previous_intent
        scores[previous] = max(scores[previous], 0.0) + 3.0
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
    before = previous.understood
    if before is None or previous.intent in {"out_of_scope", "definition", "list_metrics"}:
        return
    pending = previous.needs_clarification
    question = understanding.question
    # Words that refer to the turn before: its figure, its period, a year back from it.
    refers_back = bool(
        _THAT_PERIOD.search(question)
        or (_THAT_FIGURE.search(question) and _PART_OF_WORDS.search(question))
        or (understanding.periods.shift and _COMPARED_WITH.search(question))
        or understanding.periods.same_quarter_last_year
    )
    follow_up = (
        pending
        or refers_back
        or _FOLLOW_UP_OPENING.search(question) is not None
        or _PRONOUN.search(question) is not None
        or (
            not _DEFINITION_SHAPED.search(question)
            and (not understanding.symbols or not understanding.metrics)
        )
    )
    if not follow_up:
        return
    portfolio_before = portfolio_reading_before(previous)
    if (
        portfolio_before is not None
        and understanding.portfolio is not None
        and (
            pending
            or _FOLLOW_UP_OPENING.search(question)
            or _PRONOUN.search(question)
            or (
                not understanding.metrics
                and names_only_portfolio_slots(understanding.portfolio, question)
            )
        )
    ):
        # "And in my IRA?", "what about last year?", "and MSFT?": the portfolio question
        # before, with only what this one names put in place.
        understanding.portfolio = followed_up(portfolio_before, understanding.portfolio)
        understanding.portfolio_follow_up = True
        understanding.previous_intent = (
            previous.intent if previous.intent in PORTFOLIO_INTENTS else before.pending_intent
        )
    # A question complete in itself: only an unnamed period carries over ("And Apple's net
    # income?" after a question about fiscal 2022).
    if (
        understanding.symbols
        and understanding.metrics
        and not pending
        and not (_FOLLOW_UP_OPENING.search(question) and not understanding.periods.named)
        and not refers_back
    ):
        return
    if not understanding.symbols and before.companies:
        understanding.symbols = list(before.symbols)
        understanding.company_texts = {c.symbol: c.text for c in before.companies}
        understanding.inherited.append("companies")
        if understanding.periods.asked:
            # "And as of December 28, 2024?": a date is read on the inherited company's
            # fiscal calendar, not on calendar years.
            understanding.periods = find_periods(
                question,
                _latest_year(directory, understanding.symbols),
                directory.calendar(understanding.symbols),
            )
    _refer_back(understanding, before)
    if not understanding.metrics and before.metrics:
        understanding.metrics = list(before.metric_ids)
        understanding.scopes = [scope for m in before.metrics for scope in m.scope]
        understanding.inherited.append("metrics")
    periods = understanding.periods
    earlier = before.periods
    if earlier.window is not None and not periods.named:
        understanding.inherited_window = earlier.window
        understanding.inherited.append("window")
    if periods.shift:
        years = earlier.fiscal_years or (
            [latest]
            if (latest := _latest_year(directory, understanding.symbols)) is not None
            else []
        )
        if years:
            periods.fiscal_years = [year + periods.shift for year in years]
            periods.last = None
            periods.period = periods.period or earlier.period_type
            periods.fiscal_quarters = periods.fiscal_quarters or list(earlier.fiscal_quarters)
            understanding.inherited.append("periods")
    elif periods.named and earlier.named:
        # "and Q2?" keeps the fiscal year; "what about 2024?" after a quarter keeps the quarter.
        if periods.fiscal_quarters and not periods.fiscal_years and not periods.last:
            periods.fiscal_years = list(earlier.fiscal_years)
            understanding.inherited.append("periods")
        elif periods.fiscal_years and not periods.period and earlier.fiscal_quarters:
            periods.period = earlier.period_type
            periods.fiscal_quarters = list(earlier.fiscal_quarters)
            understanding.inherited.append("periods")
    elif not periods.named and earlier.named:
        periods.fiscal_years = list(earlier.fiscal_years)
        periods.fiscal_quarters = list(earlier.fiscal_quarters)
        periods.period = earlier.period_type
        periods.last = earlier.last
        periods.spans_several = earlier.spans_several
        periods.months_to_date = earlier.months_to_date
        periods.asked = list(earlier.asked)
        understanding.inherited.append("periods")
    if not understanding.forms and before.documents.forms:
        understanding.forms = list(before.documents.forms)
        understanding.inherited.append("forms")
    if "metrics" in understanding.inherited and understanding.not_understood:
        # The figure came from the conversation: this question's own words are weighed as
        # any figure question's are (coverage.unread_matters), on the completed reading.
        understanding.not_understood = _that_matter(
            understanding.not_understood,
            question,
            (),
            understanding.metrics,
            understanding.symbols,
            understanding.periods,
        )
    if previous.intent and understanding.inherited:
        # The turn before sets the kind of question unless this one says otherwise (a reply
        # to a clarifying question about the portfolio continues what was asked).
        understanding.previous_intent = understanding.previous_intent or previous.intent


# A figure or a period of the turn before, referred to rather than named.
_THAT_FIGURE = re.compile(r"\b(?:that|this|it|that figure|that number|that amount)\b", re.I)
_THAT_PERIOD = re.compile(
    r"\b(?:that|this|the same) (?:quarter|year|fiscal year|period)\b(?! (?:a|one) year)", re.I
)
# One figure as a part of another: "as a percentage of", "what share of", "relative to".
_PART_OF_WORDS = re.compile(
    r"\b(?:percent(?:age)?|share|proportion|portion|fraction|relative|ratio)\b|%", re.I
)
_COMPARED_WITH = re.compile(r"\b(?:compar\w*|versus|vs|against|relative to)\b", re.I)


def _refer_back(understanding: Understanding, before: Understood) -> None:
    """What a follow-up takes from the turn before by referring to it: the figure it was
    about as one part of the figure this one names ("and that relative to sales?"), its
    period ("operating margin for that period"), the matching quarter of the prior year, or
    the year before beside it ("that versus a year earlier")."""
    question = understanding.question
    periods, earlier = understanding.periods, before.periods
    if (
        before.metrics
        and len(understanding.metrics) == 1
        and understanding.metrics[0] not in before.metric_ids
        and _THAT_FIGURE.search(question)
        and _PART_OF_WORDS.search(question)
    ):
        part, whole = before.metric_ids[0], understanding.metrics[0]
        held = FORMULA_INDEX.get(("/", part, whole))
        understanding.metrics = [held] if held else [part, whole]
        if not held:
            understanding.ratio = RatioAsked(numerator=part, denominator=whole, text=question)
        understanding.not_understood = [
            span for span in understanding.not_understood if not _PART_OF_WORDS.search(span.text)
        ]
        understanding.inherited.append("metrics")
    if _THAT_PERIOD.search(question) and earlier.named and not periods.fiscal_years:
        periods.fiscal_years = list(earlier.fiscal_years)
        periods.fiscal_quarters = list(earlier.fiscal_quarters)
        periods.period = earlier.period_type
        periods.last, periods.spans_several = None, False
        understanding.inherited.append("periods")
    elif periods.same_quarter_last_year and not periods.fiscal_years and earlier.fiscal_quarters:
        # The matching quarter of the prior year: the quarter asked before, a year back.
        periods.fiscal_years = [year - 1 for year in earlier.fiscal_years]
        periods.fiscal_quarters = list(earlier.fiscal_quarters)
        periods.period = "quarterly"
        periods.same_quarter_last_year = periods.spans_several = False
        periods.last = None
        understanding.inherited.append("periods")
    elif periods.shift and _COMPARED_WITH.search(question) and earlier.fiscal_years:
        # Compared with the year before: both years, the one asked before and the one moved to.
        years = earlier.fiscal_years
        periods.fiscal_years = sorted({*years, *(year + periods.shift for year in years)})
        periods.shift = 0
        periods.period = periods.period or earlier.period_type
        periods.fiscal_quarters = periods.fiscal_quarters or list(earlier.fiscal_quarters)
        periods.spans_several = True
        understanding.inherited.append("periods")


def understood_of(understanding: Understanding, directory: CompanyDirectory) -> Understood:
    """What the router read, as the typed route carries it to every later stage."""
    periods = understanding.periods
    corrected_from = {name: written for written, name in understanding.corrections.items()}
    companies = []
    for symbol in understanding.symbols:
        entry = directory.get(symbol)
        name = entry.display_name if entry is not None else symbol
        text = understanding.company_texts.get(symbol, symbol)
        companies.append(
            CompanyRef(
                symbol=symbol,
                name=name,
                text=text,
                corrected_from=corrected_from.get(text.lower().removesuffix("'s")),
            )
        )
    resolutions = {r.metric_id: r for r in understanding.matches.resolutions}
    metrics = []
    for metric_id in understanding.metrics:
        resolution = resolutions.get(metric_id)
        if "metrics" in understanding.inherited:
            ref = MetricRef(id=metric_id, method="conversation")
        elif resolution is not None:
            # As the user wrote it where it can be found: the resolver's phrase is normalized.
            written = locate(resolution.phrase, understanding.question)
            ref = MetricRef(
                id=metric_id,
                text=written.text if written.end else resolution.phrase,
                method=resolution.method,
                confidence=min(1.0, max(0.0, resolution.confidence)),
            )
        else:
            ref = MetricRef(
                id=metric_id, method="spoken" if understanding.spoken_metric else "exact"
            )
        metrics.append(ref)
    if metrics and understanding.scopes:
        # A qualifier narrows the figure it stands with; with several figures, each of them.
        metrics = [m.model_copy(update={"scope": list(understanding.scopes)}) for m in metrics]
    return Understood(
        companies=companies,
        metrics=metrics,
        slips=dict(understanding.slips),
        periods=PeriodSelection(
            period_type=periods.period,
            fiscal_years=list(periods.fiscal_years),
            fiscal_quarters=list(periods.fiscal_quarters),
            last=periods.last,
            shift=periods.shift,
            spans_several=periods.spans_several,
            months_to_date=periods.months_to_date,
            same_quarter_last_year=periods.same_quarter_last_year,
            asked=list(periods.asked),
            window=understanding.inherited_window,
        ),
        documents=DocumentScope(symbols=list(understanding.symbols), forms=understanding.forms),
        not_understood=list(understanding.not_understood),
        unknown_metric_phrases=(
            list(understanding.matches.unresolved) if not understanding.metrics else []
        ),
        named_metrics=list(understanding.named_metrics),
        inherited=list(understanding.inherited),
        growth=understanding.growth,
        ratio=understanding.ratio,
        operation=understanding.operation,
        scores={k: round(v, 2) for k, v in understanding.ranked[:3] if v > 0},
    )
