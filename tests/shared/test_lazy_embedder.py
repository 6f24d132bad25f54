"""The ingest stage's embedder with preload off: nothing loads until the first request, and
requests arriving together load the model once."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt
import pytest

from shared import embeddings
from shared.embeddings import EmbeddingSettings, LazyEmbedder, MiniLMEmbedder, stage_embedder


class CountingModel:
    name = MiniLMEmbedder.name
    dimensions = 384

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        return np.ones((len(texts), self.dimensions), dtype=np.float32)


def test_a_lazy_embedder_names_its_model_before_loading_and_loads_once_for_many_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loads: list[str] = []
    gate = threading.Event()

    def load(settings: EmbeddingSettings) -> CountingModel:
        loads.append(settings.embedding_provider)
        gate.wait(5)  # every request arrives while the model is still loading
        return CountingModel()

    monkeypatch.setattr(embeddings, "load_embedder", load)
    embedder = stage_embedder(EmbeddingSettings(embedding_preload=False))
    assert isinstance(embedder, LazyEmbedder)
    assert (embedder.name, embedder.dimensions, loads) == (MiniLMEmbedder.name, 384, [])

    with ThreadPoolExecutor(4) as pool:
        results = [pool.submit(embedder.encode, [f"text {n}"]) for n in range(4)]
        gate.set()
        shapes = [future.result(timeout=10).shape for future in results]
    assert shapes == [(1, 384)] * 4
    assert loads == ["minilm"]


def test_with_preload_on_the_stage_embedder_is_loaded_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(embeddings, "load_embedder", lambda settings: CountingModel())
    assert isinstance(stage_embedder(EmbeddingSettings()), CountingModel)
