"""Training the router's intent classifier (layer 2) from the registry's example templates.

Templates are filled with the bundled dataset's companies, the catalog's metric names,
years, quarters, forms, dates and terms, then varied the way people type (lower case, no
punctuation, a slipped letter). The split is by template, so the test score says how the
classifier does on phrasings it never saw, not how well it remembers. Everything is seeded:
the same seed writes the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sklearn.linear_model import LogisticRegression

from services.ingest.dataset import DEFAULT_DATASET_DIR
from services.router.intent_classifier import (
    ARTIFACTS_DIR,
    VERSION,
    Embedder,
    IntentClassifier,
    write_artifacts,
)
from shared.intents import INTENTS
from shared.metric_catalog import CATALOG, CATEGORIES, mid_sentence

DEFAULT_SEED = 20261122
DEFAULT_PER_TEMPLATE = 30
# Inverse regularization of the logistic regression: 1-16 scored within a point on the
# validation split; the middle is kept.
REGULARIZATION = 4.0
_SLOT = re.compile(r"\{(\w+)\}")
_TERMS = (
    "EBITDA", "P/E ratio", "free cash flow", "a Roth IRA", "an ETF", "dividend yield",
    "market cap", "book value", "working capital", "ROE", "ROIC", "diversification",
    "the quick ratio", "operating leverage", "a stock split", "EPS",
)  # fmt: skip
_FORMS = ("10-K", "10-Q", "8-K", "annual report", "quarterly report", "10k", "proxy statement")
_NUMBERS = ("2", "3", "4", "5", "10", "two", "three", "five", "ten")
_MONTHS = ("January", "March", "June", "September", "Dec", "Oct.")


@dataclass(frozen=True)
class Example:
    text: str
    intent: str
    template: str


def _companies() -> list[str]:
    companies = json.loads((DEFAULT_DATASET_DIR / "companies.json").read_text())
    names: list[str] = []
    for company in companies:
        names.extend([company["symbol"], company["display_name"], *company.get("aliases", [])])
    return sorted(set(names))


def _slot_values() -> dict[str, tuple[str, ...]]:
    metrics = sorted(
        {mid_sentence(m.label) for m in CATALOG} | {a for m in CATALOG for a in m.aliases[:2]}
    )
    years = [str(y) for y in range(2012, 2026)]
    return {
        "company": tuple(_companies()),
        "metric": tuple(metrics),
        "year": tuple(years + [f"FY{y}" for y in years[-6:]] + ["fiscal 2023", "FY23"]),
        "quarter": ("Q1", "Q2", "Q3", "Q4", "the third quarter", "Q3 FY2024", "first quarter"),
        "form": _FORMS,
        "date": ("2024-03-15", "March 15, 2024", "3/15/2024", "Jan 3 2023", "2022-11-30"),
        "n": _NUMBERS,
        "category": tuple(c.replace("_", " ") for c in CATEGORIES),
        "term": _TERMS + tuple(metrics[::7]),
    }


def _fill(template: str, values: dict[str, tuple[str, ...]], rng: random.Random) -> str:
    chosen: dict[str, str] = {}

    def pick(match: re.Match[str]) -> str:
        slot = match.group(1)
        base = slot.rstrip("2")
        if slot not in chosen:
            options = [v for v in values[base] if v not in chosen.values()] or list(values[base])
            chosen[slot] = rng.choice(options)
        return chosen[slot]

    return _SLOT.sub(pick, template)


def _typo(text: str, rng: random.Random) -> str:
    """One slip in one word of four letters or more: a swap, a drop or a double."""
    words = text.split()
    candidates = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
    if not candidates:
        return text
    i = rng.choice(candidates)
    word, at = words[i], rng.randrange(1, len(words[i]) - 1)
    kind = rng.randrange(3)
    if kind == 0:
        word = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    elif kind == 1:
        word = word[:at] + word[at + 1 :]
    else:
        word = word[:at] + word[at] + word[at:]
    words[i] = word
    return " ".join(words)


def _vary(text: str, rng: random.Random) -> str:
    if rng.random() < 0.35:
        text = text.lower()
    if rng.random() < 0.3:
        text = re.sub(r"[?.!,]", "", text)
    if rng.random() < 0.3:
        text = _typo(text, rng)
    return text


def build_dataset(
    seed: int = DEFAULT_SEED, per_template: int = DEFAULT_PER_TEMPLATE
) -> dict[str, list[Example]]:
    """Train, validation and test examples; each template's examples stay in one split."""
    rng = random.Random(seed)
    values = _slot_values()
    splits: dict[str, list[Example]] = {"train": [], "val": [], "test": []}
    for intent in INTENTS:
        if not intent.examples:
            continue
        templates = list(intent.examples)
        rng.shuffle(templates)
        held = max(1, round(len(templates) * 0.15))
        assignment = {
            **{t: "test" for t in templates[:held]},
            **{t: "val" for t in templates[held : 2 * held]},
            **{t: "train" for t in templates[2 * held :]},
        }
        for template, split in assignment.items():
            seen: set[str] = set()
            count = per_template if _SLOT.search(template) else max(3, per_template // 5)
            for _ in range(count * 3):
                text = _vary(_fill(template, values, rng), rng)
                if text not in seen:
                    seen.add(text)
                    splits[split].append(Example(text, intent.name, template))
                if len(seen) >= count:
                    break
    return splits


@dataclass
class TrainingReport:
    seed: int
    sizes: dict[str, int]
    accuracy: dict[str, float]
    per_intent_test: dict[str, float]
    seconds: float
    artifacts: Path | None

    def as_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "sizes": self.sizes,
            "accuracy": self.accuracy,
            "per_intent_test": self.per_intent_test,
        }


def train(
    embedder: Embedder,
    seed: int = DEFAULT_SEED,
    per_template: int = DEFAULT_PER_TEMPLATE,
    out: Path | None = ARTIFACTS_DIR,
) -> tuple[IntentClassifier, TrainingReport]:
    started = time.perf_counter()
    splits = build_dataset(seed, per_template)
    embeddings = {
        name: embedder.encode([e.text for e in examples]) for name, examples in splits.items()
    }
    model = LogisticRegression(C=REGULARIZATION, max_iter=3000, random_state=seed)
    model.fit(embeddings["train"], [e.intent for e in splits["train"]])
    classifier = IntentClassifier(
        [str(c) for c in model.classes_], model.coef_, model.intercept_, embedder
    )
    accuracy: dict[str, float] = {}
    per_intent: dict[str, float] = {}
    for name, examples in splits.items():
        probabilities = classifier.probabilities_of(embeddings[name])
        predicted = [classifier.classes[i] for i in probabilities.argmax(axis=1)]
        right = [p == e.intent for p, e in zip(predicted, examples, strict=True)]
        accuracy[name] = round(sum(right) / len(right), 4) if right else 0.0
        if name == "test":
            totals = Counter(e.intent for e in examples)
            hits = Counter(e.intent for e, ok in zip(examples, right, strict=True) if ok)
            per_intent = {k: round(hits[k] / totals[k], 4) for k in sorted(totals)}
    report = TrainingReport(
        seed=seed,
        sizes={k: len(v) for k, v in splits.items()},
        accuracy=accuracy,
        per_intent_test=per_intent,
        seconds=round(time.perf_counter() - started, 2),
        artifacts=out,
    )
    if out is not None:
        dataset_digest = hashlib.sha256(
            "\n".join(f"{e.intent}\t{e.text}" for e in splits["train"]).encode()
        ).hexdigest()
        write_artifacts(
            classifier,
            out,
            {"version": VERSION, "dataset_sha256": dataset_digest, **report.as_json()},
        )
    return classifier, report
