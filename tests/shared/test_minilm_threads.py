"""MiniLM encodes a few short texts on one thread and batches on every core, and a text's
vector does not depend on which it was."""

from __future__ import annotations

import threading

import numpy as np
import torch

from shared.embeddings import FEW_CHARACTERS, MiniLMEmbedder

QUESTION = "What was Apple's revenue in fiscal 2023?"
PASSAGE = "Net sales rose on higher iPhone and Services sales, offset by lower Mac sales. " * 12


def threads_used(minilm: MiniLMEmbedder, texts: list[str]) -> int:
    """The thread count torch held while `texts` were encoded, read in the encoding thread
    (as the ingest stage encodes: in a worker thread)."""
    seen: list[int] = []

    def encode() -> None:
        minilm.encode(texts)
        seen.append(torch.get_num_threads())

    worker = threading.Thread(target=encode)
    worker.start()
    worker.join()
    return seen[0]


def test_a_question_is_encoded_on_one_thread_and_a_batch_of_passages_on_every_core(
    minilm: MiniLMEmbedder,
) -> None:
    passages = [PASSAGE] * 16
    assert sum(len(p) for p in passages) > FEW_CHARACTERS

    assert threads_used(minilm, [QUESTION]) == 1
    assert threads_used(minilm, passages) == minilm.batch_threads


def test_a_texts_vector_is_the_same_alone_on_one_thread_and_in_a_batch(
    minilm: MiniLMEmbedder,
) -> None:
    alone = minilm.encode([QUESTION])[0]
    batched = minilm.encode([QUESTION, *[PASSAGE] * 16])[0]

    assert float(np.dot(alone, batched)) > 0.9999
