"""all-MiniLM-L6-v2's forward pass on PyTorch alone: the model's BERT encoder, mean pooling
over the real tokens and L2 normalization, read from the bundled package's safetensors and
tokenizer.json.

sentence-transformers computes the same vectors, but importing it also imports transformers,
scikit-learn and SciPy: about 8 of the 10 CPU-seconds a process spent loading MiniLM (two
cores, 2026-11-28). Every stage that embeds paid that at each start and each restart. Here a
load is torch's import and 90 MB of weights. The vectors match sentence-transformers' to
cosine 1.0 (tests/shared/test_minilm.py compares them on catalog names, questions and filing
passages)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import torch

# sentence_bert_config.json's max_seq_length: longer texts are cut to their first 256
# tokens, as sentence-transformers cuts them.
MAX_TOKENS = 256


class MiniLMEncoder:
    """The encoder and its tokenizer, loaded from a sentence-transformers model folder."""

    def __init__(self, folder: Path) -> None:
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        self._torch = torch
        config = json.loads((folder / "config.json").read_text())
        self.heads: int = config["num_attention_heads"]
        self.layers: int = config["num_hidden_layers"]
        self.epsilon: float = config["layer_norm_eps"]
        self.dimensions: int = config["hidden_size"]
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"{folder}: MiniLMEncoder runs GELU only")
        weights = load_file(str(folder / "model.safetensors"))
        # Checkpoints are saved with or without the "bert." prefix.
        self.weights = {name.removeprefix("bert."): tensor for name, tensor in weights.items()}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()

    def _layer_norm(self, x: torch.Tensor, name: str) -> torch.Tensor:
        w = self.weights
        return self._torch.nn.functional.layer_norm(
            x, x.shape[-1:], w[f"{name}.weight"], w[f"{name}.bias"], self.epsilon
        )

    def _linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return self._torch.nn.functional.linear(
            x, self.weights[f"{name}.weight"], self.weights[f"{name}.bias"]
        )

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """BERT's last hidden states for a padded batch (`mask` 1 on real tokens)."""
        torch = self._torch
        functional = torch.nn.functional
        w = self.weights
        batch, length = ids.shape
        hidden = (
            functional.embedding(ids, w["embeddings.word_embeddings.weight"])
            + w["embeddings.position_embeddings.weight"][:length]
            # Every token is of the first (and only) segment.
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        hidden = self._layer_norm(hidden, "embeddings.LayerNorm")
        # Padding may not be attended to: -inf where the key is padding.
        blocked = torch.zeros((batch, 1, 1, length), dtype=hidden.dtype)
        blocked.masked_fill_(mask[:, None, None, :] == 0, torch.finfo(hidden.dtype).min)
        size = hidden.shape[-1] // self.heads

        def heads(x: torch.Tensor) -> torch.Tensor:
            return x.view(batch, length, self.heads, size).transpose(1, 2)

        for n in range(self.layers):
            layer = f"encoder.layer.{n}"
            attention = functional.scaled_dot_product_attention(
                heads(self._linear(hidden, f"{layer}.attention.self.query")),
                heads(self._linear(hidden, f"{layer}.attention.self.key")),
                heads(self._linear(hidden, f"{layer}.attention.self.value")),
                attn_mask=blocked,
                scale=1 / math.sqrt(size),
            )
            attention = attention.transpose(1, 2).reshape(batch, length, -1)
            hidden = self._layer_norm(
                self._linear(attention, f"{layer}.attention.output.dense") + hidden,
                f"{layer}.attention.output.LayerNorm",
            )
            inner = functional.gelu(self._linear(hidden, f"{layer}.intermediate.dense"))
            hidden = self._layer_norm(
                self._linear(inner, f"{layer}.output.dense") + hidden, f"{layer}.output.LayerNorm"
            )
        return hidden

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: bool = False
    ) -> npt.NDArray[np.float32]:
        """Unit vectors of `texts`: mean of the real tokens' last hidden states, in batches
        of texts of like length (less padding), returned in the order given. `progress`:
        a terminal's bar counting the batches."""
        torch = self._torch
        out = np.empty((len(texts), self.dimensions), "f4")
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda row: -len(encodings[row].ids))
        starts: Iterable[int] = range(0, len(order), batch_size)
        if progress:
            from tqdm import tqdm

            starts = tqdm(starts, desc="embedding", unit="batch")
        with torch.inference_mode():
            for start in starts:
                rows = order[start : start + batch_size]
                length = max(len(encodings[row].ids) for row in rows)
                ids = torch.zeros((len(rows), length), dtype=torch.long)
                mask = torch.zeros((len(rows), length), dtype=torch.long)
                for at, row in enumerate(rows):
                    tokens = encodings[row].ids
                    ids[at, : len(tokens)] = torch.tensor(tokens)
                    mask[at, : len(tokens)] = 1
                hidden = self._forward(ids, mask)
                weights = mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
                out[rows] = torch.nn.functional.normalize(pooled, dim=1).numpy()
        return out
