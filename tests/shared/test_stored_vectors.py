"""The vectors finq ships for its own texts: every catalog name and glossary passage is in the
file, each is what MiniLM gives today, and an embedder over them asks its model only for the
texts they lack, so neither the catalog nor the glossary loads a model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import asyncpg
import numpy as np
import numpy.typing as npt
import pytest

from services.control.commands import database_setup
from services.control.commands.train import shipped_texts
from shared import embeddings
from shared.embeddings import EmbeddingSettings, MiniLMEmbedder
from shared.metric_resolver import MetricResolver
from shared.stored_vectors import (
    StoredVectors,
    WithStoredVectors,
    embed_to_store,
    shipped_vectors,
    text_digest,
    with_stored_vectors,
)
from tests.conftest import Servers, own_database


class CountingModel:
    """A stand-in model whose vector of a text says which text it was, and which records
    every text it was asked for."""

    def __init__(self, name: str = MiniLMEmbedder.name, dimensions: int = 384) -> None:
        self.name = name
        self.dimensions = dimensions
        self.asked: list[str] = []

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        self.asked.extend(texts)
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, len(text) % self.dimensions] = 1.0
        return out


def shipped() -> StoredVectors:
    stored = shipped_vectors(MiniLMEmbedder.name, MiniLMEmbedder.dimensions)
    assert stored is not None, "no vectors shipped for MiniLM: run `finq train vectors`"
    return stored


def test_every_catalog_name_and_glossary_passage_has_a_shipped_vector() -> None:
    stored = shipped()
    texts = shipped_texts()

    missing = [text for text in texts if stored.get(text) is None]

    assert len(texts) > 1_500
    assert not missing, (
        f"{len(missing)} texts changed since the vectors were written, such as "
        f"{missing[:3]}: run `finq train vectors`"
    )


def test_the_shipped_vectors_are_what_minilm_gives_today(minilm: MiniLMEmbedder) -> None:
    texts = shipped_texts()
    # Names, descriptions and passages alike: every 40th text, the last one too.
    sample = [*texts[::40], texts[-1]]

    fresh = minilm.encode(sample)
    stored = np.stack([shipped().get(text) for text in sample])

    cosines = np.sum(fresh * stored, axis=1)
    assert cosines.min() >= 0.9999, sample[int(cosines.argmin())]


def test_an_embedder_over_stored_vectors_asks_its_model_only_for_the_rest_in_order() -> None:
    model = CountingModel()
    store = embed_to_store(CountingModel(), ["net sales", "gross margin"])
    embedder = WithStoredVectors(model, store)

    vectors = embedder.encode(["gross margin", "a question", "net sales", "another one"])

    assert model.asked == ["a question", "another one"]
    expected = CountingModel().encode(["gross margin", "a question", "net sales", "another one"])
    assert np.array_equal(vectors, expected)
    assert embedder.encode([]).shape == (0, 384)


def test_a_store_written_and_read_back_holds_the_same_vectors(tmp_path: Path) -> None:
    store = embed_to_store(CountingModel(), ["revenue", "revenue", "net income"])
    path = tmp_path / "model.npz"

    store.write(path)
    read = StoredVectors.read(path)

    assert (read.model, read.dimensions, len(read)) == (MiniLMEmbedder.name, 384, 2)
    for text in ("revenue", "net income"):
        assert np.array_equal(read.get(text), store.get(text))
    assert read.get("operating income") is None
    assert len(text_digest("revenue")) == 32


def test_another_models_embedder_is_left_as_it_is() -> None:
    other = CountingModel(name="text-embedding-3-small", dimensions=384)
    shorter = CountingModel(dimensions=256)

    assert with_stored_vectors(other) is other
    assert with_stored_vectors(shorter) is shorter
    wrapped = with_stored_vectors(CountingModel())
    assert isinstance(wrapped, WithStoredVectors)
    assert with_stored_vectors(wrapped) is wrapped


def test_the_catalog_resolver_embeds_nothing_its_shipped_vectors_hold() -> None:
    model = CountingModel()

    resolver = MetricResolver.from_catalog(embedder=model)

    assert model.asked == []
    assert len(resolver.embedding_texts) > 1_500


async def test_the_glossary_is_loaded_into_a_new_database_without_loading_a_model(
    servers: Servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_model(settings: EmbeddingSettings) -> None:
        raise AssertionError("the glossary loaded a model for vectors finq ships")

    monkeypatch.setattr(embeddings, "load_embedder", no_model)
    async with own_database(servers, "t_stored_vectors_glossary") as dsn:
        stored = await database_setup.load_glossary_documents(dsn)
        conn = await asyncpg.connect(dsn)
        try:
            chunks = await conn.fetchval(
                "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE d.collection = 'glossary' AND c.embedding IS NOT NULL"
            )
        finally:
            await conn.close()

    assert stored > 0 and chunks > 0
