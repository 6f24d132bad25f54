"""Vectors shipped with finq for texts its authors wrote: every name and description in the
metric catalog, and every passage of the bundled glossary, embedded by MiniLM ahead of time.

Each process that builds the metric resolver or loads the glossary would otherwise embed the
same ~1,500 catalog texts (about 14 CPU-seconds on two cores) and load MiniLM to do it. A
router then waits on the ingest stage for vectors nobody's question changed.

The file maps the SHA-256 of each text to its vector, so a text that changed since the file
was written is simply not found and is embedded as before: a stale file costs time, never a
wrong vector. `finq train vectors` writes it anew; a test fails while any shipped text is
missing from it."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from shared.embeddings import Embedder

VECTORS_DIR = Path(__file__).resolve().parent / "artifacts" / "vectors"


def text_digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def vectors_path(model: str, directory: Path = VECTORS_DIR) -> Path:
    return directory / f"{model}.npz"


class StoredVectors:
    """The shipped vectors of one model, by the digest of their text."""

    def __init__(self, model: str, digests: Sequence[bytes], vectors: npt.NDArray[np.float32]):
        self.model = model
        self.dimensions = int(vectors.shape[1])
        self._rows = {digest: row for row, digest in enumerate(digests)}
        self._vectors = vectors

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, text: str) -> npt.NDArray[np.float32] | None:
        row = self._rows.get(text_digest(text))
        return None if row is None else self._vectors[row]

    @classmethod
    def read(cls, path: Path) -> StoredVectors:
        with np.load(path, allow_pickle=False) as stored:
            digests = [bytes(row) for row in stored["digests"]]
            return cls(str(stored["model"]), digests, np.asarray(stored["vectors"], np.float32))

    def write(self, path: Path) -> None:
        digests = np.frombuffer(b"".join(self._rows), dtype=np.uint8).reshape(-1, 32)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, model=np.array(self.model), digests=digests, vectors=self._vectors)


@functools.cache
def shipped_vectors(model: str, dimensions: int) -> StoredVectors | None:
    """The vectors shipped for `model`, read once per process; None when none are shipped
    (another provider, or a model of other dimensions under the same name)."""
    path = vectors_path(model)
    if not path.is_file():
        return None
    stored = StoredVectors.read(path)
    return stored if stored.model == model and stored.dimensions == dimensions else None


class WithStoredVectors:
    """An embedder answering the texts it has stored vectors for from them, and asking the
    one it wraps only for the rest (not at all when every text is stored, so a lazily
    loaded model is then never loaded)."""

    def __init__(self, embedder: Embedder, stored: StoredVectors) -> None:
        self.embedder = embedder
        self.stored = stored
        self.name = embedder.name
        self.dimensions = embedder.dimensions

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        found = [self.stored.get(text) for text in texts]
        missing = [row for row, vector in enumerate(found) if vector is None]
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        if missing:
            out[missing] = self.embedder.encode([texts[row] for row in missing], progress=progress)
        for row, vector in enumerate(found):
            if vector is not None:
                out[row] = vector
        return out


def with_stored_vectors(embedder: Embedder) -> Embedder:
    """`embedder`, answering shipped texts from their stored vectors when finq ships any for
    its model."""
    if isinstance(embedder, WithStoredVectors):
        return embedder
    stored = shipped_vectors(embedder.name, embedder.dimensions)
    return embedder if stored is None else WithStoredVectors(embedder, stored)


def embed_to_store(embedder: Embedder, texts: Sequence[str]) -> StoredVectors:
    """`texts` embedded by `embedder` (each once), as a store to write."""
    unique = list(dict.fromkeys(texts))
    vectors = np.asarray(embedder.encode(unique), dtype=np.float32)
    return StoredVectors(embedder.name, [text_digest(text) for text in unique], vectors)
