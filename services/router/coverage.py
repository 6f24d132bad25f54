"""Coverage: which parts of a figure question the router read, and which it did not.

A figure answer is only drafted when the route covers the whole question. The metric
finder reports the phrases nothing resolved; here they are told apart into qualifiers
of the figure (a segment, a product line, a region: finq's stored figures are company
totals, so such a figure comes from a filing's own tables), words that carry no meaning
in a question, and words nothing read, each placed back on the question as a span.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

from rapidfuzz.distance import OSA

from shared.contracts.understanding import MetricScope, ScopeKind, TextSpan
from shared.metric_resolver import normalize_phrase

# Qualifiers that narrow a figure to part of a company, by kind. Written as the words
# filings and people use; a phrase is classified by the first kind that matches it.
_SCOPE_PATTERNS: tuple[tuple[ScopeKind, re.Pattern[str]], ...] = (
    (
        "geography",
        re.compile(
            r"\b(?:greater china|china|americas|europe|european|japan|asia|pacific|emea|apac"
            r"|united states|domestic|international|foreign|overseas|regions?|regional"
            r"|geograph\w*|country|countries|north america|latin america|taiwan|singapore"
            r"|india|ireland|uk|germany)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "product",
        re.compile(
            r"\b(?:iphones?|ipads?|macs?|wearables|accessories|airpods|watch|products?"
            r"|product lines?|model [3sxy]|cybertruck|geforce|pixel|hardware|devices?"
            r"|vehicles?|cars?|deliveries|units sold|gpus?|chips?)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "segment",
        re.compile(
            r"\b(?:segments?|divisions?|business(?:es)?|units?|cloud|data ?cent(?:er|re)s?"
            r"|gaming|automotive|energy generation|storage|advertising|ads|search|youtube"
            r"|other bets|services|compute|networking|professional visualization"
            r"|subscriptions?|platforms?|licensing|regulatory credits?|leasing)\b",
            re.IGNORECASE,
        ),
    ),
    ("per_share", re.compile(r"\bper[\s-]+(?:share|unit)\b", re.IGNORECASE)),
    ("as_reported", re.compile(r"\b(?:as reported|non[\s-]?gaap|adjusted|pro forma)\b", re.I)),
)

# Words that can be left over in a figure question without changing what it asks.
FILLER_WORDS = frozenset(
    str.split(
        "a an the of for its it's their his her our my your in on at to by from with about "
        "according acc per based shown stated listed disclosed recorded reported reports "
        "filing filings filed statement statements sec form forms k q 10 annual quarterly "
        "company company's companies firm business's please kindly could would can you "
        "know want need like see find get look up tell show give me us i we let lets "
        "exactly precisely approximately roughly around about overall full entire whole "
        "net total do does did was were is are be been being has have had what whats "
        "which how much many and or also then now just only still again same "
        "number figure value amount level metric metrics data info information "
        "fiscal year years fy quarter quarters period periods ended ending end "
        "inc corp corporation co ltd plc llc nasdaq nyse ticker stock shares share "
        "usd dollars dollar million millions billion billions thousand thousands "
        "was there any ok okay so well hey hi thanks thank then side by "
        "bigger larger greater smaller lower higher more less "
        "pay paid pays out spend spent spends put puts into invest invests invested "
        "make made makes earn earned earns generate compute computes computed computing "
        "calculate calculates calculated calculating "
        "generated generates post posted record bring brought book booked "
        # Holding a balance: "long-term debt Apple was carrying", "cash on hand", "on its
        # balance sheet".
        "carry carrying carried carries hold holds holding held hand sheet actually "
        "sit sits sat provide times back close closing "
        # How a figure moved over the periods asked: the periods say over which.
        "move moved moves moving across develop developed evolve evolved rising falling trend "
        "trending walk through go goes went gone up down add added adds parent "
        # Set aside: "not the provision" (the figure set aside is dropped by the router).
        "not just only"
    )
)
_WORD = re.compile(r"[a-z0-9][a-z0-9'&.-]*", re.IGNORECASE)


def scope_of(phrase: str) -> MetricScope | None:
    """The kind of qualifier a leftover phrase is, if it is one."""
    for kind, pattern in _SCOPE_PATTERNS:
        if pattern.search(phrase):
            return MetricScope(kind=kind, text=phrase)
    return None


_FILLER_BY_LENGTH: dict[int, tuple[str, ...]] = {}
for _word in FILLER_WORDS:
    _FILLER_BY_LENGTH.setdefault(len(_word), ())
    _FILLER_BY_LENGTH[len(_word)] += (_word,)


def _is_filler(word: str) -> bool:
    """A filler word, or a slip of one ("totl"): one edit away from a filler word of four
    letters or more."""
    word = word.lower().strip(".'")
    if word in FILLER_WORDS:
        return True
    if len(word) < 4:
        return False
    return any(
        OSA.distance(word, filler) <= 1
        for size in (len(word) - 1, len(word), len(word) + 1)
        for filler in _FILLER_BY_LENGTH.get(size, ())
        if len(filler) >= 4
    )


def meaningful(phrase: str) -> bool:
    """Whether a leftover phrase says anything: one word outside the filler is enough."""
    return any(not _is_filler(word) for word in _WORD.findall(phrase))


@functools.lru_cache(maxsize=4096)
def _word_start(word: str) -> re.Pattern[str]:
    # The finder normalizes ("wombats" → "wombat"): a word may go on past its stem.
    return re.compile(rf"(?<![\w]){re.escape(word)}[\w']*", re.IGNORECASE)


def locate(phrase: str, question: str, taken: Sequence[tuple[int, int]] = ()) -> TextSpan:
    """Where a (normalized) phrase stands in the question: from its first word to its last,
    each found in order at a word's start outside spans already read; the phrase itself,
    placed nowhere, when a word cannot be found."""
    position, first, last = 0, -1, -1
    for word in phrase.split():
        pattern = _word_start(word)
        for match in pattern.finditer(question, position):
            if not any(start <= match.start() < end for start, end in taken):
                first = match.start() if first < 0 else first
                last, position = match.end(), match.end()
                break
    if first < 0:
        return TextSpan(text=phrase, start=0, end=0)
    return TextSpan(text=question[first:last], start=first, end=last)


# An alternative reading the user rules out (not a basis: "excluding X" changes the figure).
_SET_ASIDE = re.compile(r"\b(?:not|rather than|instead of)\s+(?:the\s+|its\s+|their\s+)?$", re.I)
# How far back before a leftover phrase its wording may start: "net of" before "refunds".
_RESTATING_CONTEXT_WORDS = 2


def restates_definition(span: TextSpan, question: str, definitions: Sequence[str]) -> bool:
    """Whether a leftover phrase, read with the word or two before it, says what the
    figure's own definition says word for word: "cash paid for income taxes, net of
    refunds" asks for the catalog's income taxes paid, defined as "cash paid for income
    taxes, net of refunds". A phrase alone is not enough ("refunds" is no basis); the words
    before it must join it in the definition."""
    before = _WORD.findall(question[: span.start])
    for count in range(1, _RESTATING_CONTEXT_WORDS + 1):
        if len(before) < count:
            break
        phrase = f" {normalize_phrase(' '.join([*before[-count:], span.text]))} "
        if len(phrase.split()) < 2:
            continue
        if any(phrase in f" {normalize_phrase(text)} " for text in definitions):
            return True
    return False


# A verb's inflections: "sitting", "owed", "showed".
_INFLECTED = re.compile(r"^[a-z]{3,}(?:ing|ed)$")
# Words that change the basis of a figure ("excluding", "adjusted", "before"): never a verb
# to pass over, whatever their form.
# Nor are words that make it a forecast ("expected", "guided") rather than what was reported.
_BASIS = re.compile(
    r"^(?:exclud|includ|adjust|normaliz|restat|annualiz|combin|segment|before|after|less|minus"
    r"|ex|pro|non|forecast|estimat|project|guid|expect|budget|target|plan|predict|anticipat"
    r"|impair|restructur|discontinu|acquir|divest)",
)


def changes_basis(text: str) -> bool:
    """Whether a phrase holds a word that changes what a figure measures ("excluding",
    "adjusted", "forecast")."""
    return any(_BASIS.match(word.lower()) for word in _WORD.findall(text))


def _stem(word: str) -> str:
    return re.sub(r"(?:ing|ed|e|s)$", "", word)


def passing_verb(word: str, vocabulary: frozenset[str]) -> bool:
    """Whether a leftover word is a verb that says how the figure is asked ("was NVIDIA
    sitting on", "what Apple owed"), not which figure: an -ing or -ed form whose stem names
    no metric ("repurchased" names share repurchases, "diluted" diluted EPS) and that does
    not change the figure's basis ("excluding", "adjusted")."""
    word = word.lower().strip(".,;:?!'\"()")
    if not _INFLECTED.match(word) or _BASIS.match(word) or word in vocabulary:
        return False
    stem = _stem(word)
    return len(stem) < 4 or not any(known.startswith(stem) for known in _stems(vocabulary))


@functools.cache
def _stems(vocabulary: frozenset[str]) -> frozenset[str]:
    # Once per vocabulary (the resolver's, fixed while the router runs), not per word.
    return frozenset(_stem(word) for word in vocabulary)


# The catalog's categories that say what a figure measures (not where it is reported).
_ANALYTIC_CATEGORIES = frozenset(
    {"profitability", "growth", "leverage", "liquidity", "efficiency", "valuation"}
)


# Verbs that go with a kind of figure: a stock "trades at" a multiple.
_CATEGORY_VERBS: dict[str, tuple[str, ...]] = {"valuation": ("trad",)}


def _names_the_category(span: TextSpan, categories: Sequence[str]) -> bool:
    """Whether a leftover span only says what kind of figure was asked ("how leveraged was
    Apple — debt to equity", "how efficiently … (asset turnover)"): the word of the found
    metric's own category, in any form."""
    stems = {
        stem
        for category in categories
        if category in _ANALYTIC_CATEGORIES
        for stem in (category[:6], *_CATEGORY_VERBS.get(category, ()))
    }
    return bool(stems) and all(
        _is_filler(word) or any(word.lower().startswith(stem) for stem in stems)
        for word in _WORD.findall(span.text)
    )


def _only_verbs(span: TextSpan, question: str, vocabulary: frozenset[str]) -> bool:
    """Whether a leftover span is filler and passing verbs only, none of them standing
    right before a word of a metric's name (there "forecasted revenue", "issued shares",
    it is an adjective of the figure)."""
    following = _WORD.findall(question[span.end :])[:1]
    if following and not _is_filler(following[0]) and normalize_phrase(following[0]) in vocabulary:
        return False
    return all(
        _is_filler(word) or passing_verb(word, vocabulary) for word in _WORD.findall(span.text)
    )


def leftovers(
    unresolved: Iterable[str],
    question: str,
    taken: Sequence[tuple[int, int]] = (),
    companies: Sequence[tuple[int, int]] = (),
    definitions: Sequence[str] = (),
    vocabulary: frozenset[str] = frozenset(),
    categories: Sequence[str] = (),
) -> tuple[list[MetricScope], list[TextSpan]]:
    """A figure question's leftover phrases, as qualifiers of the figure and as spans
    nothing read; filler is dropped, and so is a phrase that repeats the definition of the
    figure asked (`definitions`, see `restates_definition`). A qualifier written right
    after a company's name keeps it ("Google Cloud", "Tesla Energy"): that is the segment's
    own name."""
    scopes: list[MetricScope] = []
    unread: list[TextSpan] = []
    for phrase in unresolved:
        if not meaningful(phrase):
            continue
        span = locate(phrase, question, taken)
        if not span.end:
            # Not in the question as written: a word the finder's normalization made
            # ("Inc." read as "income"), not one the user wrote.
            continue
        scope = scope_of(span.text)
        if scope is not None:
            named = next((s for s, e in companies if question[e : span.start] == " "), None)
            if named is not None and question[named : span.start].strip().isalpha():
                scope = scope.model_copy(update={"text": question[named : span.end]})
            scopes.append(scope)
        elif _SET_ASIDE.search(question[: span.start]):
            # "cash taxes, not the provision": what the user sets aside is not asked.
            continue
        elif (
            meaningful(span.text)
            and not restates_definition(span, question, definitions)
            and not (vocabulary and _only_verbs(span, question, vocabulary))
            and not _names_the_category(span, categories)
        ):
            unread.append(span)
    return scopes, unread


# --- which unread words matter -----------------------------------------------------------
# A figure question's words that no reader took are no reason to refuse it when they only
# say how the figure is asked ("calculate and show the working", "how much money did they
# actually keep", "pls"): removing them leaves the reading as it is. A word that changes
# the question always is: a number, a basis or a forecast, arithmetic the reading does not
# hold, another thing asked beside the figure, or a word that narrows the figure itself,
# written against its name ("Azure revenue", "revenue from China", "revenue per employee").

# Arithmetic and comparison words, by what a reading must hold for them to be answered.
_PERCENT_WORDS = re.compile(r"%|\bper\s?cent\w*|\bpct\b|\bpercentage[\s-]?wise\b", re.I)
_RATIO_WORDS = re.compile(r"\b(?:ratio|times|multiple|x)\b", re.I)
# (Comparatives such as "more" and "bigger" are filler: a lookup may use them too.)
_COMPARING_WORDS = re.compile(
    r"\b(?:rank\w*|order\w*|sort\w*|versus|vs|against|compar\w*|than|relative|near|ahead|behind"
    r"|beat|better|worse)\b",
    re.I,
)
_ARITHMETIC_WORDS = re.compile(
    r"\b(?:share|proportion|portion|fraction|difference|gap|sum|combined|average|mean"
    r"|median|per|each|split|mix|breakdown)\b",
    re.I,
)
# A basis written before the words it governs ("net of credits", "excluding leases").
_BASIS_BEFORE = re.compile(
    r"\b(?:net of|excluding|ex|before|after|less|minus|without|except|other than"
    r"|apart from|adjusted for)\s+(?:the\s+|its\s+|their\s+)?$",
    re.I,
)
# Joins another thing asked to the figure ("revenue and headcount").
_JOINED = re.compile(r"\b(?:and|or|plus|as well as|along with)\s*$", re.I)
# Between a figure's name and a word that narrows it: nothing, or a linking preposition.
_AGAINST_THE_NAME = re.compile(r"^[\s\-–]*$")
_ATTACHED_AFTER = re.compile(
    r"^\s+(?:from|of|in|at|for|per|by|across|outside|within|inside)\s+"
    r"(?:the\s+|its\s+|their\s+|his\s+|her\s+)?$",
    re.I,
)


# How an answer is to be given, not what it is about: its rounding, its units, and the
# request to answer at all. The unit word itself ("percents", "millions") is left to be
# read: it says in what a change is asked.
_ANSWER_FORMAT = re.compile(
    r"\b(?:in|as)\s+(?:the\s+)?units?\s+of\b"
    r"|\bround(?:ed|ing)?\s+(?:your\s+|the\s+)?(?:answer\s+|result\s+)?to\s+(?:the\s+)?"
    r"(?:nearest\s+\w+|(?:one|two|three|four|\d)\s+decimal(?:\s+places?|\s+points?)?)"
    r"|\b(?:please\s+)?(?:state|give|provide|express|report)\s+(?:your\s+|the\s+|an?\s+)?"
    r"(?:answer|response|result)s?\b(?:\s+to\s+the\s+question\b)?"
    r"|\b(?:answer|address)\s+the\s+question\b",
    re.IGNORECASE,
)


def answer_format_spans(question: str) -> list[tuple[int, int]]:
    """Where a question says how to give its answer ("round to one decimal place", "provide
    a response to the question"): words that change nothing of what is asked."""
    return [match.span() for match in _ANSWER_FORMAT.finditer(question)]


# English's closed class of quantifiers: before a figure's name they say how much of it, never
# which part ("enough cash" is the cash; "iPhone sales" are a part of the sales).
_QUANTIFIERS = frozenset(
    str.split(
        "enough sufficient all any some every each no much many few little several both "
        "either neither such another plenty"
    )
)


# Numbers written in words ("twenty twenty-two"): a period or an amount nothing read.
_NUMBER_WORDS = re.compile(
    r"\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen"
    r"|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty"
    r"|sixty|seventy|eighty|ninety)\b",
    re.I,
)
# A word right after a figure's name heads a compound ("repurchase authorization", "revenue
# guidance") unless it is a verb saying how the figure moved or was asked: an inflected
# form, or one of the base forms of movement.
_MOVEMENT_VERBS = frozenset(
    str.split(
        "jump grow rise fall drop climb change go move come look stand compare increase "
        "decrease decline surge soar plunge slump shrink swing"
    )
)


def _a_verb(word: str) -> bool:
    word = word.lower()
    return bool(_INFLECTED.match(word)) or word.rstrip("s") in _MOVEMENT_VERBS


# A capital after the end of a sentence starts the next one; it names nothing.
_SENTENCE_END = re.compile(r"[.?!:;]\)?\s*$")
_AFTER_A_NAME = re.compile(r"\b[A-Z][\w.&'-]*\s+$")


def _proper_name(word: str) -> bool:
    # Capitalised mid-sentence, and not an acronym (those are units, bases or tickers).
    return word[:1].isupper() and not word.isupper() and len(word) > 2


def unread_matters(
    span: TextSpan,
    question: str,
    figure_spans: Sequence[tuple[int, int]],
    units: frozenset[str],
    compared: bool,
) -> bool:
    """Whether a span of a figure question that nothing read changes what is asked (see
    above). `figure_spans` are where the question names its figures, `units` their units,
    and `compared` whether the reading holds several companies or periods to compare."""
    text = span.text
    if any(character.isdigit() for character in text) or changes_basis(text):
        return True
    if _NUMBER_WORDS.search(text):
        return True
    if _PERCENT_WORDS.search(text) and "%" not in units:
        return True
    if _RATIO_WORDS.search(text) and not units & {"x", "%"}:
        return True
    if _COMPARING_WORDS.search(text) and not compared:
        return True
    if _ARITHMETIC_WORDS.search(text):
        return True
    rest = [
        word
        for word in _WORD.findall(
            _COMPARING_WORDS.sub(" ", _RATIO_WORDS.sub(" ", _PERCENT_WORDS.sub(" ", text)))
        )
        if not _is_filler(word)
    ]
    if not rest:
        return False
    if _JOINED.search(question[: span.start]) or _BASIS_BEFORE.search(question[: span.start]):
        return True
    before = question[: span.start]
    if (
        before.strip()
        and not _AFTER_A_NAME.search(before)
        and not _SENTENCE_END.search(before)
        and any(_proper_name(word) for word in rest)
    ):
        # A name nothing read ("LinkedIn", "Germany", "Azure") is a part of the company the
        # figure is asked of, wherever it stands: a segment, a product, a region. One that
        # goes on a name ("Apple Computer Inc.", "Alphabet Class C") is that name's.
        return True
    for start, end in figure_spans:
        between = question[end : span.start] if end <= span.start else None
        if between is not None and _ATTACHED_AFTER.match(between):
            return True
        if between is not None and _AGAINST_THE_NAME.match(between) and not _a_verb(rest[0]):
            return True
        if (
            span.end <= start
            and _AGAINST_THE_NAME.match(question[span.end : start])
            and not all(word.lower() in _QUANTIFIERS for word in rest)
        ):
            return True
    return False
