"""Metric phrases to catalog ids: exact names first, then learned aliases, then fuzzy and
embedding fallbacks, each with its own threshold.

Both sides of every comparison go through `normalize_phrase`, so "P/E", "p.e. ratio" and
"price-earnings ratios" meet the catalog's "pe ratio" exactly, "net cash provided by (used
in) operating activities" and "cash from operations" meet "operating cash flow", and fuzzy
matching only has to absorb real slips ("reveune", "opearting margin"). Phrases built the
way a catalog formula is ("R&D as a percentage of revenue", "what share of revenue went to
R&D", "operating cash flow minus capex") are read through the formula index. The
embedding fallback (the bundled all-MiniLM-L6-v2) catches paraphrases no edit distance can
("money spent on research"); it is the least certain step, so it needs a high similarity
and a clear lead over the next metric.

The result always says how it was reached, so callers can tell the user what they assumed
and record phrases that only a fallback understood (`alias_misses`, see
`shared.metric_aliases`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

from shared.metric_catalog import CATALOG, METRICS_BY_ID, Metric

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

ResolutionMethod = Literal["exact", "learned", "composed", "fuzzy", "embedding"]

# Fuzzy matching counts typing slips: optimal-string-alignment edits, where swapping two
# neighbours ("reveune") is one edit. A phrase may have one slip up to 7 characters, two
# up to 15 and three beyond; more than that is a different phrase, not a typo.
FUZZY_EDITS_BY_LENGTH: tuple[tuple[int, int], ...] = ((7, 1), (15, 2), (1000, 3))
# Short phrases are mostly acronyms, where one letter is another metric (ROE/ROA, P/E, P/S):
# below this length only exact names count.
FUZZY_MIN_LENGTH = 5
# Cosine similarity of normalized MiniLM embeddings. Right paraphrases score 0.8 and more
# ("money spent on research" → R&D 0.88, "debt load" → total debt 0.83), while a phrase
# that is no metric at all can still reach 0.73 ("market share" → market cap); the lead
# over the next metric keeps a coin toss between two metrics from counting as an answer.
EMBEDDING_THRESHOLD = 0.78
EMBEDDING_MIN_LEAD = 0.04

_STOP_WORDS = frozenset(
    {"the", "a", "an", "of", "its", "their", "company", "companys", "firm", "firms", "for"}
)
# Words whose trailing s is not a plural.
_NOT_PLURAL = frozenset(
    {"sales", "earnings", "gross", "loss", "basis", "analysis", "plus", "less", "days", "news"}
)
# "P/E", "p.e.", "SG&A": initials joined by a slash, a dot or an ampersand become one
# word ("pe", "sga") before other punctuation goes; so do two single letters written apart
# ("p e", "r and d"). Only single letters join across a space, so "is a" stays two words.
_JOINED_INITIALS = re.compile(r"\b([a-z]{1,2})\s*[/.&]\s*([a-z])\b\.?")
_SPACED_INITIALS = re.compile(r"\b([a-z])\s+(?:and\s+)?([a-z])\b(?!\.?[a-z])")
_SLASH = re.compile(r"\s*/\s*")
_NON_WORD = re.compile(r"[^a-z0-9 ]+")
_SPACES = re.compile(r"\s+")


def _singular(word: str) -> str:
    if len(word) <= 3 or word in _NOT_PLURAL or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


# Shorthand people write for the words of metric names, spelled out on both sides before
# matching: "OCF", "LT debt", "A/R", "wtd avg shs". Only shorthand that means one thing in
# a financial question is here ("EV" is left alone: at Tesla it is a car).
_ABBREVIATIONS: dict[str, str] = {
    "ocf": "operating cash flow",
    "fcf": "free cash flow",
    "cf": "cash flow",
    "lt": "long term",
    "st": "short term",
    "ar": "accounts receivable",
    "ap": "accounts payable",
    "de": "debt to equity",
    "nd": "net debt",
    "nwc": "net working capital",
    "tbv": "tangible book value",
    "bv": "book value",
    "bvps": "book value per share",
    "div": "dividend",
    "avg": "average",
    "wtd": "weighted",
    "shs": "shares",
    "comp": "compensation",
    "sbc": "stock based compensation",
    "admin": "administrative",
    "ga": "general and administrative",
    "sm": "sales and marketing",
    "da": "depreciation and amortization",
    "ppe": "property plant and equipment",
    "cogs": "cost of goods sold",
    "pct": "percent",
    "percentage": "percent",
    "yoy": "year over year",
    "mkt": "market",
    "rev": "revenue",
    "revs": "revenue",
    "inc": "income",
    "op": "operating",
    "oper": "operating",
    "int": "interest",
    "exp": "expense",
    "eq": "equity",
    "mktg": "marketing",
    "opex": "operating expenses",
    "capex": "capital expenditures",
    "roic": "return on invested capital",
}


# "pre-tax", "pre tax" and "pretax" are one word, as are "non-current" and "noncurrent".
_PREFIX = re.compile(r"\b(pre|non)[\s-]+(?=[a-z])")


def _words(text: str) -> list[str]:
    text = text.lower().replace("’", "'").replace("'s ", " ").replace("'", "")
    text = _PREFIX.sub(r"\1", text)
    text = text.replace("_", " ")
    previous = None
    while previous != text:  # "s.g.&a." joins pairwise: s.g → sg, sg&a → sga
        previous = text
        text = _SPACED_INITIALS.sub(r"\1\2", _JOINED_INITIALS.sub(r"\1\2", text))
    text = _SLASH.sub(" to ", text).replace("&", " and ").replace("%", " percent ")
    return _SPACES.sub(" ", _NON_WORD.sub(" ", text)).split()


# The cash flow statement's three totals, however filings and people word them: "net cash
# provided by (used in) operating activities", "cash generated from operations", "cash
# used for investing", "cash flows from financing activities", "net cash outflow from
# investing". Read on normalized words (so "for" and "of" are gone and "activities" is
# "activity"); each becomes "<kind> cash flow", so the words compose with anything
# around them ("… margin", "price to …") and "cash" alone never takes the phrase's first
# word. "Free cash flow from operations" is left alone: free cash flow is another metric.
_CASH_FLOW_VERBS = (
    "provided|generated|used|produced|received|spent|earned"
    "|provide|generate|use|produce|receive|spend|earn"
)
_CASH_FLOW_PHRASE = re.compile(
    r"(?<![a-z0-9])(?<!free )(?:net )?cash(?P<flow> (?:in|out)?flow)?"
    # A question may put its subject between: "how much cash did Tesla use for investing".
    r"(?P<subject> (?:did|does|do|has|have|had)(?: [a-z0-9]+){0,2}?"
    rf"(?= (?:{_CASH_FLOW_VERBS}) ))?"
    rf"(?P<verbs>(?: (?:{_CASH_FLOW_VERBS}|was|were|is|are|been|from|by|in|on))*)"
    r" (?:(?:continuing|core|ongoing|business|core business) )?"
    r"(?P<kind>operating|operation|ops|investing|financing)"
    r"(?: activ[a-z]*)?(?![a-z0-9])"
)
# The same with the activity as the subject: "how much cash did Alphabet's operations
# generate", "cash the operating activities provided".
_CASH_FLOW_SUBJECT = re.compile(
    r"(?<![a-z0-9])(?<!free )cash"
    r"(?P<subject> (?:did|does|do|has|have|had)(?: [a-z0-9]+){0,2}?)?"
    r" (?:(?:continuing|core|ongoing|business|core business) )?"
    r"(?P<kind>operating|operation|ops|investing|financing)(?: activ[a-z]*)?"
    rf" (?:{_CASH_FLOW_VERBS})(?![a-z0-9])"
)
_CASH_FLOW_KINDS = {"operation": "operating", "ops": "operating"}


def _cash_flow_name(match: re.Match[str]) -> str:
    # "cash operating" names nothing: a flow word or a verb must join cash to its activity.
    if not match.group("flow") and not match.group("verbs"):
        return match.group(0)
    return _cash_flow_words(match)


def _cash_flow_words(match: re.Match[str]) -> str:
    kind = match.group("kind")
    subject = f"{match.group('subject').strip()} " if match.group("subject") else ""
    return f"{subject}{_CASH_FLOW_KINDS.get(kind, kind)} cash flow"


# "How many times did Tesla turn over its inventory" asks for its inventory turnover.
_TURNED_OVER = re.compile(r"\bturn(?:s|ed|ing)? over (?P<what>[a-z]+)")


_ON_AVERAGE = re.compile(r"\b(on|to|over) average ")


def _turnover(match: re.Match[str]) -> str:
    return f"{match.group('what')} turnover"


def normalize_phrase(text: str, *, grammar: bool = True) -> str:
    """The form phrases are compared in: lower case, no punctuation, initials joined,
    shorthand spelled out, plurals singular, filler words gone, and the cash flow
    statement's totals in one wording. "Price/Earnings ratios" → "price to earnings ratio"
    (earnings keeps its s: it is not a plural), "R&D" → "rd", "LT debt" → "long term debt",
    "Net-Income" → "net income", "net cash provided by operating activities" → "operating
    cash flow". `grammar=False` leaves the cash flow wordings as written."""
    words = _words(text)
    kept: list[str] = []
    for word in words:
        word = _singular(word)
        for part in _ABBREVIATIONS.get(word, word).split():
            if part not in _STOP_WORDS:
                kept.append(_singular(part))
    normalized = " ".join(kept or words)
    if grammar and " over " in normalized:
        normalized = _TURNED_OVER.sub(_turnover, normalized)
    if grammar and " average " in normalized:
        # "Return on average total assets": the catalog's returns and turnovers already
        # divide by the average balance.
        normalized = _ON_AVERAGE.sub(r"\1 ", normalized)
    if not grammar or "cash" not in normalized:  # most phrases: no pattern to run
        return normalized
    normalized = _CASH_FLOW_SUBJECT.sub(_cash_flow_words, normalized)
    return _CASH_FLOW_PHRASE.sub(_cash_flow_name, normalized)


# --- composition: "X divided by Y", "X minus Y", "growth in X" read through formulas ------

_YOY_FORMULA = re.compile(r"^\((\w+) / \1\[-1\] - 1\) \* 100$")
_CAGR_FORMULA = re.compile(r"^\(\((\w+) / \1\[-(\d+)\]\) \*\* \(1 / \2\) - 1\) \* 100$")
# base metric → its year-over-year growth metric; (base, years) → its CAGR metric.
YOY_GROWTH_OF: dict[str, str] = {
    match.group(1): metric.id
    for metric in CATALOG
    if metric.formula and (match := _YOY_FORMULA.match(metric.formula))
}
CAGR_OF: dict[tuple[str, int], str] = {
    (match.group(1), int(match.group(2))): metric.id
    for metric in CATALOG
    if metric.formula and (match := _CAGR_FORMULA.match(metric.formula))
}

_OPERATORS = {ast.Div: "/", ast.Sub: "-", ast.Add: "+"}


def _operand(node: ast.expr) -> str | None:
    """A metric id, looking through avg() and opt(): "revenue divided by average total
    assets" and "revenue divided by total assets" both mean asset turnover."""
    if isinstance(node, ast.Name):
        return node.id
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"avg", "opt"}
        and len(node.args) == 1
    ):
        return _operand(node.args[0])
    return None


def _formula_key(formula: str) -> tuple[str, str, str] | None:
    """(operator, left, right) of a two-term formula, scale factors (× 100, × 365) aside."""
    node = ast.parse(formula, mode="eval").body
    while (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mult)
        and isinstance(node.right, ast.Constant)
    ):
        node = node.left
    if not isinstance(node, ast.BinOp) or type(node.op) not in _OPERATORS:
        return None
    left, right = _operand(node.left), _operand(node.right)
    if left is None or right is None:
        return None
    return _OPERATORS[type(node.op)], left, right


def _formula_index(catalog: Iterable[Metric]) -> dict[tuple[str, str, str], str]:
    index: dict[tuple[str, str, str], str] = {}
    for metric in catalog:
        if metric.formula and (key := _formula_key(metric.formula)) is not None:
            index.setdefault(key, metric.id)
    return index


# The catalog's formulas, plus the accounting identities of metrics finq reads from filings
# (equity is assets minus liabilities even though finq takes it as reported), and the
# everyday reading of "cash per share".
FORMULA_INDEX: dict[tuple[str, str, str], str] = {
    **_formula_index(CATALOG),
    ("-", "total_assets", "total_liabilities"): "stockholders_equity",
    ("-", "revenue", "cost_of_revenue"): "gross_profit",
    ("-", "gross_profit", "operating_expenses"): "operating_income",
    ("-", "pretax_income", "income_tax_expense"): "net_income",
    ("+", "long_term_debt", "current_debt"): "total_debt",
    ("+", "long_term_debt", "short_term_debt"): "total_debt",
    ("/", "cash_and_equivalents", "shares_outstanding"): "cash_per_share",
    ("/", "net_income", "weighted_average_shares_diluted"): "eps_diluted",
    ("/", "net_income", "weighted_average_shares_basic"): "eps_basic",
}

# How people join the two sides of a difference or a sum.
_BINARY_PHRASES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(.+?) (?:minus|less|net) (.+)$"), "-"),
    (re.compile(r"^(.+?) (?:plus|and) (.+)$"), "+"),
)
# How people put one figure over another in words, matched on normalized words (so "as a
# percentage of" has become "as percent" and "R&D's share of revenue" "rd share revenue").
# Two shapes, both read as numerator / denominator through the formula index:
#   X <join> Y: "R&D relative to revenue", "R&D as a % of revenue", "capex divided by
#     revenue", "(the ratio of) SG&A to revenue (ratio)", "R&D's share of revenue";
#   <part> Y <went to> X: "what share of revenue went to R&D", "percentage of revenue
#     spent on R&D", "how much of its revenue did it spend on R&D", "proportion of net
#     income paid out as dividends".
_RATIO_JOIN = re.compile(
    r"divided by|relative to|compared to|compared with|in relation to|in proportion to"
    r"|as (?:a )?(?:percent|share|proportion|fraction|portion|part|ratio|multiple)"
    r"|share|percent|per dollar|over|to|per"
)
RATIO_PART_WORDS = frozenset({"share", "percent", "portion", "proportion", "fraction", "part"})
# The verbs that send part of one figure to another; "was" counts ("what share of revenue
# was R&D"), as do the auxiliaries of a question ("did it spend on").
RATIO_VERBS = (
    "went|go|goes|gone|going|spent|spend|spends|spending|devoted|devote|devotes|allocated"
    "|eaten|eat|eats|ate|absorbed|absorb|absorbs|left|leave|leaves|ended|end|ends"
    "|allocate|allocates|invested|invest|invests|reinvested|reinvest|put|puts|used|use|uses"
    "|dedicated|dedicate|dedicates|paid|pay|pays|returned|return|returns|distributed"
    "|distribute|distributes|accounted|account|accounts|consumed|consume|consumes|took|take"
    "|takes|taken|represented|represent|represents|made|make|makes|kept|keep|keeps|converted"
    "|convert|converts|turned|was|were|is|are"
)
_RATIO_PART_JOIN = re.compile(
    r"(?:(?:did|does|do|has|have|had|it|they|been|being|was|were|is|are) )*"
    rf"(?:{RATIO_VERBS})(?: (?:{RATIO_VERBS}|out|up|back|into))*"
    r"(?: (?:to|on|into|in|toward|towards|as|by|at))?"
)
# Words that start a ratio's phrase without naming either side: "what is the ratio of…".
_RATIO_LEAD = re.compile(r"^(?:(?:what|which|whats|ratio|is|was|the) )+")
_RATIO_TAIL = re.compile(r"(?: (?:percent|ratio|multiple))+$")
_GROWTH_PHRASES = (
    re.compile(r"^(?:growth|change|increase|rise) (?:in )?(.+)$"),
    re.compile(r"^(.+) (?:growth|change|increase) ?(?:rate)?$"),
)
_CAGR_PHRASE = re.compile(
    r"^(?:compound annual )?(.+?) (?:cagr|compound annual growth|growth)(?: rate)? "
    r"(?:over |last |past )?(three|3|five|5) year$"
)
_YEARS = {"three": 3, "3": 3, "five": 5, "5": 5}
_SHARE_WORDS = frozenset({"share", "per share", "share outstanding"})
# Alone, "share price" asks the price tool; as one side of a ratio it is the close that
# valuation formulas divide by.
_PRICE_WORDS = frozenset({"price", "share price", "stock price", "closing price"})
_LEADING_AVERAGE = re.compile(r"^average ")
# Words around a name that do not change which metric it is: "how much debt relative to
# equity", "GM %", "equity to assets ratio", "EV/EBITDA multiple".
_LEADING_FILLER = re.compile(r"^(?:(?:how much|how many|what|which|their|our|ratio) )+")
_TRAILING_FILLER = re.compile(r" (?:percent|ratio|rate|multiple|figure|number|amount)$")


def _joins(words: Sequence[str], first: int, join: re.Pattern[str]) -> Iterable[tuple[int, int]]:
    """(start, end) of every run of words from `first` on that `join` matches whole and
    that leaves at least one word after it, nearest and shortest first."""
    for start in range(first, len(words) - 1):
        for end in range(start + 1, len(words)):
            if join.fullmatch(" ".join(words[start:end])):
                yield start, end


def _negated(phrase: str, name: str) -> bool:
    """Whether a phrase is a name with one word negated or un-negated ("noncurrent
    liabilities" and "current liabilities"): a few letters apart, but the opposite figure,
    not a slip."""
    ours, theirs = set(phrase.split()), set(name.split())
    return any(f"non{word}" in theirs for word in ours - theirs) or any(
        f"non{word}" in ours for word in theirs - ours
    )


def _first_sentence(description: str) -> str:
    return re.split(r"(?<=[.;])\s", description, maxsplit=1)[0].rstrip(".;").lower()


def _sorted(key: str) -> str:
    return " ".join(sorted(key.split()))


class Embedder(Protocol):
    """Turns phrases into unit-length vectors (one row per phrase)."""

    def encode(self, phrases: Sequence[str]) -> npt.NDArray[np.float32]: ...


@dataclass(frozen=True)
class Resolution:
    phrase: str
    metric_id: str
    confidence: float  # 1.0 for exact and learned names; the fallback's score otherwise
    method: ResolutionMethod

    @property
    def by_fallback(self) -> bool:
        """Reached without a name the catalog or the alias log holds for the phrase."""
        return self.method in ("composed", "fuzzy", "embedding")


class UnknownMetricPhrase(ValueError):
    """No metric is close enough; `closest` holds the three nearest metric ids."""

    def __init__(self, phrase: str, closest: Sequence[str]) -> None:
        self.phrase = phrase
        self.closest = list(closest)
        names = ", ".join(f"{METRICS_BY_ID[m].label} ({m})" for m in self.closest)
        super().__init__(
            f"{phrase!r} is not a metric finq knows; the closest are {names}. "
            "list_metrics shows them all."
        )


# --- names a metric's XBRL tags give it -------------------------------------------------

_TAG_WORD = re.compile(r"[A-Z][a-z]*|[0-9]+")
# The cash flow statement names a payment by what it pays for: "Payments to acquire
# productive assets", "Payments for repurchase of common stock", "Payments of
# dividends", "Income taxes paid, net". People say the same with other verbs.
_PAYMENT_TAG = re.compile(r"^payments (?:(?P<action>to \w+) |for |of )(?P<object>.+)$")
_PAID_TAG = re.compile(r"^(?P<object>.+?) paid(?P<net> net)?$")
_PAYMENT_LEADS = (
    "paid in",
    "pay in",
    "payments for",
    "payment for",
    "paid for",
    "pay for",
    "cash paid for",
    "cash payments for",
    "cash outflow for",
    "cash outflows for",
    "cash spent on",
    "spent on",
    "spend on",
    "spending on",
    "cash used for",
)
# "to acquire": the leads above take the gerund ("spent on acquiring"), these the verb.
# What a tag's object is also called: filings say "common stock" where people say
# "shares", and many filings "property and equipment".
_OBJECT_WORDS: dict[str, tuple[str, ...]] = {
    "common stock": (
        "shares",
        "stock",
        "common shares",
        "own shares",
        "own stock",
        "capital stock",
    ),
    "property plant and equipment": ("property and equipment", "pp and e", "ppe"),
}


def _also_called(items: Sequence[str]) -> list[str]:
    """The items, then each with its object called every other way it is called."""
    return [
        *items,
        *(
            item.replace(words, other)
            for item in items
            for words, others in _OBJECT_WORDS.items()
            if words in item
            for other in others
        ),
    ]


_VERB_SYNONYMS = {"repurchase": ("buy back",)}
_SPENDING = ("spend", "spent", "spending", "cash spent")
# The nouns of a payment's action: "payments for acquisitions of businesses", "purchases of
# property and equipment".
_ACTION_NOUNS = {"acquire": ("acquisition", "acquisitions", "purchase", "purchases")}
_PAYMENT_ACTION_LEADS = ("payments", "paid", "pay", "cash paid", "cash used", "spent", "spend")


def _gerund(verb: str) -> str:
    """ "repurchase" → "repurchasing", "buy back" → "buying back"."""
    head, _, particle = verb.partition(" ")
    if head.endswith("e") and not head.endswith("ee"):
        head = head[:-1]
    return f"{head}ing {particle}".strip()


def tag_words(tag: str) -> str:
    """A us-gaap tag in words: "PaymentsForRepurchaseOfCommonStock" → "payments for
    repurchase of common stock"."""
    return " ".join(word.lower() for word in _TAG_WORD.findall(tag))


def tag_names(metric: Metric) -> tuple[str, ...]:
    """The names a reported metric's tags give it, as filings and people word a payment:
    the tag itself in words, and for a cash payment the verbs people use for it ("pay to
    acquire productive assets", "cash outflow for repurchasing common stock",
    "interest payments")."""
    if metric.unit != "USD":  # per-share "cash paid" tags name no payment in dollars
        return ()
    names: list[str] = []
    for tag in metric.xbrl_tags:
        words = tag_words(tag)
        names.append(words)
        if match := _PAYMENT_TAG.match(words):
            action, thing = match.group("action"), match.group("object")
        elif match := _PAID_TAG.match(words):
            action, thing = None, match.group("object")
            names.extend((f"{thing} paid", f"cash {thing} paid", f"{thing} payments"))
            if match.group("net"):
                names.append(f"{thing} paid net")
        else:
            continue
        # "repurchase of common stock" is also said "repurchasing common stock".
        # "Buying back" is what people call repurchasing.
        verb, _, rest = thing.partition(" of ")
        gerunds = (
            [f"{_gerund(v)} {rest}" for v in (verb, *_VERB_SYNONYMS.get(verb, ()))]
            if rest and " " not in verb
            else []
        )
        gerunds = _also_called(gerunds)
        objects = [*_also_called([thing]), *gerunds]
        # An action in the gerund also follows the spending verb directly: "spent buying
        # back its own shares".
        names.extend(f"{lead} {item}" for lead in _SPENDING for item in gerunds)
        if action:
            verb_of_action = action.removeprefix("to ")
            things = _also_called([thing])
            names.extend(
                f"{lead} {action} {item}" for lead in _PAYMENT_ACTION_LEADS for item in things
            )
            names.extend(
                f"{lead} {_gerund(verb_of_action)} {item}"
                for lead in _PAYMENT_LEADS
                for item in things
            )
            names.extend(
                f"{lead} {noun} of {item}"
                for noun in _ACTION_NOUNS.get(verb_of_action, ())
                for lead in _PAYMENT_LEADS
                for item in things
            )
        names.extend(f"{lead} {item}" for lead in _PAYMENT_LEADS for item in objects)
    return tuple(dict.fromkeys(names))


def catalog_phrases(catalog: Iterable[Metric] = CATALOG) -> dict[str, str]:
    """Every normalized id, label and alias, and the metric id it names; then the names a
    metric's XBRL tags give it (`tag_names`) where no catalog name has taken them.

    Raises when normalizing makes one catalog name name two metrics: the catalog must then
    say which it means, since routing by catalog order would be a silent coin toss. A tag
    name two metrics would share is left out instead: it is generated, not written."""
    index: dict[str, str] = {}
    for metric in catalog:
        for phrase in (metric.id, metric.label, *metric.aliases):
            key = normalize_phrase(phrase)
            holder = index.setdefault(key, metric.id)
            if holder != metric.id:
                raise ValueError(f"{phrase!r} ({key!r}) names both {holder} and {metric.id}")
    generated: dict[str, str | None] = {}
    for metric in catalog:
        for name in tag_names(metric):
            key = normalize_phrase(name)
            if key in index:
                continue
            holder = generated.setdefault(key, metric.id)
            if holder != metric.id:
                generated[key] = None
    index.update((key, metric) for key, metric in generated.items() if metric is not None)
    return index


@dataclass
class MetricResolver:
    """Resolves metric phrases; `learn` adds confirmed aliases while it runs."""

    phrases: dict[str, str]  # normalized phrase → metric id
    learned: dict[str, str] = field(default_factory=dict)
    embedder: Embedder | None = None
    embedding_threshold: float = EMBEDDING_THRESHOLD
    embedding_min_lead: float = EMBEDDING_MIN_LEAD

    def __post_init__(self) -> None:
        self._keys = list(self.phrases)
        self._key_metrics = [self.phrases[key] for key in self._keys]
        # Each metric's normalized names, for questions that look a named metric up in the
        # text ("where is it named", "is it set aside") without scanning every name.
        self.names_of: dict[str, tuple[str, ...]] = {}
        for key, metric_id in self.phrases.items():
            self.names_of[metric_id] = (*self.names_of.get(metric_id, ()), key)
        # The catalog's cash flow wordings as written, beside the one wording the grammar
        # gives them, so a slip the grammar cannot read ("net cash provided by operating
        # activites" is read; "net cash provded by operating activities" is not) is still
        # a few edits from a name.
        written_keys: dict[str, str] = {}
        for metric in CATALOG:
            for name in (metric.label, *metric.aliases):
                written = normalize_phrase(name, grammar=False)
                if written not in self.phrases and normalize_phrase(name) in self.phrases:
                    written_keys.setdefault(written, metric.id)
        self._keys.extend(written_keys)
        self._key_metrics.extend(written_keys.values())
        # Every word of every name: a word outside it may be a slip of one inside it.
        self.vocabulary = frozenset(word for key in self._keys for word in key.split())
        self._positions_by_length: dict[int, list[int]] = {}
        for position, key in enumerate(self._keys):
            self._positions_by_length.setdefault(len(key), []).append(position)
        # Suggestions are scored against each metric's label and id only: a quarter of the
        # names, so a refusal stays well under a millisecond.
        self._suggestion_keys = [
            normalize_phrase(name) for m in CATALOG for name in (m.label, m.id)
        ]
        self._suggestion_metrics = [m.id for m in CATALOG for _ in (m.label, m.id)]
        # Names by their words in any order; a word set two metrics share is left out.
        reordered: dict[str, str | None] = {}
        for key, metric in self.phrases.items():
            words = _sorted(key)
            reordered[words] = metric if reordered.get(words, metric) == metric else None
        self._reordered = {words: m for words, m in reordered.items() if m is not None}
        # The embedding index holds every name and each metric's description, whose words
        # are closer to how people paraphrase ("money owed by customers") than any name.
        self._vectors: npt.NDArray[np.float32] | None = None
        self._vector_metrics = [*self._key_metrics, *(m.id for m in CATALOG)]
        if self.embedder is not None:
            # Shipped with finq for MiniLM: no process embeds the catalog's ~1,500 texts
            # again unless one changed. (numpy only where vectors are: imported here.)
            from shared.stored_vectors import with_stored_vectors

            self._vectors = with_stored_vectors(self.embedder).encode(self.embedding_texts)

    @property
    def embedding_texts(self) -> list[str]:
        """What the embedding index holds, in its order: every name, then each metric's
        description."""
        return [*self._keys, *(_first_sentence(m.description) for m in CATALOG)]

    @classmethod
    def from_catalog(
        cls,
        embedder: Embedder | None = None,
        learned: Mapping[str, str] | None = None,
    ) -> MetricResolver:
        return cls(phrases=catalog_phrases(), learned=dict(learned or {}), embedder=embedder)

    def learn(self, phrase: str, metric_id: str) -> None:
        if metric_id not in METRICS_BY_ID:
            raise ValueError(f"unknown metric id {metric_id!r}")
        key = normalize_phrase(phrase)
        if key not in self.phrases:
            self.learned[key] = metric_id

    def exact(self, phrase: str) -> Resolution | None:
        """The metric a phrase names exactly (catalog or learned), without fallbacks."""
        key = normalize_phrase(phrase)
        if (metric := self.phrases.get(key)) is not None:
            return Resolution(phrase, metric, 1.0, "exact")
        if (metric := self.learned.get(key)) is not None:
            return Resolution(phrase, metric, 1.0, "learned")
        return None

    def composed(self, phrase: str) -> Resolution | None:
        """A phrase built from metric names the way a catalog formula is: "current assets
        divided by current liabilities", "operating cash flow minus capex", "growth in
        capital expenditures", "revenue CAGR over three years"; or a name with its words
        reordered or wrapped in filler ("basic weighted average shares", "GM %")."""
        key = _TRAILING_FILLER.sub("", _LEADING_FILLER.sub("", normalize_phrase(phrase)))
        found = self.phrases.get(key) or self.learned.get(key) or self._reordered.get(_sorted(key))
        if found is not None:
            return Resolution(phrase, found, 0.95, "composed")
        if (ratio := self.ratio(phrase)) is not None:
            return ratio
        match = _CAGR_PHRASE.match(key)
        if match and (base := self._part(match.group(1))) is not None:
            cagr = CAGR_OF.get((base, _YEARS[match.group(2)]))
            if cagr is not None:
                return Resolution(phrase, cagr, 0.9, "composed")
        for pattern in _GROWTH_PHRASES:
            match = pattern.match(key)
            if match and (base := self._part(match.group(1))) in YOY_GROWTH_OF:
                return Resolution(phrase, YOY_GROWTH_OF[base], 0.9, "composed")
        for pattern, operator in _BINARY_PHRASES:
            match = pattern.match(key)
            if match is None:
                continue
            left = self._part(match.group(1))
            right_words = match.group(2)
            right = "shares_outstanding" if right_words in _SHARE_WORDS else self._part(right_words)
            if left is None or right is None:
                continue
            metric = FORMULA_INDEX.get((operator, left, right))
            if metric is None and operator == "+":
                metric = FORMULA_INDEX.get((operator, right, left))
            if metric is not None:
                return Resolution(phrase, metric, 0.9, "composed")
        return None

    def ratio(self, phrase: str) -> Resolution | None:
        """The catalog ratio a phrase puts one named figure over another with: "R&D as a
        percentage of revenue", "what share of revenue went to R&D", "ratio of capex to
        revenue". Any two metrics a catalog formula divides qualify, so a new ratio in the
        catalog is understood in all these wordings at once."""
        words = _RATIO_TAIL.sub("", _RATIO_LEAD.sub("", normalize_phrase(phrase))).split()
        sides: dict[tuple[str, ...], str | None] = {}  # each side's words resolved once

        def side(side_words: Sequence[str]) -> str | None:
            key = tuple(side_words)
            if key not in sides:
                text = " ".join(key)
                sides[key] = "shares_outstanding" if text in _SHARE_WORDS else self._part(text)
            return sides[key]

        def over(numerator: str | None, denominator: str | None) -> Resolution | None:
            if numerator is None or denominator is None:
                return None
            metric = FORMULA_INDEX.get(("/", numerator, denominator))
            return Resolution(phrase, metric, 0.9, "composed") if metric else None

        # <part> Y <went to> X
        asked = 2 if words[:2] == ["how", "much"] else 1 if words[:1] else 0
        if asked == 2 or (asked == 1 and words[0] in RATIO_PART_WORDS):
            for start, end in _joins(words, asked + 1, _RATIO_PART_JOIN):
                found = over(side(words[end:]), side(words[asked:start]))
                if found is not None:
                    return found
        # X <join> Y ("how much debt relative to equity": "how much" only asks for it)
        sided = words[2:] if asked == 2 else words
        for start, end in _joins(sided, 1, _RATIO_JOIN):
            found = over(side(sided[:start]), side(sided[end:]))
            if found is not None:
                return found
        return None

    def _part(self, words: str) -> str | None:
        """One side of a composed phrase: a name held exactly, else one typing slip away."""
        words = _LEADING_AVERAGE.sub("", words)
        if words in _PRICE_WORDS:
            return "period_end_price"
        found = self.phrases.get(words) or self.learned.get(words)
        if found is None and (fuzzy := self.fuzzy(words)) is not None:
            found = fuzzy.metric_id
        return found

    def fuzzy(self, phrase: str) -> Resolution | None:
        key = normalize_phrase(phrase)
        if len(key) < FUZZY_MIN_LENGTH:
            return None
        # Past the last length the last allowance holds: a 2,000-letter phrase is a phrase
        # too (it once escaped as StopIteration and failed the router on every try).
        allowed = next(
            (edits for length, edits in FUZZY_EDITS_BY_LENGTH if len(key) <= length),
            FUZZY_EDITS_BY_LENGTH[-1][1],
        )
        # A name more than `allowed` characters longer or shorter is more than `allowed`
        # edits away: only names of a near length are scored.
        candidates: list[int] = []
        for length in range(len(key) - allowed, len(key) + allowed + 1):
            candidates.extend(self._positions_by_length.get(length, ()))
        best = process.extractOne(
            key,
            [self._keys[i] for i in candidates],
            scorer=OSA.distance,
            score_cutoff=allowed,
        )
        if best is None:
            return None
        matched, edits, index = best
        if _negated(key, matched):
            return None
        confidence = 1 - edits / max(len(key), len(matched))
        metric = self._key_metrics[candidates[index]]
        return Resolution(phrase, metric, round(confidence, 3), "fuzzy")

    def embedding(self, phrase: str) -> Resolution | None:
        ranked = self._embedding_ranking(phrase)
        if not ranked:
            return None
        (best_metric, best), runner_up = ranked[0], ranked[1] if len(ranked) > 1 else None
        lead = best - runner_up[1] if runner_up is not None else 1.0
        if best < self.embedding_threshold or lead < self.embedding_min_lead:
            return None
        return Resolution(phrase, best_metric, round(best, 3), "embedding")

    def resolve(self, phrase: str, *, fallbacks: bool = True) -> Resolution:
        """The metric a phrase names, or UnknownMetricPhrase naming the three closest."""
        found = self.exact(phrase)
        if found is None and fallbacks:
            found = (
                self.composed(phrase)
                or self.fuzzy(phrase)
                or (self.embedding(phrase) if self.embedder is not None else None)
            )
        if found is None:
            raise UnknownMetricPhrase(phrase, self.closest(phrase))
        return found

    def closest(self, phrase: str, count: int = 3) -> list[str]:
        """The `count` metrics nearest a phrase, best first, one entry per metric."""
        if self.embedder is not None:
            return [metric for metric, _ in self._embedding_ranking(phrase)[:count]]
        # Shared words, in any order, rank suggestions: right for "which did you mean?",
        # far too loose for resolving. (WRatio suggests about as well at three times the cost.)
        candidates = process.extract(
            normalize_phrase(phrase),
            self._suggestion_keys,
            scorer=fuzz.token_set_ratio,
            limit=count * 4,
        )
        ranked: list[str] = []
        for _, _, position in candidates:
            metric = self._suggestion_metrics[position]
            if metric not in ranked:
                ranked.append(metric)
        return ranked[:count]

    def _embedding_ranking(self, phrase: str) -> list[tuple[str, float]]:
        """Each metric with its best cosine similarity to the phrase, best first."""
        if self.embedder is None or self._vectors is None:
            return []
        query = self.embedder.encode([normalize_phrase(phrase)])[0]
        scores = self._vectors @ query
        best: dict[str, float] = {}
        for position in scores.argsort()[::-1][:64]:
            metric = self._vector_metrics[int(position)]
            best.setdefault(metric, float(scores[position]))
        return sorted(best.items(), key=lambda item: item[1], reverse=True)
