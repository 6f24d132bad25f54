"""The asked thing, read out of the sentence that answers it: "463 retail stores", "August
28, 2020", "Ernst & Young LLP", "from $175 billion to $210 billion".

A passage answer quotes the sentence that answers; a reader should not have to find the
answer in it. By the kind of answer the question asks (`shared.filing_text.asks`: a figure,
a count, a date, a name), every span of that kind in the sentence is a candidate, and the
one nearest the words the question and the sentence share is the answer: in "On September
26 the Company had 463 retail stores in 24 countries", a count asked of "retail stores" is
463, neither the 26 of the date nor the 24 countries. Nothing is reworded: each span is the
filing's own text, so the validator holds its numbers to the passage like the quote's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.filing_text import (
    STOP_WORDS,
    ask_words,
    asked_wordings,
    asks,
    counts_in,
    plain,
    stem,
    terms,
)

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_QUALIFIER = r"(?:(?:approximately|about|nearly|over|more than|less than|up to|almost)\s+)?"
_QUALIFIER_BEFORE = re.compile(
    r"\b(?:approximately|about|nearly|over|more than|less than|up to|almost|roughly)\s+$", re.I
)
_SCALE = r"(?:\s+(?:million|billion|thousand|trillion))?"
_MONEY = re.compile(rf"{_QUALIFIER}\$\s?\d[\d,]*(?:\.\d+)?{_SCALE}", re.IGNORECASE)
_PERCENT = re.compile(rf"{_QUALIFIER}\d[\d,]*(?:\.\d+)?\s?%", re.IGNORECASE)
# A figure printed whole, with its thousands grouped: "164,000", "83,953".
_GROUPED = re.compile(rf"{_QUALIFIER}(?<![\d$.,])\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?(?![\d%])", re.I)
_SCALED = re.compile(rf"{_QUALIFIER}\d[\d,]*(?:\.\d+)?\s+(?:million|billion|thousand)\b", re.I)
_FULL_DATE = re.compile(rf"\b(?:{_MONTHS})\s+\d{{1,2}},\s+(?:19|20)\d\d\b")
_MONTH_YEAR = re.compile(rf"\b(?:{_MONTHS})\s+(?:19|20)\d\d\b")
_SINCE_YEAR = re.compile(r"\b(?:since|in|from)\s+(?:19|20)\d\d\b")
# "from $175 billion to $210 billion": a change told as its two ends, said whole.
_FROM_TO = re.compile(r"\bfrom\s+(?P<first>.{1,40}?)\s+to\s+(?P<second>.{1,40})", re.IGNORECASE)
# A run of capitalised words (with "&", "of" and "and" between them): a proper name.
_NAME = re.compile(r"(?:[A-Z][\w'’.-]*|&)(?:\s+(?:(?:of|and|de|the)\s+)?(?:[A-Z][\w'’.-]*|&))*")
# The words after a count that may say what it counts ("salaried and hourly staff members").
_COUNTED_NOUNS = 6
# Capitalised words that begin sentences or name the filer, its parts or the calendar.
_NOT_NAMES = frozenset(
    str.split(
        "the a an we our us in on as at for during of by to its it this these those company "
        "company's companys inc inc. corporation corp item part form note notes fiscal year "
        "see refer however also such each all any if when while since under other total "
        "consolidated board directors"
    )
) | {m.lower() for m in _MONTHS.split("|")}
# Words as `shared.filing_text.words` reads them ("full-time" is two).
_WORD = re.compile(r"[A-Za-z0-9]+")


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    text: str


def _bare(word: str) -> str:
    return word.lower().replace("’", "'").removesuffix("'s").strip(".,")


def _stem(word: str) -> str:
    # As `shared.filing_text.terms` stems the question's words.
    return stem(_bare(word))


def _figure_spans(sentence: str) -> list[Span]:
    found: list[Span] = []
    for pattern in (_MONEY, _PERCENT, _SCALED, _GROUPED):
        for match in pattern.finditer(sentence):
            if not any(s.start <= match.start() < s.end for s in found):
                found.append(Span(match.start(), match.end(), match.group()))
    return found


def _count_spans(sentence: str, asked: set[str]) -> list[Span]:
    """Counts with the words after them that name what they count, the question's words:
    "463 retail stores", "approximately 36,000 employees"."""
    found = []
    for match in counts_in(sentence):
        qualified = _QUALIFIER_BEFORE.search(sentence[: match.start()])
        start = qualified.start() if qualified else match.start()
        end = match.end()
        for position, word in enumerate(_WORD.finditer(sentence[end:])):
            if position >= _COUNTED_NOUNS:
                break
            if _stem(word.group()) in asked:
                end = match.end() + word.end()
        if end > match.end() or not asked:
            # A count answers "how many X" when X follows it ("463 retail stores"); "about 24
            # months" counts something else.
            found.append(Span(start, end, sentence[start:end]))
    return found


def _date_spans(sentence: str) -> list[Span]:
    found: list[Span] = []
    for pattern in (_FULL_DATE, _MONTH_YEAR, _SINCE_YEAR):
        for match in pattern.finditer(sentence):
            if not any(s.start <= match.start() < s.end for s in found):
                found.append(Span(match.start(), match.end(), match.group()))
    return found


def _name_spans(sentence: str, asked: set[str], ignored: set[str]) -> list[Span]:
    found = []
    for match in _NAME.finditer(sentence):
        tokens = match.group().split()
        # Leading words that begin a sentence or name the filer are not the name.
        while tokens and (_bare(tokens[0]) in _NOT_NAMES or _stem(tokens[0]) in ignored):
            tokens = tokens[1:]
        while tokens and (
            tokens[-1] in ("&", "of", "and", "the", "de") or _bare(tokens[-1]) in _NOT_NAMES
        ):
            tokens = tokens[:-1]
        named = [t for t in tokens if t not in ("&", "of", "and", "the", "de")]
        if not named or all(_bare(t) in _NOT_NAMES or _stem(t) in ignored for t in named):
            continue
        if len(named) == 1 and (
            re.match(r"\s+\d", sentence[match.end() :]) or not sentence[: match.start()].strip()
        ):
            # A word before a number labels it ("Rule 10b5-1", "Note 5", "Section 16"); a
            # sentence's first word is capitalised whatever it is.
            continue
        if _stem(named[0]) in asked:
            # A name led by a word asked is a kind of the asked thing ("the Exchange Act"
            # for "which exchange"), not the name that answers; one holding it further on
            # may be ("The Nasdaq Stock Market" for "where does its stock trade").
            continue
        text = " ".join(tokens)
        start = sentence.find(text, match.start())
        found.append(Span(start, start + len(text), text))
    return found


def _joined_from_to(sentence: str, spans: list[Span]) -> list[Span]:
    """Two spans written "from A to B" become one: the change is the answer, both ends."""
    for match in _FROM_TO.finditer(sentence):
        first = next((s for s in spans if s.start == match.start("first")), None)
        second = next((s for s in spans if s.start == match.start("second")), None)
        if first is not None and second is not None:
            joined = Span(match.start(), second.end, sentence[match.start() : second.end])
            spans = [s for s in spans if s not in (first, second)] + [joined]
    return spans


def spans_of_kind(sentence: str, kind: str, asked: set[str], ignored: set[str]) -> list[Span]:
    """Every span of `sentence` that answers a question asking for `kind`."""
    if kind == "figure":
        return _joined_from_to(sentence, _figure_spans(sentence))
    if kind == "count":
        return _count_spans(sentence, asked)
    if kind == "date":
        return _joined_from_to(sentence, _date_spans(sentence))
    if kind in ("name", "place"):
        return _name_spans(sentence, asked, ignored)
    return []


def _nearest(
    sentence: str, spans: list[Span], asked: set[str], topic: set[str] | None = None
) -> Span | None:
    """The span nearest (in words) to a word of the question's own topic, then to any word
    it asked about (the filings' wordings of its ask too); the first on a tie."""
    if not spans:
        return None
    words = list(_WORD.finditer(sentence))

    def anchored(stems: set[str]) -> list[int]:
        return [
            i
            for i, word in enumerate(words)
            if word.group().lower() not in STOP_WORDS and _stem(word.group()) in stems
        ]

    nearest_topic, nearest_asked = anchored(topic or set()), anchored(asked)

    def distance(span: Span, anchors: list[int]) -> int:
        if not anchors:
            return 0
        inside = [i for i, w in enumerate(words) if span.start <= w.start() < span.end] or [0]
        return min(abs(i - a) for i in (inside[0], inside[-1]) for a in anchors)

    return min(
        spans,
        key=lambda span: (
            distance(span, nearest_topic),
            distance(span, nearest_asked),
            span.start,
        ),
    )


# The kinds a lead answers, in the order it says them: who, then when, then how much.
LEAD_KINDS = ("name", "place", "count", "figure", "date")


def lead_kinds(kinds: set[str]) -> tuple[str, ...]:
    """The kinds of answer asked that a lead states, in `LEAD_KINDS` order; a count asked as
    "how many" is the figure asked, not a second one."""
    return tuple(k for k in LEAD_KINDS if k in kinds and not (k == "figure" and "count" in kinds))


def answer_span(
    sentence: str,
    kind: str,
    asked: set[str],
    ignored: set[str],
    topic: set[str] | None = None,
) -> str | None:
    """The text of `sentence` that answers a question asking for `kind` about the words
    `asked` (stems, as `shared.filing_text.terms`), or None when it holds none;
    `ignored` are words that name the filer, never an answer ("Apple Inc."); `topic`, the
    question's own words of its subject, place the answer before the ask's wordings do."""
    spans = spans_of_kind(sentence, kind, asked, ignored)
    best = _nearest(sentence, spans, asked, topic)
    return best.text if best is not None else None


# Sentences of a passage's prose: terminal punctuation before a capital or a quote.
SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]”]*\s+(?=[A-Z\"'(\[“•])")
# The share of the question's topic words a sentence must hold to answer it squarely.
TOPIC_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class AskedThing:
    """What a question asks a filing for: the kinds of answer (`LEAD_KINDS`), its topic
    words (without the company's name and the words of a common ask) and every word it says
    with the filings' wordings of its ask (stems, as `shared.filing_text.terms`)."""

    kinds: tuple[str, ...]
    topic: frozenset[str]
    said: frozenset[str]
    wordings: tuple[str, ...]  # how filings word the answer to its ask, lower case
    ignored: frozenset[str]  # the company's name: never an answer


def asked_thing(question: str, company_words: set[str]) -> AskedThing | None:
    """The thing `question` asks for, or None when it asks for no count, figure, date or
    name (what a filing says about a topic)."""
    lead = lead_kinds(set(asks(question)))
    if not lead:
        return None
    wordings = tuple(dict.fromkeys(say for w in asked_wordings(question) for say in w.answers))
    named = terms(question, ignore=company_words)
    return AskedThing(
        kinds=lead,
        topic=frozenset(named - ask_words(question)),
        said=frozenset(named | terms(" ".join(wordings))),
        wordings=wordings,
        ignored=frozenset(terms(" ".join(company_words))),
    )


def squarely_answered(asked: AskedThing, text: str, weights: dict[str, float]) -> bool:
    """Whether a sentence of `text` answers `asked` squarely: it words the answer as filings
    word that ask, or (an ask with no such wording) holds half its topic words by weight
    (`weights`: a rare word like "Germany" counts more than "sales"; 1 for a word not
    given); and it holds a span of every kind asked. A passage that only mentions the topic
    does not."""
    whole = sum(weights.get(term, 1.0) for term in asked.topic)
    for sentence in SENTENCE_END.split(" ".join(text.split())):
        said = terms(sentence)
        if asked.wordings:
            # A common ask ("holders of record", "employees") is answered in the filings'
            # wording of it, whatever else the sentence repeats of the question.
            on_topic = any(phrase in plain(sentence) for phrase in asked.wordings)
        else:
            held = sum(weights.get(term, 1.0) for term in asked.topic & said)
            on_topic = bool(asked.topic) and held >= TOPIC_SHARE * whole
        if on_topic and all(
            answer_span(sentence, kind, set(asked.said), set(asked.ignored)) is not None
            for kind in asked.kinds
        ):
            return True
    return False
