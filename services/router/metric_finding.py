"""Which metrics a question names, including misspelt and paraphrased ones.

Exact catalog phrases are found first over the normalized question (longest phrase wins, so
"operating cash flow" beats "cash"; the normalizer has already turned the statement's
wording of it, cash its operations generated, into "operating cash flow"). Two of them that
the words between them put one over the other ("what share of revenue went to R&D", "R&D
relative to revenue") become the catalog ratio of that formula, read by the resolver's ratio
grammar, instead of its two inputs. What is left once companies, periods and question words
are taken out is tried against the resolver's fallbacks: runs of leftover words, longest
windows first, fuzzy; then, only if no metric was found at all, the embedding fallback over
each whole run. Leftover runs that nothing resolves are reported, so the router can name
them and the three closest metrics, or, beside a metric, refuse to answer a part of a figure
("iPhone net sales") with the whole; words that only restate the figure ("net", "total",
"spend on") are not reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from shared.metric_catalog import METRICS_BY_ID
from shared.metric_resolver import (
    RATIO_PART_WORDS,
    MetricResolver,
    Resolution,
    normalize_phrase,
)

# Words that carry no metric meaning in a question. Kept apart from the resolver's stop
# words, which apply to metric names themselves ("in" is part of "cash in hand").
_QUESTION_WORDS = frozenset(
    str.split(
        "what whats was were is are be been how much many did does do doe has have had show "
        "me tell give list please i we you they them it this that these those in on at to "
        "from between and or vs versus v compare compared comparison with by over during "
        "last past previous recent latest current year quarter month day fiscal fy calendar "
        "ttm ltm trailing twelve q1 q2 q3 q4 first second third fourth 1st 2nd 3rd 4th "
        "annual annually quarterly yearly through thru until which who whose when where "
        "more less higher lower than most least biggest largest smallest highest lowest "
        "better worse value figure number amount level report reported reporting "
        "about as per each all both any inc corp corporation co ltd plc class stock share "
        "ticker one two three four five six seven eight nine ten up down so far there "
        "since ago around roughly approximately exactly total not no yes grow grew growth "
        "change changed increase increased rise rose fall fell decline declined trend "
        "cagr compound rate yoy divided"
    )
)
# Words that only restate a figure the question names ("net", "total", "the combined …",
# "how much did it spend on R&D"): left over beside a metric they say nothing the metric
# does not, so they are no qualifier for the router to stop at. Words that narrow the
# figure ("iphone", "services", "greater china") are not here.
_RESTATING_WORDS = frozenset(
    str.split(
        "net total overall consolidated aggregate entire whole combined ratio multiple balance "
        "spend spends spent spending generate generates generated earn earns earned "
        "make makes made post posts posted book books booked bring brings brought "
        "outlay outlays expense expenses expensed"
    )
)
# Words that join two words of a name: "return on assets", "days of inventory".
_JOINING_WORDS = frozenset({"on", "of", "to", "per", "over"})
_NUMBER = re.compile(r"^\d+[a-z]?$|^(?:19|20)\d{2}$|^fy\d{2,4}$|^q[1-4]$")
# A run longer than this is a sentence, not a metric name; windows inside it are tried.
_MAX_WINDOW = 5
# Words between the two metrics of a ratio: "as a percentage of" is three after
# normalizing, "did the company spend on" four.
_MAX_RATIO_JOIN = 5
# Words before a ratio's two metrics that ask for the part one is of the other, and words
# after them that only say it is a ratio.
_RATIO_OPENERS = RATIO_PART_WORDS | {"ratio"}
_RATIO_CLOSERS = frozenset({"ratio", "percent"})
_PER_SHARE_WORDS = frozenset({"share", "outstanding", "price"})


@dataclass(frozen=True)
class _Span:
    """One word of the question, or the words of one metric it names."""

    words: tuple[str, ...]
    metric: str | None = None
    reading: Resolution | None = None  # when a fallback or a ratio's grammar read it


@dataclass(frozen=True)
class ExactScan:
    metrics: list[str]
    leftover: list[str]  # the words no exact phrase took, "|" where one did
    # A misspelt word in front of an exact phrase that together name a longer metric
    # ("opearting cash flow"), read by fuzzy match; two exact names that the words between
    # them make a ratio ("share of revenue went to R&D"), read by the ratio grammar. Both
    # are kept apart from the exact names.
    extended: list[Resolution] = field(default_factory=list)
    # The (normalized) words of each exact name found, in order: where the figure is named.
    phrases: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class MetricMatches:
    metrics: list[str]  # catalog ids in the order the question names them
    resolutions: list[Resolution] = field(default_factory=list)  # the fallback ones only
    unresolved: list[str] = field(default_factory=list)  # leftover phrases nothing matched


@dataclass
class MetricFinder:
    resolver: MetricResolver
    # Normalized company names and tickers, so "apple" is never tried as a metric.
    company_words: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        # The longest phrase starting with each word: most words of a question start none.
        self._longest: dict[str, int] = {}
        for phrase in [*self.resolver.phrases, *self.resolver.learned]:
            self._note_phrase(phrase)

    def _note_phrase(self, phrase: str) -> None:
        words = phrase.split()
        if words:
            self._longest[words[0]] = max(self._longest.get(words[0], 0), len(words))

    def learn(self, phrase: str, metric_id: str) -> None:
        self.resolver.learn(phrase, metric_id)
        self._note_phrase(normalize_phrase(phrase))

    def exact(self, question: str) -> ExactScan:
        """The catalog and learned metrics a question names exactly, in order, and the
        words around them."""
        return ExactScan(*self._exact(normalize_phrase(question)))

    def find(self, question: str | ExactScan) -> MetricMatches:
        """Exact matches, then the fallbacks over what is left of the question."""
        scan = self.exact(question) if isinstance(question, str) else question
        metrics, leftover = list(scan.metrics), scan.leftover
        runs = [run for run in self._content_runs(leftover) if run]
        resolutions: list[Resolution] = list(scan.extended)
        unresolved: list[str] = []
        for run in runs:
            found, rest = self._fuzzy_windows(run)
            resolutions.extend(found)
            unresolved.extend(" ".join(words) for words in rest if words)
        if not metrics and not resolutions and unresolved and self.resolver.embedder is not None:
            # Question words split a paraphrase into pieces ("money … spend on research"):
            # the pieces together say more than any one of them.
            whole = " ".join(unresolved)
            match = self.resolver.embedding(whole)
            if match is not None:
                resolutions.append(match)
                unresolved = []
            elif len(unresolved) > 1:
                still: list[str] = []
                for phrase in unresolved:
                    match = self.resolver.embedding(phrase)
                    if match is None:
                        still.append(phrase)
                    else:
                        resolutions.append(match)
                unresolved = still if resolutions else [whole]
            else:
                unresolved = [whole]
        for resolution in resolutions:
            if resolution.metric_id not in metrics:
                metrics.append(resolution.metric_id)
        if metrics:
            unresolved = [phrase for phrase in map(_without_restating, unresolved) if phrase]
        return MetricMatches(metrics, resolutions, unresolved)

    def _exact(self, normalized: str) -> tuple[list[str], list[str], list[Resolution], list[str]]:
        """Catalog and learned phrases in the question, longest first at each word (so
        "operating cash flow" beats "cash"), two of them joined into the ratio they ask
        for ("R&D as a share of sales"); the other words, with "|" where a phrase was."""
        spans = self._ratios(self._spans(normalized.split()))
        metrics: list[str] = []
        leftover: list[str] = []
        extended: list[Resolution] = []
        phrases: list[str] = []
        for span in spans:
            if span.metric is None:
                leftover.extend(span.words)
                continue
            leftover.append("|")
            phrases.append(" ".join(span.words))
            if span.reading is not None:
                extended.append(span.reading)
            elif span.metric not in metrics:
                metrics.append(span.metric)
        return metrics, leftover, extended, phrases

    def _spans(self, words: list[str]) -> list[_Span]:
        """The question's words, each alone or in the longest catalog or learned phrase
        that starts with it."""
        spans: list[_Span] = []
        start = 0
        while start < len(words):
            for size in range(min(self._longest.get(words[start], 0), len(words) - start), 0, -1):
                phrase = " ".join(words[start : start + size])
                metric = self.resolver.phrases.get(phrase) or self.resolver.learned.get(phrase)
                if metric is not None:
                    # The one or two words before the name that no name took.
                    before: list[str] = []
                    for span in reversed(spans[-2:]):
                        if span.metric is not None:
                            break
                        before.insert(0, span.words[0])
                    longer, taken, used = self._misspelt_prefix(before, words[start:], size)
                    # A slip before the name may make it a longer one ("opearting cash
                    # flow") or the same one written in full ("stockholdrs equity",
                    # "retrun on assets").
                    if longer is not None:
                        slipped = tuple(word for span in spans[-used:] for word in span.words)
                        del spans[-used:]
                        spans.append(
                            _Span(
                                (*slipped, *words[start : start + taken]),
                                longer.metric_id,
                                longer,
                            )
                        )
                        start += taken
                        break
                    spans.append(_Span(tuple(words[start : start + size]), metric))
                    start += size
                    break
            else:
                spans.append(_Span((words[start],)))
                start += 1
        return spans

    def _ratios(self, spans: list[_Span]) -> list[_Span]:
        """Two named metrics that the words between them (and a "share of" before them)
        put one over the other, as the one catalog ratio they name: "what share of revenue
        went to R&D", "R&D relative to revenue", "ratio of capex to revenue"."""
        merged: list[_Span] = []
        taken_until = 0
        for left, span in enumerate(spans):
            if span.metric is None or left < taken_until:
                continue
            for right in self._ratio_denominators(spans, left):
                first, last = self._ratio_edges(spans, left, right)
                words = [
                    word
                    for part in spans[first : last + 1]
                    for word in part.words
                    if word not in self.company_words and not _NUMBER.match(word)
                ]
                reading = self.resolver.ratio(" ".join(words))
                if reading is not None:
                    merged.extend(spans[taken_until:first])
                    merged.append(_Span(tuple(words), reading.metric_id, reading))
                    taken_until = last + 1
                    break
        return [*merged, *spans[taken_until:]]

    @staticmethod
    def _ratio_denominators(spans: list[_Span], left: int) -> list[int]:
        """Where the other side of a ratio starting at `left` may end: the next metric the
        question names, or the share count or price words a per-share figure divides by
        ("revenue divided by shares outstanding")."""
        ends: list[int] = []
        for right in range(left + 1, min(len(spans), left + _MAX_RATIO_JOIN + 2)):
            if spans[right].metric is not None:
                return [*ends, right]
            if spans[right].words[0] in _PER_SHARE_WORDS:
                ends.append(right)
        return ends

    def _ratio_edges(self, spans: list[_Span], left: int, right: int) -> tuple[int, int]:
        """The first and last span of a ratio's phrase: its two metrics, and before them
        the word that asks for a part ("share of", "how much of", "ratio of"; company names
        may stand between), after them "ratio" or "percent"."""
        first = left
        position = left - 1
        while position >= 0 and spans[position].metric is None:
            word = spans[position].words[0]
            if word in self.company_words:
                position -= 1
                continue
            if word in _RATIO_OPENERS:
                first = position
            elif word == "much" and position > 0 and spans[position - 1].words == ("how",):
                first = position - 1
            break
        last = right
        if right + 1 < len(spans) and spans[right + 1].words[0] in _RATIO_CLOSERS:
            last = right + 1
        return first, last

    def _misspelt_prefix(
        self, leftover: list[str], rest: list[str], size: int
    ) -> tuple[Resolution | None, int, int]:
        """The metric that the word before an exact phrase names with it and up to two
        words after it, when that word is a slip ("opearting" + "cash" + "flow" → operating
        cash flow), or a slip and a joining word ("retrun" + "on" + "assets"); how many
        words from the phrase's start it took, and how many words before it."""
        if not leftover:
            return None, 0, 0
        if len(leftover) == 2 and leftover[-1] in _JOINING_WORDS:
            slip, before = leftover[0], leftover
        else:
            slip, before = leftover[-1], leftover[-1:]
        if slip in _QUESTION_WORDS or slip in self.company_words:
            return None, 0, 0
        if _NUMBER.match(slip) or slip in self.resolver.vocabulary:
            return None, 0, 0
        for taken in range(min(len(rest), size + 2), size - 1, -1):
            match = self.resolver.fuzzy(" ".join([*before, *rest[:taken]]))
            if match is not None:
                return match, taken, len(before)
        return None, 0, 0

    def _content_runs(self, words: Iterable[str]) -> list[list[str]]:
        runs: list[list[str]] = [[]]
        for word in words:
            if (
                word == "|"
                or word in _QUESTION_WORDS
                or word in self.company_words
                or _NUMBER.match(word)
            ):
                runs.append([])
            else:
                runs[-1].append(word)
        return runs

    def _fuzzy_windows(self, run: list[str]) -> tuple[list[Resolution], list[list[str]]]:
        """Composed and fuzzy matches inside one run of words, longest windows first; the
        words no window matched, split into the runs they leave."""
        for size in range(min(len(run), _MAX_WINDOW), 0, -1):
            for start in range(len(run) - size + 1):
                phrase = " ".join(run[start : start + size])
                match = self.resolver.composed(phrase) or self.resolver.fuzzy(phrase)
                if match is None:
                    continue
                before, before_rest = self._fuzzy_windows(run[:start])
                after, after_rest = self._fuzzy_windows(run[start + size :])
                return [*before, match, *after], [*before_rest, *after_rest]
        return [], [run]


def _without_restating(phrase: str) -> str:
    return " ".join(word for word in phrase.split() if word not in _RESTATING_WORDS)


def describe_unknown(phrase: str, resolver: MetricResolver) -> str:
    """ "I don't know the metric 'ceo salary'; the closest are …" for a clarifying reply."""
    closest = resolver.closest(phrase)
    names = ", ".join(METRICS_BY_ID[m].label.lower() for m in closest)
    return f"I don't know a metric called {phrase!r}; the closest I hold are {names}."


_WORD_PATTERN = r"[A-Za-z][\w-]*"
_JOIN = r"(?:and|or|&|\+|plus)"
# "current and noncurrent liabilities", "short and long term borrowings": two modifiers
# sharing the head noun (one word or two) after them.
_MODIFIERS_BEFORE = re.compile(
    rf"\b(?P<a>{_WORD_PATTERN}) (?P<join>{_JOIN}) (?P<b>{_WORD_PATTERN})"
    rf" (?P<head>{_WORD_PATTERN}(?: {_WORD_PATTERN})?)\b"
)
# "liabilities: current and noncurrent": the head noun first, its two modifiers after it.
_MODIFIERS_AFTER = re.compile(
    rf"\b(?P<head>{_WORD_PATTERN})\s*[,:(]\s*(?P<a>{_WORD_PATTERN})\s*(?P<join>{_JOIN})\s*"
    rf"(?P<b>{_WORD_PATTERN})\b"
)


def distributed(text: str, resolver: MetricResolver) -> str:
    """The text with a head noun two modifiers share written out for each: "current and
    noncurrent liabilities" → "current liabilities and noncurrent liabilities", "debt:
    short-term plus long-term" → "short-term debt plus long-term debt". Only where both
    halves are catalog names and the first modifier alone is none, so "revenue and net
    income" and "Apple and Microsoft revenue" stay as written."""

    def names(words: str) -> bool:
        return resolver.exact(words) is not None

    def spread(match: re.Match[str]) -> str:
        a, b, join = match["a"], match["b"], match["join"]
        if names(a):
            return match.group(0)
        head = match["head"]
        words = head.split(" ")
        # The longer head first ("term borrowings"), then its first word alone.
        for size in range(len(words), 0, -1):
            shared = " ".join(words[:size])
            rest = head[len(shared) :]
            if names(f"{a} {shared}") and names(f"{b} {shared}"):
                written = f"{a} {shared} {join} {b} {shared}{rest}"
                return match.group(0)[: match.start("a") - match.start()] + written
        return match.group(0)

    return _MODIFIERS_AFTER.sub(spread, _MODIFIERS_BEFORE.sub(spread, text))
