"""The router's trained intent classifier (layer 2): a multinomial logistic regression over
the bundled MiniLM sentence embeddings, loaded once at router start.

MiniLM was chosen over word and character n-grams by measurement on templates held out of
training (README, "Router classifier"): 78-80% against 54-62%, since an embedding knows
that "paperwork" and "filings" are near and n-grams only know the words they saw. The
router already embeds with MiniLM for metric names (the ingest stage holds the model and
encodes on request: shared/embedding_service.py), so the classifier adds ~10 ms per question
it is asked about (only those rules are unsure of) and no load time of its own.

Artifacts are plain data, never pickles: `model.json` (classes, coefficients, intercepts,
the embedding model's name and dimension) and `metadata.json` (seed, sizes, accuracy).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

EMBEDDING_MODEL = "all-MiniLM-L6-v2"
VERSION = "v1"
ARTIFACTS_DIR = Path(__file__).resolve().parent / "artifacts" / "intent_classifier" / VERSION
MODEL_FILE = "model.json"
METADATA_FILE = "metadata.json"
# Weights are stored rounded: the same training writes the same bytes, and six decimals
# change no prediction.
DECIMALS = 6


class Embedder(Protocol):
    def encode(self, phrases: Sequence[str]) -> npt.NDArray[np.float32]: ...


@dataclass(frozen=True)
class IntentPrediction:
    intent: str
    probability: float
    runner_up: str
    runner_up_probability: float


class IntentClassifier:
    def __init__(
        self,
        classes: list[str],
        coef: npt.ArrayLike,
        intercept: npt.ArrayLike,
        embedder: Embedder,
    ) -> None:
        self.classes = list(classes)
        self.coef = np.round(np.asarray(coef, dtype=np.float64), DECIMALS)
        self.intercept = np.round(np.asarray(intercept, dtype=np.float64), DECIMALS)
        self.embedder = embedder

    @classmethod
    def load(cls, directory: Path, embedder: Embedder) -> IntentClassifier:
        model = json.loads((directory / MODEL_FILE).read_text())
        if model["embedding_model"] != EMBEDDING_MODEL:
            raise ValueError(f"{directory} was trained on {model['embedding_model']}")
        return cls(model["classes"], model["coef"], model["intercept"], embedder)

    def probabilities_of(self, embeddings: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        scores = np.asarray(embeddings, dtype=np.float64) @ self.coef.T + self.intercept
        scores -= scores.max(axis=1, keepdims=True)
        exp = np.exp(scores)
        return np.asarray(exp / exp.sum(axis=1, keepdims=True))

    def predict_many(self, questions: Sequence[str]) -> list[IntentPrediction]:
        predictions = []
        for row in self.probabilities_of(self.embedder.encode(questions)):
            first, second = np.argsort(row)[::-1][:2]
            predictions.append(
                IntentPrediction(
                    intent=self.classes[first],
                    probability=round(float(row[first]), 4),
                    runner_up=self.classes[second],
                    runner_up_probability=round(float(row[second]), 4),
                )
            )
        return predictions

    def predict(self, question: str) -> IntentPrediction:
        return self.predict_many([question])[0]

    def model_json(self) -> bytes:
        model: dict[str, Any] = {
            "embedding_model": EMBEDDING_MODEL,
            "dimension": int(self.coef.shape[1]),
            "classes": self.classes,
            "coef": [[round(float(x), DECIMALS) for x in row] for row in self.coef],
            "intercept": [round(float(x), DECIMALS) for x in self.intercept],
        }
        return json.dumps(model, sort_keys=True, separators=(",", ":")).encode()


def write_artifacts(
    classifier: IntentClassifier, directory: Path, metadata: dict[str, Any]
) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    model = classifier.model_json()
    (directory / MODEL_FILE).write_bytes(model)
    (directory / METADATA_FILE).write_text(
        json.dumps(
            {**metadata, "sha256": {MODEL_FILE: hashlib.sha256(model).hexdigest()}},
            indent=2,
            sort_keys=True,
        )
        + "\n"
    )
